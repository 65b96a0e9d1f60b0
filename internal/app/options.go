// Package app builds and runs the raygate manager from command-line options. cmd/raygate
// only parses flags and calls Run; tests and the local mode call Run in-process.
package app

import (
	"crypto/tls"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	utilfeature "k8s.io/apiserver/pkg/util/feature"

	"github.com/raygate/raygate/internal/batchscheduler"
	"github.com/raygate/raygate/internal/batchscheduler/volcano"
	"github.com/raygate/raygate/internal/dashboard"
	"github.com/raygate/raygate/internal/promgate"
	"github.com/raygate/raygate/internal/raypod"
	"github.com/raygate/raygate/internal/validation"
)

// Options are the manager's settings: one field per flag, then what the operator takes from
// its environment (Environment, read once by ReadEnvironment) and what only an in-process
// caller can set (InProcess). What the manager finds out from the API server is not here:
// see internal/capabilities.
type Options struct {
	MetricsAddr   string
	SecureMetrics bool
	// MetricsCertDir holds tls.crt and tls.key for the metrics endpoint (reloaded when they
	// change); empty: a self-signed certificate generated at start-up.
	MetricsCertDir   string
	ProbeAddr        string
	LeaderElect      bool
	LeaderElectionID string
	LeaderElectionNS string
	// LeaseDuration, RenewDeadline and RetryPeriod time the leader election (client-go's
	// defaults): a standby takes over a crashed leader's Lease after LeaseDuration at most
	// plus one RetryPeriod; a leader that cannot renew within RenewDeadline stops.
	LeaseDuration        time.Duration
	RenewDeadline        time.Duration
	RetryPeriod          time.Duration
	WatchNamespaces      []string
	EnableWebhooks       bool
	WebhookHost          string
	WebhookPort          int
	WebhookCertDir       string
	TLSMinVersion        string
	EnableHTTP2          bool
	LogLevel             string
	LogFormat            string
	ReconcileConcurrency int
	SyncPeriod           time.Duration
	// PprofAddr serves net/http/pprof (profiling for benchmarks and debugging); empty or
	// "0": off.
	PprofAddr string
	// DashboardURLTemplate, when set, locates each RayCluster's Ray dashboard by filling
	// {namespace} and {name} (e.g. an operator outside the cluster reaching dashboards
	// through a proxy). Empty: the head pod's IP and the dashboard port.
	DashboardURLTemplate string
	// PrometheusURL is where metric gates (UpgradePolicy) are queried ("": gated upgrades
	// wait). The admin's, never a tenant's.
	PrometheusURL string
	// MaxPodsPerGroup and MaxPodsPerCluster bound the pods one RayCluster (or a RayService's
	// cluster) may ask for: admission refuses more.
	MaxPodsPerGroup   int32
	MaxPodsPerCluster int32
	// AllowedGatewayClasses, AllowedServiceTypes and AllowedImageRegistries are the admin's
	// policy, enforced at admission; an empty list allows any.
	AllowedGatewayClasses  []string
	AllowedServiceTypes    []string
	AllowedImageRegistries []string
	// AllowedSharedGateways are the Gateways ("<namespace>/<name>", "<namespace>/*") a
	// RayService may attach its routes to (raygate.ray.io/gateway); empty: the feature is off.
	AllowedSharedGateways []string
	// AllowedIngressClasses, AllowedIngressHosts and AllowedIngressAnnotations are the admin's
	// policy for the dashboard Ingress of headGroupSpec.enableIngress (raypod.IngressPolicy):
	// "<namespace>/<class>", "<namespace>/<domain>" and annotation keys or prefixes. No
	// classes: no dashboard Ingress.
	AllowedIngressClasses     []string
	AllowedIngressHosts       []string
	AllowedIngressAnnotations []string
	// routeExposure: OpenShift Routes expose dashboards (discovered at start, not a flag).
	routeExposure bool
	// PodSecurityCheck is what admission does with the Pod Security of the pods raygate would
	// create: enforce, warn or off. PodSecurityExemptNamespaces are not checked.
	PodSecurityCheck            string
	PodSecurityExemptNamespaces []string
	// PodDryRun has the validating webhooks create the pods an object would get with
	// dryRun=All, so the API server answers for them at admission (internal/poddryrun).
	PodDryRun bool
	// BatchScheduler hands the pods of every RayCluster to a batch scheduler (volcano,
	// scheduler-plugins, kai-scheduler), as KubeRay's flag of the same name; empty: the
	// default scheduler. EnableBatchScheduler is KubeRay's deprecated way to say volcano.
	BatchScheduler       string
	EnableBatchScheduler bool
	// OperatorNamespace is the namespace raygate's pods run in; the head NetworkPolicies of
	// spec.networkPolicy admit them to the dashboard. Default: $POD_NAMESPACE (the chart sets
	// it from the downward API), else the pod's service account namespace (ReadEnvironment).
	OperatorNamespace string
	// TokenAuthentication lets RayClusters use authOptions.mode token: raygate then gets and
	// creates their token Secrets, which needs RBAC the default install does not grant
	// (Helm value tokenAuthentication.enabled). Off: admission refuses mode token and
	// raygate never reads or writes a Secret.
	TokenAuthentication bool
	// WebhookShutdownDrain is how long the webhook server keeps answering, unready and
	// closing each connection after its answer, between the stop signal and its shutdown.
	WebhookShutdownDrain time.Duration
	// ConfigFile is a KubeRay operator Configuration (config.ray.io/v1alpha1) whose fields
	// set these options (kuberay_config.go); empty: none.
	ConfigFile string
	// Kubeconfig is the kubeconfig file to use; empty: controller-runtime's lookup (the
	// KUBECONFIG variable, the in-cluster configuration, ~/.kube/config).
	Kubeconfig string
	// KubeAPIQPS and KubeAPIBurst limit the operator's requests to the API server on the
	// client side, as KubeRay's --qps and --burst. 0 QPS: no client-side limit
	// (controller-runtime's default: the API server's priority and fairness decides).
	KubeAPIQPS   float64
	KubeAPIBurst int
	// LogFile is a file the logs are written to as well (rotated at 500 MiB, 10 kept), in
	// LogFileFormat; empty: none. LogStacktraceLevel is the lowest level whose entries carry
	// a stack trace; empty: error entries, and only at debug level.
	LogFile            string
	LogFileFormat      string
	LogStacktraceLevel string
	// ObjectMetrics exports the metrics about RayClusters and RayServices (kuberay_* and
	// raygate_service_*), KubeRay's --enable-metrics; the controllers' and webhooks' own
	// metrics are always served.
	ObjectMetrics bool
	// DashboardAPIServerProxy reaches Ray dashboards and Serve proxies through the API
	// server's pods/proxy subresource instead of the head pod's IP, for operators that
	// cannot reach pods (KubeRay's --use-kubernetes-proxy). Needs RBAC on pods/proxy, which
	// the chart grants only with dashboardAPIServerProxy.
	DashboardAPIServerProxy bool
	// PodDefaults are the admin's sidecars, environment, labels and annotations for every
	// Ray pod; only a --config file sets them.
	PodDefaults raypod.PodDefaults

	Environment
	InProcess

	// kubeRay holds what KubeRay's flag names set that has no field above (kuberay_flags.go).
	kubeRay kubeRayFlagValues
	// envProblems are values of the environment ReadEnvironment could not read; Validate
	// reports them.
	envProblems []string
}

