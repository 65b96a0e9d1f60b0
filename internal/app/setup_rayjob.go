package app

import (
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/raygate/raygate/controllers/rayjob"
	"github.com/raygate/raygate/internal/features"
)

// rayJobConfig is the RayJob controller's configuration: KubeRay's environment variables
// (Environment.RayJob), the cluster domain of status.dashboardURL, and what the other
// controllers share (gates, limits, the dashboard resolver, token authentication).
func rayJobConfig(o Options) rayjob.Config {
	settings := o.Environment.RayJob
	settings.ClusterDomain = o.ClusterDomain
	return rayjob.Config{
		Settings:            settings,
		Gates:               features.Default(),
		Limits:              o.Limits(),
		Resolver:            dashboardResolver(o),
		TokenAuthentication: o.TokenAuthentication,
		Concurrency:         o.ReconcileConcurrency,
	}
}

// setupRayJobController registers the RayJob controller and its metrics.
func setupRayJobController(mgr ctrl.Manager, cfg rayjob.Config) error {
	r := rayjob.New(mgr, cfg)
	if err := r.Metrics.Register(metrics.Registry); err != nil {
		return err
	}
	return r.SetupWithManager(mgr)
}
