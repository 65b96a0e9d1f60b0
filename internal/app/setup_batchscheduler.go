package app

import (
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	"github.com/raygate/raygate/internal/batchscheduler"
)

// batchScheduling is the --batch-scheduler integration and whether the API server served its
// PodGroup kind when raygate started.
type batchScheduling struct {
	scheduler batchscheduler.Scheduler // nil: off
	installed bool
}

// discoverBatchScheduling resolves --batch-scheduler and looks for its PodGroup CRD. A
// missing CRD is not fatal: the clusters report it (the operator keeps serving the others).
func discoverBatchScheduling(cfg *rest.Config, o Options) (batchScheduling, error) {
	s, err := batchscheduler.New(o.BatchSchedulerName())
	if err != nil || s == nil {
		return batchScheduling{}, err
	}
	gvk := s.PodGroupKind()
	if gvk.Empty() {
		return batchScheduling{scheduler: s}, nil
	}
	served, err := kindServed(cfg, gvk)
	if err != nil {
		return batchScheduling{}, err
	}
	if !served {
		ctrl.Log.Error(nil, "the batch scheduler's PodGroup CRD is not installed: RayClusters get no pods until it is installed and raygate restarted",
			"batchScheduler", s.Name(), "crd", batchscheduler.PodGroupResource(gvk))
	}
	return batchScheduling{scheduler: s, installed: served}, nil
}

// kindServed reports whether the API server serves a kind.
func kindServed(cfg *rest.Config, gvk schema.GroupVersionKind) (bool, error) {
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return false, err
	}
	list, err := dc.ServerResourcesForGroupVersion(gvk.GroupVersion().String())
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("discovering %s: %w", gvk.GroupVersion(), err)
	}
	for _, r := range list.APIResources {
		if r.Kind == gvk.Kind {
			return true, nil
		}
	}
	return false, nil
}

// cacheOptions adds the PodGroups raygate created (and only those) to the cache.
func (b batchScheduling) cacheOptions(opts *cache.Options) {
	if b.scheduler == nil || !b.installed {
		return
	}
	pg := &unstructured.Unstructured{}
	pg.SetGroupVersionKind(b.scheduler.PodGroupKind())
	opts.ByObject[pg] = cache.ByObject{Label: createdBySelector()}
}

// syncer is what the RayCluster controller calls, nil when --batch-scheduler is off.
func (b batchScheduling) syncer(mgr ctrl.Manager) *batchscheduler.Syncer {
	if b.scheduler == nil {
		return nil
	}
	return &batchscheduler.Syncer{
		Scheduler: b.scheduler,
		Client:    mgr.GetClient(),
		Reader:    mgr.GetCache(),
		APIReader: mgr.GetAPIReader(),
		Installed: b.installed,
	}
}