// InProcess are the settings a process running the manager in-process (tests, the local
// mode) may set; no flag or environment variable reaches them.
type InProcess struct {
	// DashboardResolver locates Ray dashboards; tests and the local mode inject simulators
	// here. Nil: built from DashboardURLTemplate, or the in-cluster resolver.
	DashboardResolver dashboard.Resolver
	// WebhooksOnly serves admission without running the controllers: suites about admission,
	// whose objects must stay exactly as admission left them.
	WebhooksOnly bool
	// SkipControllerNameValidation lets a process build managers more than once (controller
	// names are process-wide in controller-runtime): tests restarting the operator.
	SkipControllerNameValidation bool
	// RayCronJobClock is the RayCronJob controller's clock (nil: time.Now): suites move it
	// past a due time instead of waiting for it.
	RayCronJobClock func() time.Time
	// RayServiceDeployingPoll is how soon the RayService controller reads again a dashboard
	// whose applications are deploying (zero: its default, 1 s): suites whose simulated
	// deployments take a fraction of that look sooner instead of waiting for the next second.
	RayServiceDeployingPoll time.Duration
}

// DefaultOptions are the defaults of every flag, and of the environment when it sets nothing.
func DefaultOptions() Options {
	return Options{
		MetricsAddr:          ":8443",
		SecureMetrics:        true,
		ProbeAddr:            ":8081",
		LeaderElectionID:     "raygate.ray.io",
		LeaseDuration:        15 * time.Second,
		RenewDeadline:        10 * time.Second,
		RetryPeriod:          2 * time.Second,
		EnableWebhooks:       true,
		WebhookPort:          9443,
		WebhookCertDir:       "/tmp/k8s-webhook-server/serving-certs",
		WebhookShutdownDrain: 2 * time.Second,
		TLSMinVersion:        "1.2",
		LogLevel:             "info",
		LogFormat:            "json",
		ReconcileConcurrency: 4,
		SyncPeriod:           10 * time.Hour,
		LogFileFormat:        "json",
		ObjectMetrics:        true,
		MaxPodsPerGroup:      validation.DefaultMaxPodsPerGroup,
		MaxPodsPerCluster:    validation.DefaultMaxPodsPerCluster,
		AllowedServiceTypes:  []string{string(corev1.ServiceTypeClusterIP)},
		PodSecurityCheck:     string(validation.PodSecurityEnforce),
		PodDryRun:            true,
		Environment:          DefaultEnvironment(),
	}
}

