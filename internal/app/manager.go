package app

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	rayscheme "github.com/raygate/raygate/apis/scheme"
	"github.com/raygate/raygate/controllers/raycluster"
	"github.com/raygate/raygate/controllers/raycronjob"
	"github.com/raygate/raygate/controllers/rayjob"
	"github.com/raygate/raygate/controllers/rayservice"
	"github.com/raygate/raygate/internal/batchscheduler"
	"github.com/raygate/raygate/internal/cacheneeds"
	"github.com/raygate/raygate/internal/capabilities"
	"github.com/raygate/raygate/internal/metricsauth"
)

// NewManager builds the manager: caches, metrics, health and webhook servers, and every
// controller and webhook. It asks the API server once which optional APIs it serves
// (internal/capabilities); the cache and the controllers are set up from that answer and
// from what each controller declares it reads (CacheNeeds).
func NewManager(cfg *rest.Config, o Options) (ctrl.Manager, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	cfg = o.restConfig(cfg)
	scheme := rayscheme.New()
	scheduler, err := batchscheduler.New(o.BatchSchedulerName())
	if err != nil {
		return nil, err
	}
	caps, err := capabilities.ForConfig(cfg, podGroupKind(scheduler))
	if err != nil {
		return nil, err
	}
	reportMissingPodGroups(scheduler, caps)
	o.routeExposure = caps.Route && !o.IngressOnOpenShift
	ctrls, err := newControllerConfigs(cfg, o, caps, scheduler)
	if err != nil {
		return nil, err
	}
	needs, err := ctrls.cacheNeeds(scheme)
	if err != nil {
		return nil, err
	}
	metrics := metricsserver.Options{
		BindAddress:   o.MetricsAddr,
		SecureServing: o.SecureMetrics,
		CertDir:       o.MetricsCertDir,
		TLSOpts:       o.tlsOptions(),
	}
	if o.SecureMetrics {
		metrics.FilterProvider = metricsauth.Provider
	}
	mgrOpts := ctrl.Options{
		Scheme:                        scheme,
		Metrics:                       metrics,
		HealthProbeBindAddress:        o.ProbeAddr,
		LeaderElection:                o.LeaderElect,
		LeaderElectionID:              o.LeaderElectionID,
		LeaderElectionNamespace:       o.LeaderElectionNS,
		LeaderElectionReleaseOnCancel: true,
		LeaseDuration:                 &o.LeaseDuration,
		RenewDeadline:                 &o.RenewDeadline,
		RetryPeriod:                   &o.RetryPeriod,
		Cache:                         cacheOptions(o, needs),
		PprofBindAddress:              o.PprofAddr,
		Controller:                    config.Controller{SkipNameValidation: &o.SkipControllerNameValidation},
	}

	if o.EnableWebhooks {
		mgrOpts.WebhookServer = newDrainingServer(webhook.Options{
			Host:    o.WebhookHost,
			Port:    o.WebhookPort,
			CertDir: o.WebhookCertDir,
			TLSOpts: o.tlsOptions(),
		}, o.WebhookShutdownDrain)
	}
	base, err := ctrl.NewManager(cfg, mgrOpts)
	if err != nil {
		return nil, fmt.Errorf("creating manager: %w", err)
	}
	// Events go through raygate's bounded recorder, flushed when Start returns (events.go);
	// the controllers take their recorders from this manager.
	mgr, err := newEventsManager(base)
	if err != nil {
		return nil, err
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return nil, err
	}
	// Readiness waits for the webhook server: it fails until the serving certificate is
	// loaded and a local TLS handshake succeeds, so no replica takes admission traffic early.
	ready := healthz.Ping
	if o.EnableWebhooks {
		ready = mgr.GetWebhookServer().StartedChecker()
	}
	if err := mgr.AddReadyzCheck("readyz", ready); err != nil {
		return nil, err
	}
	if err := setupWebhooks(mgr, o); err != nil {
		return nil, err
	}
	var ctrlMetrics ControllerMetrics
	if !o.WebhooksOnly {
		if ctrlMetrics, err = setupControllers(mgr, ctrls); err != nil {
			return nil, err
		}
	}
	if err := registerMetrics(o, ctrlMetrics); err != nil {
		return nil, err
	}
	return mgr, nil
}

