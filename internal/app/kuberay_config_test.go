package app

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/client-go/rest"

	"github.com/raygate/raygate/internal/dashboard"
	"github.com/raygate/raygate/internal/raypod"
)

// kubeRayConfigurationFields are the JSON fields of KubeRay v1.7's Configuration type
// (ray-operator/apis/config/v1alpha1/configuration_types.go), besides apiVersion and kind.
var kubeRayConfigurationFields = []string{
	"burst", "qps", "enableLeaderElection", "logStdoutEncoder", "probeAddr", "logFile", "logFileEncoder",
	"leaderElectionNamespace", "batchScheduler", "metricsAddr", "watchNamespace", "workerSidecarContainers",
	"headSidecarContainers", "defaultContainerEnvs", "defaultPodAnnotations", "defaultPodLabels",
	"reconcileConcurrency", "enableBatchScheduler", "useKubernetesProxy", "deleteRayJobAfterJobFinishes", "enableMetrics",
}

// everyField sets every field of the Configuration away from raygate's defaults.
const everyField = `apiVersion: config.ray.io/v1alpha1
kind: Configuration
burst: 300
qps: 150.5
enableLeaderElection: true
logStdoutEncoder: console
probeAddr: ":8082"
logFile: /var/log/kuberay/operator.log
logFileEncoder: console
leaderElectionNamespace: ops
batchScheduler: yunikorn
metricsAddr: ":8080"
watchNamespace: team-a, team-b
workerSidecarContainers:
- name: log-shipper
  image: fluent/fluent-bit:3.0
  resources:
    requests: {cpu: 50m}
headSidecarContainers:
- name: log-shipper
  image: fluent/fluent-bit:3.0
  args: ["--head"]
defaultContainerEnvs:
- name: RAY_enable_open_telemetry
  value: "1"
defaultPodAnnotations:
  prometheus.io/scrape: "true"
defaultPodLabels:
  cost-center: ml
reconcileConcurrency: 3
enableBatchScheduler: false
useKubernetesProxy: true
deleteRayJobAfterJobFinishes: true
enableMetrics: false
`

// equivalentFlags are the flags (KubeRay's names where raygate's differ) that set what
// everyField sets; the pod defaults and deleteRayJobAfterJobFinishes have no flag (the
// latter is an environment variable) and are set by hand.
var equivalentFlags = []string{
	"--burst=300", "--qps=150.5", "--enable-leader-election=true", "--log-stdout-encoder=console", "--health-probe-bind-address=:8082",
	"--log-file-path=/var/log/kuberay/operator.log", "--log-file-encoder=console", "--leader-election-namespace=ops",
	"--batch-scheduler=yunikorn", "--metrics-addr=:8080", "--watch-namespace=team-a,team-b", "--reconcile-concurrency=3",
	"--enable-batch-scheduler=false", "--use-kubernetes-proxy=true", "--enable-metrics=false",
}

func everyFieldDefaults() raypod.PodDefaults {
	return raypod.PodDefaults{
		WorkerSidecars: []corev1.Container{{Name: "log-shipper", Image: "fluent/fluent-bit:3.0",
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("50m")}}}},
		HeadSidecars: []corev1.Container{{Name: "log-shipper", Image: "fluent/fluent-bit:3.0", Args: []string{"--head"}}},
		Env:          []corev1.EnvVar{{Name: "RAY_enable_open_telemetry", Value: "1"}},
		Annotations:  map[string]string{"prometheus.io/scrape": "true"},
		Labels:       map[string]string{"cost-center": "ml"},
	}
}

// withConfig parses args, resolves them reading files from memory, and validates.
func withConfig(t *testing.T, files map[string]string, args ...string) (Options, []Notice, error) {
	t.Helper()
	o := DefaultOptions()
	fs := pflag.NewFlagSet("raygate", pflag.ContinueOnError)
	fs.SetOutput(&bytes.Buffer{})
	o.BindFlags(fs)
	if err := fs.Parse(KubeRayArgs(fs, args)); err != nil {
		t.Fatal(err)
	}
	notices, err := o.resolve(fs, func(name string) ([]byte, error) {
		if f, ok := files[name]; ok {
			return []byte(f), nil
		}
		return nil, os.ErrNotExist
	})
	if err == nil {
		err = o.Validate()
	}
	return o, notices, err
}

var optionsDiff = []cmp.Option{cmp.AllowUnexported(Options{}), cmp.Comparer(func(a, b kubeRayFlagValues) bool { return true })}