// BindFlags registers every option, and --feature-gates, on fs.
func (o *Options) BindFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.MetricsAddr, "metrics-bind-address", o.MetricsAddr, "Address of the metrics endpoint; \"0\" turns it off.")
	fs.StringVar(&o.MetricsCertDir, "metrics-cert-dir", o.MetricsCertDir, "Directory with tls.crt and tls.key for the HTTPS metrics endpoint (the chart passes the webhook's cert-manager certificate, which names the metrics Service); reloaded when they change. Empty: a self-signed certificate generated at start-up.")
	fs.BoolVar(&o.SecureMetrics, "metrics-secure", o.SecureMetrics, "Serve metrics over HTTPS with Kubernetes authentication and authorization.")
	fs.StringVar(&o.ProbeAddr, "health-probe-bind-address", o.ProbeAddr, "Address of /healthz and /readyz.")
	fs.BoolVar(&o.LeaderElect, "leader-elect", o.LeaderElect, "Elect a leader so only one replica reconciles; every replica serves webhooks.")
	fs.StringVar(&o.LeaderElectionID, "leader-election-id", o.LeaderElectionID, "Name of the leader election Lease.")
	fs.StringVar(&o.LeaderElectionNS, "leader-election-namespace", o.LeaderElectionNS, "Namespace of the leader election Lease (default: the pod's namespace).")
	fs.DurationVar(&o.LeaseDuration, "leader-elect-lease-duration", o.LeaseDuration, "How long a standby waits after the leader's last renewal before it takes the Lease: the longest a crashed leader leaves nothing reconciled (plus one retry period).")
	fs.DurationVar(&o.RenewDeadline, "leader-elect-renew-deadline", o.RenewDeadline, "How long the leader keeps retrying to renew the Lease before it gives up leading and exits; below the lease duration.")
	fs.DurationVar(&o.RetryPeriod, "leader-elect-retry-period", o.RetryPeriod, "How often replicas try to acquire or renew the Lease; below the renew deadline.")
	fs.StringSliceVar(&o.WatchNamespaces, "watch-namespaces", o.WatchNamespaces, "Comma-separated namespaces to watch and cache; empty means all namespaces.")
	fs.BoolVar(&o.EnableWebhooks, "enable-webhooks", o.EnableWebhooks, "Serve the admission webhooks.")
	fs.StringVar(&o.PrometheusURL, "prometheus-url", o.PrometheusURL, "Prometheus HTTP API base URL (e.g. http://prometheus.monitoring:9090) that metric gates of UpgradePolicies query; empty: gated upgrades wait.")
	fs.StringVar(&o.WebhookHost, "webhook-host", o.WebhookHost, "Address the webhook server listens on (default: all).")
	fs.IntVar(&o.WebhookPort, "webhook-port", o.WebhookPort, "Port of the webhook server.")
	fs.StringVar(&o.WebhookCertDir, "webhook-cert-dir", o.WebhookCertDir, "Directory with tls.crt and tls.key for the webhook server; reloaded when they change.")
	fs.DurationVar(&o.WebhookShutdownDrain, "webhook-shutdown-drain", o.WebhookShutdownDrain, "After SIGTERM, how long the webhook server keeps answering while unready, closing each connection after its answer so the API server reconnects to another replica, before it shuts down; 0: shut down at once.")
	fs.StringVar(&o.TLSMinVersion, "tls-min-version", o.TLSMinVersion, "Minimum TLS version of the webhook and metrics servers: 1.2 or 1.3.")
	fs.BoolVar(&o.EnableHTTP2, "enable-http2", o.EnableHTTP2, "Allow HTTP/2 on the webhook and metrics servers (off: HTTP/2 rapid-reset and stream-cancellation attacks).")
	fs.StringVar(&o.LogLevel, "log-level", o.LogLevel, "Log level: debug, info, warn or error.")
	fs.StringVar(&o.LogFormat, "log-format", o.LogFormat, "Log format: json or console.")
	fs.IntVar(&o.ReconcileConcurrency, "reconcile-concurrency", o.ReconcileConcurrency, "Concurrent reconciles per controller.")
	fs.DurationVar(&o.SyncPeriod, "sync-period", o.SyncPeriod, "Period of a full resync of cached objects.")
	fs.StringVar(&o.PprofAddr, "pprof-bind-address", o.PprofAddr, "Address of the pprof endpoint (/debug/pprof/); empty or \"0\" turns it off. Do not expose it beyond localhost.")
	fs.StringVar(&o.DashboardURLTemplate, "dashboard-url-template", o.DashboardURLTemplate, "URL of a RayCluster's Ray dashboard with {namespace} and {name} placeholders; empty means the head pod's IP and the dashboard port.")
	fs.Int32Var(&o.MaxPodsPerGroup, "max-pods-per-group", o.MaxPodsPerGroup, "Most pods a RayCluster worker group may ask for (replicas × numOfHosts, and minReplicas × numOfHosts); admission refuses more.")
	fs.Int32Var(&o.MaxPodsPerCluster, "max-pods-per-cluster", o.MaxPodsPerCluster, "Most pods a RayCluster (or each cluster of a RayService) may ask for: the head plus every worker group; admission refuses more.")
	fs.StringSliceVar(&o.AllowedGatewayClasses, "allowed-gateway-classes", o.AllowedGatewayClasses, "GatewayClasses a RayService's incremental upgrade may use; empty: any.")
	fs.StringSliceVar(&o.AllowedServiceTypes, "allowed-service-types", o.AllowedServiceTypes, "Service types (ClusterIP, NodePort, LoadBalancer) headGroupSpec.serviceType, headGroupSpec.headService and serveService may ask for; empty: any.")
	fs.StringSliceVar(&o.AllowedImageRegistries, "allowed-image-registries", o.AllowedImageRegistries, "Registry hosts (docker.io, registry.example.com, localhost:5000) the images of Ray pods may come from; empty: any.")
	fs.StringSliceVar(&o.AllowedSharedGateways, "allowed-shared-gateways", o.AllowedSharedGateways, "Existing Gateways (<namespace>/<name> or <namespace>/*) a RayService may attach its HTTPRoute and GRPCRoute to with the raygate.ray.io/gateway annotation; raygate never writes them. Empty: the feature is off.")
	fs.StringSliceVar(&o.AllowedIngressClasses, "allowed-ingress-classes", o.AllowedIngressClasses, "IngressClasses the dashboard Ingress of headGroupSpec.enableIngress may have, as <namespace>/<class> (either may be *; <namespace>/* also allows the cluster's default class). Empty: no dashboard Ingress is allowed.")
	fs.StringSliceVar(&o.AllowedIngressHosts, "allowed-ingress-hosts", o.AllowedIngressHosts, "Hosts the dashboard Ingress may serve, as <namespace>/<domain>: the domain and every name under it (the namespace may be *, the domain may contain {namespace}; the domain * allows any host and a rule without a host).")
	fs.StringSliceVar(&o.AllowedIngressAnnotations, "allowed-ingress-annotations", o.AllowedIngressAnnotations, "RayCluster annotations copied to its dashboard Ingress: keys, or prefixes ending in * (alb.ingress.kubernetes.io/*). Snippet, auth, config, mirror and alias annotations are never copied. Empty: none.")
	fs.StringVar(&o.PodSecurityCheck, "pod-security-check", o.PodSecurityCheck, "Check the pods raygate would create against the namespace's Pod Security labels at admission: enforce (reject what the API server would refuse, warn for warn and audit), warn (only warn) or off.")
	fs.StringSliceVar(&o.PodSecurityExemptNamespaces, "pod-security-exempt-namespaces", o.PodSecurityExemptNamespaces, "Namespaces whose Pod Security admission does not check, e.g. those the API server's PodSecurity configuration exempts (raygate cannot read it).")
	fs.BoolVar(&o.PodDryRun, "pod-dry-run", o.PodDryRun, "At admission, create the pods raygate would create for an object with dryRun=All, so the API server's own rules (pod validation, LimitRanges, Pod Security as its admission configuration sets it, admission policies and webhooks on pods) refuse at kubectl apply what they would refuse at pod creation. Needs create on pods, which raygate has.")
	fs.StringVar(&o.BatchScheduler, "batch-scheduler", o.BatchScheduler, "Batch scheduler of RayCluster pods: "+strings.Join(batchscheduler.Names(), ", ")+"; empty: the default scheduler. With volcano and scheduler-plugins raygate creates the clusters' PodGroups, whose CRD must be installed before raygate starts.")
	fs.BoolVar(&o.EnableBatchScheduler, "enable-batch-scheduler", o.EnableBatchScheduler, "Deprecated: use --batch-scheduler=volcano.")
	_ = fs.MarkDeprecated("enable-batch-scheduler", "use --batch-scheduler=volcano")
	fs.StringVar(&o.OperatorNamespace, "operator-namespace", o.OperatorNamespace, "Namespace of raygate's pods, which spec.networkPolicy admits to Ray dashboards (default: $POD_NAMESPACE, else the service account's namespace).")
	fs.StringVar(&o.ConfigFile, "config", o.ConfigFile, "KubeRay operator Configuration file (apiVersion config.ray.io/v1alpha1, kind Configuration): its fields set the matching options; a flag for a setting the file sets is refused. The only way to give Ray pods the admin's sidecars, environment, labels and annotations.")
	fs.StringVar(&o.Kubeconfig, "kubeconfig", o.Kubeconfig, "Kubeconfig file; empty: $KUBECONFIG, the in-cluster configuration, or ~/.kube/config.")
	fs.Float64Var(&o.KubeAPIQPS, "kube-api-qps", o.KubeAPIQPS, "Requests per second the operator sends to the API server at most (client-side limit); 0: no client-side limit, the API server's priority and fairness decides.")
	fs.IntVar(&o.KubeAPIBurst, "kube-api-burst", o.KubeAPIBurst, "Requests the operator may send at once above --kube-api-qps; 0: twice the QPS.")
	fs.StringVar(&o.LogFile, "log-file", o.LogFile, "File the logs are also written to (rotated at 500 MiB, 10 old files kept); empty: none.")
	fs.StringVar(&o.LogFileFormat, "log-file-format", o.LogFileFormat, "Format of --log-file: json or console.")
	fs.StringVar(&o.LogStacktraceLevel, "log-stacktrace-level", o.LogStacktraceLevel, "Lowest level whose entries carry a stack trace: debug, info, warn or error; empty: error entries, and only with --log-level=debug.")
	fs.BoolVar(&o.ObjectMetrics, "object-metrics", o.ObjectMetrics, "Export the metrics about RayClusters and RayServices (kuberay_* and raygate_service_*); the controllers' and webhooks' own metrics are always served.")
	fs.BoolVar(&o.DashboardAPIServerProxy, "dashboard-api-server-proxy", o.DashboardAPIServerProxy, "Reach Ray dashboards and Serve proxies through the API server (pods/proxy) instead of the head pod's IP, when the operator cannot reach pods; needs get, create, update and delete on pods/proxy (Helm value dashboardAPIServerProxy).")
	fs.BoolVar(&o.TokenAuthentication, "token-authentication", o.TokenAuthentication, "Allow RayClusters and RayServices with authOptions.mode token; raygate then gets and creates their token Secrets, which needs RBAC on Secrets (Helm value tokenAuthentication.enabled). Off: admission refuses mode token.")
	utilfeature.DefaultMutableFeatureGate.AddFlag(fs)
	o.bindKubeRayFlags(fs)
}

