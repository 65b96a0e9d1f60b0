package app

import (
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

// KubeRay's operator configuration file (--config), read the way raygate reads flags: each
// field the file sets sets the raygate option of the same meaning; a field it leaves out (or
// an empty string, or a zero reconcileConcurrency, which KubeRay's defaulting treats as
// unset) changes nothing, so raygate's default or flag applies. KubeRay ignores every flag
// but --feature-gates once --config is given and fills unset fields with its own defaults;
// raygate refuses a flag for a setting the file sets instead of choosing one silently.

// Configuration's group, version and kind, as KubeRay's operator reads them.
const (
	ConfigurationAPIVersion = "config.ray.io/v1alpha1"
	ConfigurationKind       = "Configuration"
)

// kubeRayConfiguration is KubeRay v1.7's Configuration type (ray-operator/apis/config/
// v1alpha1) with pointers, so that what the file leaves out can be told apart.
type kubeRayConfiguration struct {
	metav1.TypeMeta `json:",inline"`

	Burst                        *int               `json:"burst,omitempty"`
	QPS                          *float64           `json:"qps,omitempty"`
	EnableLeaderElection         *bool              `json:"enableLeaderElection,omitempty"`
	LogStdoutEncoder             string             `json:"logStdoutEncoder,omitempty"`
	ProbeAddr                    string             `json:"probeAddr,omitempty"`
	LogFile                      string             `json:"logFile,omitempty"`
	LogFileEncoder               string             `json:"logFileEncoder,omitempty"`
	LeaderElectionNamespace      string             `json:"leaderElectionNamespace,omitempty"`
	BatchScheduler               string             `json:"batchScheduler,omitempty"`
	MetricsAddr                  string             `json:"metricsAddr,omitempty"`
	WatchNamespace               string             `json:"watchNamespace,omitempty"`
	WorkerSidecarContainers      []corev1.Container `json:"workerSidecarContainers,omitempty"`
	HeadSidecarContainers        []corev1.Container `json:"headSidecarContainers,omitempty"`
	DefaultContainerEnvs         []corev1.EnvVar    `json:"defaultContainerEnvs,omitempty"`
	DefaultPodAnnotations        map[string]string  `json:"defaultPodAnnotations,omitempty"`
	DefaultPodLabels             map[string]string  `json:"defaultPodLabels,omitempty"`
	ReconcileConcurrency         int                `json:"reconcileConcurrency,omitempty"`
	EnableBatchScheduler         *bool              `json:"enableBatchScheduler,omitempty"`
	UseKubernetesProxy           *bool              `json:"useKubernetesProxy,omitempty"`
	DeleteRayJobAfterJobFinishes *bool              `json:"deleteRayJobAfterJobFinishes,omitempty"`
	EnableMetrics                *bool              `json:"enableMetrics,omitempty"`
}

// configField is a field of the file: whether the file sets it, the flags that set the same
// option, and how it sets it.
type configField struct {
	name  string
	set   bool
	flags []string
	apply func(o *Options)
}

// decodeConfiguration reads a Configuration strictly: an unknown or duplicated field, a
// value of the wrong type, or another kind is an error naming it.
func decodeConfiguration(data []byte) (*kubeRayConfiguration, error) {
	var c kubeRayConfiguration
	invalid := func(err error) error {
		msg := strings.TrimPrefix(err.Error(), "error converting YAML to JSON: ")
		msg = strings.ReplaceAll(msg, "Go struct field kubeRayConfiguration.", "field ")
		return fmt.Errorf("not a valid %s %s: %s", ConfigurationAPIVersion, ConfigurationKind, msg)
	}
	js, err := yaml.YAMLToJSONStrict(data) // a key given twice is an error
	if err != nil {
		return nil, invalid(err)
	}
	// Unknown fields are errors that name their path (headSidecarContainers[0].imagePullPolicyy).
	strict, err := kjson.UnmarshalStrict(js, &c)
	if err != nil {
		return nil, invalid(err)
	}
	if len(strict) > 0 {
		return nil, invalid(errors.Join(strict...))
	}
	if c.APIVersion != ConfigurationAPIVersion || c.Kind != ConfigurationKind {
		return nil, fmt.Errorf("apiVersion %q, kind %q: want apiVersion %s, kind %s (KubeRay's operator configuration)", c.APIVersion, c.Kind, ConfigurationAPIVersion, ConfigurationKind)
	}
	if c.ReconcileConcurrency < 0 {
		return nil, fmt.Errorf("reconcileConcurrency must not be negative, not %d", c.ReconcileConcurrency)
	}
	return &c, nil
}

// fields are the Configuration's fields with the options they set. Every field of KubeRay's
// type is here (a test checks it against the struct).
func (c *kubeRayConfiguration) fields() []configField {
	str := func(name, v string, to func(o *Options) *string, flags ...string) configField {
		return configField{name: name, set: v != "", flags: flags, apply: func(o *Options) { *to(o) = v }}
	}
	boolean := func(name string, v *bool, to func(o *Options) *bool, flags ...string) configField {
		return configField{name: name, set: v != nil, flags: flags, apply: func(o *Options) { *to(o) = *v }}
	}
	return []configField{
		{name: "burst", set: c.Burst != nil, flags: []string{"kube-api-burst", "burst"}, apply: func(o *Options) { o.KubeAPIBurst = *c.Burst }},
		{name: "qps", set: c.QPS != nil, flags: []string{"kube-api-qps", "qps"}, apply: func(o *Options) { o.KubeAPIQPS = *c.QPS }},
		boolean("enableLeaderElection", c.EnableLeaderElection, func(o *Options) *bool { return &o.LeaderElect }, "leader-elect", "enable-leader-election"),
		str("logStdoutEncoder", c.LogStdoutEncoder, func(o *Options) *string { return &o.LogFormat }, "log-format", "log-stdout-encoder", "zap-encoder"),
		str("probeAddr", c.ProbeAddr, func(o *Options) *string { return &o.ProbeAddr }, "health-probe-bind-address"),
		str("logFile", c.LogFile, func(o *Options) *string { return &o.LogFile }, "log-file", "log-file-path"),
		str("logFileEncoder", c.LogFileEncoder, func(o *Options) *string { return &o.LogFileFormat }, "log-file-format", "log-file-encoder"),
		str("leaderElectionNamespace", c.LeaderElectionNamespace, func(o *Options) *string { return &o.LeaderElectionNS }, "leader-election-namespace"),
		str("batchScheduler", c.BatchScheduler, func(o *Options) *string { return &o.BatchScheduler }, "batch-scheduler"),
		str("metricsAddr", c.MetricsAddr, func(o *Options) *string { return &o.MetricsAddr }, "metrics-bind-address", "metrics-addr"),
		{name: "watchNamespace", set: c.WatchNamespace != "", flags: []string{"watch-namespaces", "watch-namespace"}, apply: func(o *Options) {
			o.WatchNamespaces = splitNamespaces(c.WatchNamespace)
		}},
		{name: "workerSidecarContainers", set: c.WorkerSidecarContainers != nil, apply: func(o *Options) { o.PodDefaults.WorkerSidecars = c.WorkerSidecarContainers }},
		{name: "headSidecarContainers", set: c.HeadSidecarContainers != nil, apply: func(o *Options) { o.PodDefaults.HeadSidecars = c.HeadSidecarContainers }},
		{name: "defaultContainerEnvs", set: c.DefaultContainerEnvs != nil, apply: func(o *Options) { o.PodDefaults.Env = c.DefaultContainerEnvs }},
		{name: "defaultPodAnnotations", set: c.DefaultPodAnnotations != nil, apply: func(o *Options) { o.PodDefaults.Annotations = c.DefaultPodAnnotations }},
		{name: "defaultPodLabels", set: c.DefaultPodLabels != nil, apply: func(o *Options) { o.PodDefaults.Labels = c.DefaultPodLabels }},
		{name: "reconcileConcurrency", set: c.ReconcileConcurrency != 0, flags: []string{"reconcile-concurrency"}, apply: func(o *Options) { o.ReconcileConcurrency = c.ReconcileConcurrency }},
		boolean("enableBatchScheduler", c.EnableBatchScheduler, func(o *Options) *bool { return &o.EnableBatchScheduler }, "enable-batch-scheduler"),
		boolean("useKubernetesProxy", c.UseKubernetesProxy, func(o *Options) *bool { return &o.DashboardAPIServerProxy }, "dashboard-api-server-proxy", "use-kubernetes-proxy"),
		boolean("deleteRayJobAfterJobFinishes", c.DeleteRayJobAfterJobFinishes, func(o *Options) *bool { return &o.RayJob.DeleteRayJobAfterJobFinishes }),
		boolean("enableMetrics", c.EnableMetrics, func(o *Options) *bool { return &o.ObjectMetrics }, "object-metrics", "enable-metrics"),
	}
}

// splitNamespaces reads KubeRay's comma-separated watchNamespace.
func splitNamespaces(v string) []string {
	var out []string
	for _, ns := range strings.Split(v, ",") {
		if ns = strings.TrimSpace(ns); ns != "" {
			out = append(out, ns)
		}
	}
	return out
}