// A Configuration file setting every field of KubeRay's type gives the operator the same
// options, so the same start, as the equivalent flags.
func TestConfigFileEveryFieldMeansTheFlags(t *testing.T) {
	fromFile, notices, err := withConfig(t, map[string]string{"/etc/kuberay/config.yaml": everyField}, "--config=/etc/kuberay/config.yaml")
	if err != nil {
		t.Fatal(err)
	}
	fromFlags, _, err := withConfig(t, nil, equivalentFlags...)
	if err != nil {
		t.Fatal(err)
	}
	fromFlags.PodDefaults = everyFieldDefaults()
	fromFlags.RayJob.DeleteRayJobAfterJobFinishes = true
	fromFlags.ConfigFile = "/etc/kuberay/config.yaml"
	if d := cmp.Diff(fromFlags, fromFile, optionsDiff...); d != "" {
		t.Errorf("--config and the flags differ (-flags +file):\n%s", d)
	}
	// Every field was applied, and is one of KubeRay's.
	if len(notices) != 1 || !slices.Equal(noticeValue(notices[0], "fields").([]string), kubeRayConfigurationFields) {
		t.Errorf("notices %+v, want every field applied in order", notices)
	}
	// What the manager is built from follows.
	if got := fromFile.restConfig(&rest.Config{Host: "https://127.0.0.1:6443"}); got.QPS != 150.5 || got.Burst != 300 {
		t.Errorf("rest config QPS %v burst %d", got.QPS, got.Burst)
	}
	if s := fromFile.PodSettings(); !reflect.DeepEqual(s.Defaults, everyFieldDefaults()) || !reflect.DeepEqual(fromFile.Policy().PodSettings, s) {
		t.Errorf("pod settings %+v", s)
	}
	if r, pool, err := dashboardAccess(&rest.Config{Host: "https://127.0.0.1:6443"}, fromFile); err != nil || pool.HTTP == nil {
		t.Errorf("dashboards: %T %v", r, err)
	} else if _, ok := r.(*dashboard.APIServerProxy); !ok {
		t.Errorf("dashboards reached through %T, want the API server's proxy", r)
	}
	if fromFile.BatchSchedulerName() != "yunikorn" || fromFile.LeaderElectionNS != "ops" || fromFile.ObjectMetrics {
		t.Errorf("options %+v", fromFile)
	}
}

// The type read is exactly KubeRay's: the same JSON fields, each mapped to an option.
func TestConfigurationHasKubeRaysFields(t *testing.T) {
	var tags []string
	typ := reflect.TypeFor[kubeRayConfiguration]()
	for i := range typ.NumField() {
		tag, _, _ := strings.Cut(typ.Field(i).Tag.Get("json"), ",")
		if tag != "" {
			tags = append(tags, tag)
		}
	}
	if d := cmp.Diff(kubeRayConfigurationFields, tags); d != "" {
		t.Errorf("fields differ from KubeRay v1.7's (-KubeRay +raygate):\n%s", d)
	}
	var mapped []string
	for _, f := range (&kubeRayConfiguration{}).fields() {
		mapped = append(mapped, f.name)
	}
	if d := cmp.Diff(kubeRayConfigurationFields, mapped); d != "" {
		t.Errorf("fields mapped to options (-KubeRay +mapped):\n%s", d)
	}
}

// What KubeRay's chart renders into its ConfigMap by default reads as the same settings.
func TestKubeRayChartConfiguration(t *testing.T) {
	const chart = `apiVersion: config.ray.io/v1alpha1
kind: Configuration
enableLeaderElection: true
enableMetrics: true
reconcileConcurrency: 1
qps: 100
burst: 200
logStdoutEncoder: "json"
logFileEncoder: "json"
`
	o, _, err := withConfig(t, map[string]string{"c.yaml": chart}, "--config=c.yaml", "--feature-gates=RayServiceIncrementalUpgrade=true", "--webhook-port=9444")
	if err != nil {
		t.Fatal(err)
	}
	if !o.LeaderElect || !o.ObjectMetrics || o.ReconcileConcurrency != 1 || o.KubeAPIQPS != 100 || o.KubeAPIBurst != 200 || o.LogFormat != "json" || o.WebhookPort != 9444 {
		t.Errorf("options %+v", o)
	}
}