// BatchSchedulerName is the batch scheduler in effect: --batch-scheduler, or volcano with
// the deprecated --enable-batch-scheduler.
func (o *Options) BatchSchedulerName() string {
	if o.EnableBatchScheduler && o.BatchScheduler == "" {
		return volcano.Name
	}
	return o.BatchScheduler
}

// Limits are the pod bounds for validation.
func (o *Options) Limits() validation.Limits {
	return validation.Limits{MaxPodsPerGroup: o.MaxPodsPerGroup, MaxPodsPerCluster: o.MaxPodsPerCluster}
}

// Policy is the admin's policy for validation.
func (o *Options) Policy() validation.Policy {
	types := make([]corev1.ServiceType, len(o.AllowedServiceTypes))
	for i, t := range o.AllowedServiceTypes {
		types[i] = corev1.ServiceType(t)
	}
	return validation.Policy{
		AllowedGatewayClasses:       o.AllowedGatewayClasses,
		AllowedServiceTypes:         types,
		AllowedImageRegistries:      o.AllowedImageRegistries,
		AllowedSharedGateways:       o.AllowedSharedGateways,
		Ingress:                     o.IngressPolicy(),
		PodSecurity:                 validation.PodSecurityMode(o.PodSecurityCheck),
		PodSecurityExemptNamespaces: o.PodSecurityExemptNamespaces,
		BatchScheduler:              o.BatchSchedulerName(),
		TokenAuthenticationOff:      !o.TokenAuthentication,
		PodSettings:                 o.PodSettings(),
	}
}

