package app

import (
	"context"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/raygate/raygate/controllers/raycluster"
)

// setupRayClusterController registers the RayCluster controller and its metrics.
func setupRayClusterController(mgr ctrl.Manager, o Options) error {
	r := raycluster.NewReconciler(mgr.GetClient(), o.events.Recorder("raycluster-controller"))
	r.APIReader = mgr.GetAPIReader()
	r.Limits = o.Limits()
	r.BatchScheduler = o.batch.syncer(mgr)
	r.OperatorNamespace = o.OperatorNamespace
	r.TokenAuthentication = o.TokenAuthentication
	r.CertManager = o.certManager
	r.CertReader = mgr.GetCache()
	if err := r.Metrics.Register(metrics.Registry, mgr.GetCache(), mgr.Elected()); err != nil {
		return err
	}
	return r.SetupWithManager(context.Background(), mgr, o.ReconcileConcurrency)
}
