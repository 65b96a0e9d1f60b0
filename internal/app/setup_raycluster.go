package app

import (
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

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

// setupRayClusterController registers the RayCluster controller and, with objectMetrics
// (--object-metrics), its metrics.
func setupRayClusterController(mgr ctrl.Manager, cfg raycluster.Config, objectMetrics bool) error {
	r := raycluster.New(mgr, cfg)
	if objectMetrics {
		if err := r.Metrics.Register(metrics.Registry); err != nil {
			return err
		}
		// The series come from this manager's cache while it leads and runs.
		if err := mgr.Add(r.Metrics.Source(mgr.GetCache())); err != nil {
			return err
		}
	}
	return r.SetupWithManager(mgr)
}