// IngressPolicy is the admin's policy for dashboard Ingresses.
func (o *Options) IngressPolicy() raypod.IngressPolicy {
	return raypod.IngressPolicy{Classes: o.AllowedIngressClasses, Hosts: o.AllowedIngressHosts, Annotations: o.AllowedIngressAnnotations, RouteInstead: o.routeExposure}
}

// validateClient checks the client-side limits: a burst without a rate limits nothing.
func (o *Options) validateClient() []string {
	var errs []string
	if o.KubeAPIQPS < 0 {
		errs = append(errs, fmt.Sprintf("--kube-api-qps must not be negative, not %g", o.KubeAPIQPS))
	}
	if o.KubeAPIBurst < 0 {
		errs = append(errs, fmt.Sprintf("--kube-api-burst must not be negative, not %d", o.KubeAPIBurst))
	}
	if o.KubeAPIBurst > 0 && o.KubeAPIQPS == 0 {
		errs = append(errs, "--kube-api-burst needs --kube-api-qps: without a rate there is no client-side limit to burst above")
	}
	return errs
}

// Validate checks option values that flags cannot type-check.
func (o *Options) Validate() error {
	var errs []string
	if _, err := o.tlsVersion(); err != nil {
		errs = append(errs, err.Error())
	}
	if o.ReconcileConcurrency < 1 {
		errs = append(errs, "--reconcile-concurrency must be at least 1")
	}
	if o.WebhookPort < 1 || o.WebhookPort > 65535 {
		errs = append(errs, fmt.Sprintf("--webhook-port must be 1-65535, not %d", o.WebhookPort))
	}
	if o.WebhookShutdownDrain < 0 || o.WebhookShutdownDrain > time.Minute {
		errs = append(errs, fmt.Sprintf("--webhook-shutdown-drain must be between 0 and 1m, not %s", o.WebhookShutdownDrain))
	}
	if o.MaxPodsPerGroup < 1 {
		errs = append(errs, fmt.Sprintf("--max-pods-per-group must be at least 1, not %d", o.MaxPodsPerGroup))
	}
	if o.MaxPodsPerCluster < 2 {
		errs = append(errs, fmt.Sprintf("--max-pods-per-cluster must be at least 2 (the head and a worker), not %d", o.MaxPodsPerCluster))
	}
	errs = append(errs, o.validateLeaderElection()...)
	errs = append(errs, o.validatePolicy()...)
	if !batchscheduler.Valid(o.BatchScheduler) {
		errs = append(errs, fmt.Sprintf("--batch-scheduler must be one of %s or empty, not %q", strings.Join(batchscheduler.Names(), ", "), o.BatchScheduler))
	}
	if o.EnableBatchScheduler && o.BatchScheduler != "" {
		errs = append(errs, "--enable-batch-scheduler (deprecated) and --batch-scheduler are both set; use --batch-scheduler only")
	}
	if o.DashboardURLTemplate != "" {
		if err := dashboard.ValidateTemplate(o.DashboardURLTemplate); err != nil {
			errs = append(errs, err.Error())
		}
	}
	if o.PrometheusURL != "" {
		if err := promgate.ValidateURL(o.PrometheusURL); err != nil {
			errs = append(errs, err.Error())
		}
	}
	if o.DashboardAPIServerProxy && o.DashboardURLTemplate != "" {
		errs = append(errs, "--dashboard-api-server-proxy and --dashboard-url-template both say where dashboards are; use one")
	}
	errs = append(errs, o.validateClient()...)
	errs = append(errs, o.validateLogging()...)
	errs = append(errs, validatePodDefaults(o.PodDefaults, o.AllowedImageRegistries)...)
	errs = append(errs, o.envProblems...)
	if len(errs) > 0 {
		return fmt.Errorf("invalid options: %s", strings.Join(errs, "; "))
	}
	return nil
}

