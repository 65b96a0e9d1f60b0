package app

import (
	"fmt"

	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/raygate/raygate/controllers/rayservice"
	"github.com/raygate/raygate/internal/capabilities"
	"github.com/raygate/raygate/internal/dashboard"
	"github.com/raygate/raygate/internal/features"
	"github.com/raygate/raygate/internal/promgate"
	"github.com/raygate/raygate/internal/version"
)

// rayServiceConfig is the RayService controller's configuration. cfg reaches the API server,
// through which --dashboard-api-server-proxy reaches dashboards.
func rayServiceConfig(cfg *rest.Config, o Options, caps capabilities.Capabilities) (rayservice.Config, error) {
	var prom *promgate.Client
	if o.PrometheusURL != "" {
		var err error
		if prom, err = promgate.New(o.PrometheusURL, promgate.Options{}); err != nil {
			return rayservice.Config{}, err
		}
	}
	resolver, dashboards, err := dashboardAccess(cfg, o)
	if err != nil {
		return rayservice.Config{}, err
	}
	return rayservice.Config{
		Capabilities: caps,
		Resolver:     resolver,
		Dashboards:   dashboards,
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
		DeployingPoll:       o.RayServiceDeployingPoll,
	}, nil
}

// setupRayServiceController registers the RayService controller; it returns the metrics
// registerMetrics registers.
func setupRayServiceController(mgr ctrl.Manager, cfg rayservice.Config) (*rayservice.Metrics, error) {
	r := rayservice.New(mgr, cfg)
	return r.Metrics, r.SetupWithManager(mgr)
}

// dashboardAccess is how the dashboards are reached: Options.DashboardResolver, else the
// API server's proxy (--dashboard-api-server-proxy, with an HTTP client carrying the
// operator's credentials to the API server only), else --dashboard-url-template, else the
// head pod's IP.
func dashboardAccess(cfg *rest.Config, o Options) (dashboard.Resolver, dashboard.PoolOptions, error) {
	switch {
	case o.DashboardResolver != nil:
		return o.DashboardResolver, dashboard.PoolOptions{}, nil
	case o.DashboardAPIServerProxy:
		proxy, client, err := dashboard.NewAPIServerProxy(cfg)
		if err != nil {
			return nil, dashboard.PoolOptions{}, fmt.Errorf("--dashboard-api-server-proxy: %w", err)
		}
		return proxy, dashboard.PoolOptions{HTTP: client, Timeout: dashboard.APIServerProxyTimeout}, nil
	case o.DashboardURLTemplate != "":
		return dashboard.TemplateResolver(o.DashboardURLTemplate), dashboard.PoolOptions{}, nil
	}
	return dashboard.PodResolver{}, dashboard.PoolOptions{}, nil
}
