package app

import (
	"context"
	"fmt"

	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	rayscheme "github.com/raygate/raygate/apis/scheme"
	"github.com/raygate/raygate/internal/metricsauth"
)

// NewManager builds the manager: caches, metrics, health and webhook servers, and every
// controller and webhook.
func NewManager(cfg *rest.Config, o Options) (ctrl.Manager, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	scheme := rayscheme.New()
	gatewayAPI, err := gatewayAPIServed(cfg)
	if err != nil {
		return nil, err
	}
	if gatewayAPI {
		if o.grpcRoutes, err = kindsServed(cfg, gwv1.GroupVersion.String(), "GRPCRoute"); err != nil {
			return nil, err
		}
	}
	if o.certManager, err = certManagerServed(cfg); err != nil {
		return nil, err
	}
	batch, err := discoverBatchScheduling(cfg, o)
	if err != nil {
		return nil, err
	}
	metrics := metricsserver.Options{
		BindAddress:   o.MetricsAddr,
		SecureServing: o.SecureMetrics,
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
		Cache:                         cacheOptions(o, gatewayAPI),
		PprofBindAddress:              o.PprofAddr,
		Controller:                    config.Controller{SkipNameValidation: &o.SkipControllerNameValidation},
	}
	batch.cacheOptions(&mgrOpts.Cache)

	if o.EnableWebhooks {
		mgrOpts.WebhookServer = newDrainingServer(webhook.NewServer(webhook.Options{
			Host:    o.WebhookHost,
			Port:    o.WebhookPort,
			CertDir: o.WebhookCertDir,
			TLSOpts: o.tlsOptions(),
		}), o.WebhookShutdownDrain)
	}
	base, err := ctrl.NewManager(cfg, mgrOpts)
	if err != nil {
		return nil, fmt.Errorf("creating manager: %w", err)
	}
	// Events go through raygate's bounded recorder, flushed when Start returns (events.go).
	mgr, err := newEventsManager(base)
	if err != nil {
		return nil, err
	}
	o.events = mgr.events
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
	o.batch = batch
	if err := setup(mgr, o); err != nil {
		return nil, err
	}
	return mgr, nil
}

// setup registers the webhooks and controllers, each from its own setup_*.go file.
func setup(mgr ctrl.Manager, o Options) error {
	phases := []func(ctrl.Manager, Options) error{setupWebhooks, setupRayClusterController, setupRayServiceController}
	if o.WebhooksOnly {
		phases = phases[:1]
	}
	for _, f := range phases {
		if err := f(mgr, o); err != nil {
			return err
		}
	}
	return nil
}

// Run builds the manager and runs it until ctx is done.
func Run(ctx context.Context, cfg *rest.Config, o Options) error {
	mgr, err := NewManager(cfg, o)
	if err != nil {
		return err
	}
	return mgr.Start(ctx)
}