// validateLeaderElection keeps the election's timing sound: client-go refuses a renew
// deadline not below the lease duration, and a leader must retry at least twice (with
// client-go's jitter of 1.2) before its deadline, or one slow request costs it the Lease.
func (o *Options) validateLeaderElection() []string {
	var errs []string
	for _, d := range []struct {
		flag string
		v    time.Duration
	}{{"--leader-elect-lease-duration", o.LeaseDuration}, {"--leader-elect-renew-deadline", o.RenewDeadline}, {"--leader-elect-retry-period", o.RetryPeriod}} {
		if d.v <= 0 {
			errs = append(errs, fmt.Sprintf("%s must be positive, not %s", d.flag, d.v))
		}
	}
	if len(errs) > 0 {
		return errs
	}
	if o.RenewDeadline >= o.LeaseDuration {
		errs = append(errs, fmt.Sprintf("--leader-elect-renew-deadline (%s) must be below --leader-elect-lease-duration (%s)", o.RenewDeadline, o.LeaseDuration))
	}
	if float64(o.RenewDeadline) <= 1.2*float64(o.RetryPeriod) {
		errs = append(errs, fmt.Sprintf("--leader-elect-renew-deadline (%s) must exceed 1.2 × --leader-elect-retry-period (%s)", o.RenewDeadline, o.RetryPeriod))
	}
	return errs
}

