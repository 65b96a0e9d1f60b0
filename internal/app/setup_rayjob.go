package app

import (
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/raygate/raygate/controllers/rayjob"
	"github.com/raygate/raygate/internal/dashboard"
	"github.com/raygate/raygate/internal/features"
)

// rayJobConfig is the RayJob controller's configuration: KubeRay's environment variables
// (Environment.RayJob), the cluster domain of status.dashboardURL, and what the other
// controllers share (gates, limits, the dashboard resolver, token authentication).
func rayJobConfig(cfg *rest.Config, o Options) (rayjob.Config, error) {
	settings := o.RayJob
	settings.ClusterDomain = o.ClusterDomain
	resolver, dashboards, err := dashboardAccess(cfg, o)
	if err != nil {
		return rayjob.Config{}, err
	}
	return rayjob.Config{
		Settings: settings,
		Gates:    features.Default(),
		Limits:   o.Limits(),
		Resolver: resolver,
		// The Jobs API goes the way the Serve API does (the API server's proxy included).
		Dashboards:          dashboard.JobsPoolOptions{HTTP: dashboards.HTTP, Timeout: dashboards.Timeout},
		TokenAuthentication: o.TokenAuthentication,
		Concurrency:         o.ReconcileConcurrency,
	}, nil
}

// setupRayJobController registers the RayJob controller; it returns the metrics
// registerMetrics registers.
func setupRayJobController(mgr ctrl.Manager, cfg rayjob.Config) (*rayjob.Metrics, error) {
	r := rayjob.New(mgr, cfg)
	return r.Metrics, r.SetupWithManager(mgr)
}