// Left out, or empty (KubeRay's defaulting treats "" and a zero reconcileConcurrency as
// unset), a field changes nothing: raygate's default or flag applies.
func TestConfigFileLeavesUnsetFieldsAlone(t *testing.T) {
	const sparse = "apiVersion: config.ray.io/v1alpha1\nkind: Configuration\nmetricsAddr: \"\"\nreconcileConcurrency: 0\nwatchNamespace: \"\"\n"
	o, _, err := withConfig(t, map[string]string{"c.yaml": sparse}, "--config=c.yaml", "--reconcile-concurrency=6", "--watch-namespaces=x")
	if err != nil {
		t.Fatal(err)
	}
	want := DefaultOptions()
	if o.MetricsAddr != want.MetricsAddr || o.ReconcileConcurrency != 6 || !slices.Equal(o.WatchNamespaces, []string{"x"}) || !o.ObjectMetrics {
		t.Errorf("options %+v", o)
	}
}

func TestConfigFileErrors(t *testing.T) {
	header := "apiVersion: config.ray.io/v1alpha1\nkind: Configuration\n"
	for _, tc := range []struct {
		name, file string
		args       []string
		want       string
	}{
		{name: "unknown field", file: header + "metricAddr: \":8080\"\n", want: `--config c.yaml: not a valid config.ray.io/v1alpha1 Configuration: unknown field "metricAddr"`},
		{name: "unknown field in a sidecar", file: header + "headSidecarContainers:\n- name: a\n  image: b\n  imagePullPolicyy: Always\n", want: `unknown field "headSidecarContainers[0].imagePullPolicyy"`},
		{name: "a field twice", file: header + "qps: 1\nqps: 2\n", want: `key "qps" already set in map`},
		{name: "wrong type", file: header + "burst: many\n", want: "not a valid config.ray.io/v1alpha1 Configuration"},
		{name: "another kind", file: "apiVersion: v1\nkind: ConfigMap\n", want: `apiVersion "v1", kind "ConfigMap": want apiVersion config.ray.io/v1alpha1, kind Configuration`},
		{name: "no kind", file: "qps: 1\n", want: `apiVersion "", kind ""`},
		{name: "negative concurrency", file: header + "reconcileConcurrency: -1\n", want: "reconcileConcurrency must not be negative"},
		{name: "a flag for a field the file sets", file: header + "metricsAddr: \":8080\"\nqps: 5\n", args: []string{"--metrics-addr=:9090", "--kube-api-qps=5"},
			want: "--config c.yaml sets what flags set too (--kube-api-qps and the file's qps, --metrics-addr and the file's metricsAddr)"},
		{name: "raygate's name of a field the file sets", file: header + "enableLeaderElection: true\n", args: []string{"--leader-elect"}, want: "--leader-elect and the file's enableLeaderElection"},
		{name: "no such file", want: "--config: file does not exist"},
		{name: "a sidecar named like raygate's", file: header + "headSidecarContainers:\n- name: autoscaler\n  image: x\n", want: `--config headSidecarContainers[0]: name "autoscaler" is a container raygate adds to Ray pods`},
		{name: "a label of raygate's", file: header + "defaultPodLabels:\n  ray.io/serve: \"true\"\n", want: `--config defaultPodLabels["ray.io/serve"]: keys under ray.io/ and raygate.ray.io/ are raygate's and KubeRay's own`},
		{name: "an invalid batch scheduler", file: header + "batchScheduler: slurm\n", want: `--batch-scheduler must be one of`},
		{name: "a log encoder raygate lacks", file: header + "logStdoutEncoder: text\n", want: `--log-format must be json or console, not "text"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			files := map[string]string{}
			if tc.file != "" {
				files["c.yaml"] = tc.file
			}
			_, _, err := withConfig(t, files, append([]string{"--config=c.yaml"}, tc.args...)...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want %q", err, tc.want)
			}
		})
	}
}

// The file is read from disk by Resolve.
func TestResolveReadsTheConfigFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(path, []byte(everyField), 0o600); err != nil {
		t.Fatal(err)
	}
	o := DefaultOptions()
	fs := pflag.NewFlagSet("raygate", pflag.ContinueOnError)
	o.BindFlags(fs)
	if err := fs.Parse([]string{"--config", path}); err != nil {
		t.Fatal(err)
	}
	if _, err := o.Resolve(fs); err != nil || o.KubeAPIQPS != 150.5 {
		t.Fatalf("Resolve: %v, qps %v", err, o.KubeAPIQPS)
	}
}
