package app

import (
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/raygate/raygate/controllers/raycluster"
	"github.com/raygate/raygate/internal/batchscheduler"
	"github.com/raygate/raygate/internal/capabilities"
	"github.com/raygate/raygate/internal/features"
)

// rayClusterConfig is the RayCluster controller's configuration.
func rayClusterConfig(o Options, caps capabilities.Capabilities, scheduler batchscheduler.Scheduler) raycluster.Config {
	return raycluster.Config{
		Gates:                    features.Default(),
		Limits:                   o.Limits(),
		Capabilities:             caps,
		IngressOnOpenShift:       o.IngressOnOpenShift,
		Scheduler:                scheduler,
		Pods:                     o.PodSettings(),
		RandomPodDelete:          o.RandomPodDelete,
		DisableGCSFTRedisCleanup: o.DisableGCSFTRedisCleanup,
		OperatorNamespace:        o.OperatorNamespace,
		TokenAuthentication:      o.TokenAuthentication,
		Ingress:                  o.IngressPolicy(),
		Concurrency:              o.ReconcileConcurrency,
	}
}

// setupRayClusterController registers the RayCluster controller; it returns the metrics
// registerMetrics registers.
func setupRayClusterController(mgr ctrl.Manager, cfg raycluster.Config) (*raycluster.Metrics, error) {
	r := raycluster.New(mgr, cfg)
	// The series come from this manager's cache while it leads and runs (served once
	// registered: --object-metrics).
	if err := mgr.Add(r.Metrics.Source(mgr.GetCache())); err != nil {
		return nil, err
	}
	return r.Metrics, r.SetupWithManager(mgr)
}
