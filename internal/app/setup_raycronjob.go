package app

import (
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/raygate/raygate/controllers/raycronjob"
	"github.com/raygate/raygate/internal/features"
)

// rayCronJobConfig is the RayCronJob controller's configuration, or nil when the RayCronJob
// gate is off: then the controller is not started (as KubeRay) and its RayCronJobs are not
// cached.
func rayCronJobConfig(o Options) *raycronjob.Config {
	if !features.Enabled(features.RayCronJob) {
		return nil
	}
	return &raycronjob.Config{
		Gates:       features.Default(),
		Limits:      o.Limits(),
		Concurrency: o.ReconcileConcurrency,
		Now:         o.RayCronJobClock,
	}
}

// setupRayCronJobController registers the RayCronJob controller when its gate is on.
func setupRayCronJobController(mgr ctrl.Manager, cfg *raycronjob.Config) error {
	if cfg == nil {
		ctrl.Log.WithName("setup").Info("RayCronJob feature gate is disabled, not starting the RayCronJob controller")
		return nil
	}
	return raycronjob.New(mgr, *cfg).SetupWithManager(mgr)
}