// setupControllers registers the controllers; it returns the metrics their reconcilers
// observe into.
func setupControllers(mgr ctrl.Manager, ctrls controllerConfigs) (ControllerMetrics, error) {
	var m ControllerMetrics
	var err error
	if m.Cluster, err = setupRayClusterController(mgr, ctrls.cluster); err != nil {
		return m, err
	}
	if m.Service, err = setupRayServiceController(mgr, ctrls.service); err != nil {
		return m, err
	}
	if m.Job, err = setupRayJobController(mgr, ctrls.job); err != nil {
		return m, err
	}
	return m, setupRayCronJobController(mgr, ctrls.cronJob)
}

// controllerConfigs are the controllers' configurations. They are built before the manager
// because the cache is set up from what the controllers declare they read with them.
type controllerConfigs struct {
	cluster raycluster.Config
	service rayservice.Config
	job     rayjob.Config
	cronJob *raycronjob.Config // nil: the RayCronJob gate is off
}

func newControllerConfigs(cfg *rest.Config, o Options, caps capabilities.Capabilities, scheduler batchscheduler.Scheduler) (controllerConfigs, error) {
	service, err := rayServiceConfig(cfg, o, caps)
	if err != nil {
		return controllerConfigs{}, err
	}
	job, err := rayJobConfig(cfg, o)
	if err != nil {
		return controllerConfigs{}, err
	}
	return controllerConfigs{cluster: rayClusterConfig(o, caps, scheduler), service: service, job: job, cronJob: rayCronJobConfig(o)}, nil
}

// cacheNeeds is the union of what the controllers declare.
func (c controllerConfigs) cacheNeeds(scheme *runtime.Scheme) (cacheneeds.Needs, error) {
	needs := []cacheneeds.Needs{raycluster.CacheNeeds(c.cluster), rayservice.CacheNeeds(c.service), rayjob.CacheNeeds(c.job)}
	if c.cronJob != nil {
		needs = append(needs, raycronjob.CacheNeeds(*c.cronJob))
	}
	return cacheneeds.Union(scheme, needs...)
}

// RESTConfig is how the operator reaches the API server: --kubeconfig, else
// controller-runtime's lookup ($KUBECONFIG, the in-cluster configuration, ~/.kube/config).
// Either way without a client-side rate limit unless --kube-api-qps sets one (restConfig).
func (o *Options) RESTConfig() (*rest.Config, error) {
	if o.Kubeconfig == "" {
		return ctrl.GetConfig()
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", o.Kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("--kubeconfig: %w", err)
	}
	if cfg.QPS == 0 {
		cfg.QPS = -1 // as controller-runtime's lookup: the API server's priority and fairness decides
	}
	return cfg, nil
}

// restConfig is cfg with the client-side limits of --kube-api-qps and --kube-api-burst; cfg
// itself when no rate is set.
func (o *Options) restConfig(cfg *rest.Config) *rest.Config {
	if o.KubeAPIQPS <= 0 {
		return cfg
	}
	c := rest.CopyConfig(cfg)
	c.QPS = float32(o.KubeAPIQPS)
	c.Burst = o.KubeAPIBurst
	if c.Burst == 0 {
		c.Burst = max(1, int(2*o.KubeAPIQPS))
	}
	c.RateLimiter = nil // built from QPS and Burst
	return c
}

// Run builds the manager and runs it until ctx is done.
func Run(ctx context.Context, cfg *rest.Config, o Options) error {
	mgr, err := NewManager(cfg, o)
	if err != nil {
		return err
	}
	return mgr.Start(ctx)
}