func (o *Options) validatePolicy() []string {
	var errs []string
	for _, t := range o.AllowedServiceTypes {
		switch corev1.ServiceType(t) {
		case corev1.ServiceTypeClusterIP, corev1.ServiceTypeNodePort, corev1.ServiceTypeLoadBalancer:
		default:
			errs = append(errs, fmt.Sprintf("--allowed-service-types: %q is not one of ClusterIP, NodePort, LoadBalancer (ExternalName is never allowed)", t))
		}
	}
	if len(o.AllowedServiceTypes) > 0 && !slices.Contains(o.AllowedServiceTypes, string(corev1.ServiceTypeClusterIP)) {
		errs = append(errs, "--allowed-service-types must include ClusterIP, the type raygate's Services have unless a spec asks for another")
	}
	for _, c := range o.AllowedGatewayClasses {
		if msgs := utilvalidation.IsDNS1123Subdomain(c); len(msgs) > 0 {
			errs = append(errs, fmt.Sprintf("--allowed-gateway-classes: %q: %s", c, strings.Join(msgs, "; ")))
		}
	}
	for _, g := range o.AllowedSharedGateways {
		if why := validation.ValidSharedGatewayEntry(g); why != "" {
			errs = append(errs, "--allowed-shared-gateways: "+why)
		}
	}
	for _, list := range []struct {
		flag    string
		entries []string
		check   func(string) string
	}{
		{"--allowed-ingress-classes", o.AllowedIngressClasses, raypod.ValidIngressClassEntry},
		{"--allowed-ingress-hosts", o.AllowedIngressHosts, raypod.ValidIngressHostEntry},
		{"--allowed-ingress-annotations", o.AllowedIngressAnnotations, raypod.ValidIngressAnnotationEntry},
	} {
		for _, e := range list.entries {
			if why := list.check(e); why != "" {
				errs = append(errs, list.flag+": "+why)
			}
		}
	}
	for _, r := range o.AllowedImageRegistries {
		if r == "" || strings.ContainsAny(r, "/ ") {
			errs = append(errs, fmt.Sprintf("--allowed-image-registries: %q is not a registry host (e.g. docker.io, registry.example.com:5000)", r))
		}
	}
	switch validation.PodSecurityMode(o.PodSecurityCheck) {
	case validation.PodSecurityEnforce, validation.PodSecurityWarn, validation.PodSecurityOff:
	default:
		errs = append(errs, fmt.Sprintf("--pod-security-check must be enforce, warn or off, not %q", o.PodSecurityCheck))
	}
	return errs
}

func (o *Options) tlsVersion() (uint16, error) {
	switch o.TLSMinVersion {
	case "1.2":
		return tls.VersionTLS12, nil
	case "1.3":
		return tls.VersionTLS13, nil
	default:
		return 0, fmt.Errorf("--tls-min-version must be 1.2 or 1.3, not %q", o.TLSMinVersion)
	}
}

// tlsOptions applies the TLS policy to the webhook and metrics servers.
func (o *Options) tlsOptions() []func(*tls.Config) {
	minVersion, _ := o.tlsVersion()
	opts := []func(*tls.Config){func(c *tls.Config) { c.MinVersion = minVersion }}
	if !o.EnableHTTP2 {
		opts = append(opts, func(c *tls.Config) { c.NextProtos = []string{"http/1.1"} })
	}
	return opts
}
