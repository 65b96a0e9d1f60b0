package app

import (
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/raygate/raygate/controllers/rayservice"
	"github.com/raygate/raygate/internal/capabilities"
	"github.com/raygate/raygate/internal/dashboard"
	"github.com/raygate/raygate/internal/features"
	"github.com/raygate/raygate/internal/promgate"
	"github.com/raygate/raygate/internal/version"
)

// rayServiceConfig is the RayService controller's configuration.
func rayServiceConfig(o Options, caps capabilities.Capabilities) (rayservice.Config, error) {
	var prom *promgate.Client
	if o.PrometheusURL != "" {
		var err error
		if prom, err = promgate.New(o.PrometheusURL, promgate.Options{}); err != nil {
			return rayservice.Config{}, err
		}
	}
	return rayservice.Config{
		Capabilities: caps,
		Resolver:     dashboardResolver(o),
		Gates:        features.Default(),
		Limits:       o.Limits(),
		Version:      version.Version,
		// Without it raygate may not read Secrets, so it sends no token.
		TokenAuthentication: o.TokenAuthentication,
		SharedGateways:      o.AllowedSharedGateways,
		// Metric gates query the admin's Prometheus (nil without --prometheus-url).
		Prometheus:          prom,
		DisableZeroDowntime: o.DisableZeroDowntime,
		Concurrency:         o.ReconcileConcurrency,
	}, nil
}

// setupRayServiceController registers the RayService controller and its metrics.
func setupRayServiceController(mgr ctrl.Manager, cfg rayservice.Config) error {
	r := rayservice.New(mgr, cfg)
	if err := r.Metrics.Register(metrics.Registry); err != nil {
		return err
	}
	return r.SetupWithManager(mgr)
}

// dashboardResolver is Options.DashboardResolver, else --dashboard-url-template, else the
// head pod's IP.
func dashboardResolver(o Options) dashboard.Resolver {
	switch {
	case o.DashboardResolver != nil:
		return o.DashboardResolver
	case o.DashboardURLTemplate != "":
		return dashboard.TemplateResolver(o.DashboardURLTemplate)
	}
	return dashboard.PodResolver{}
}
