package headaccess

import (
	"context"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
)

// Queue is a controller's work queue, known once the controller starts: a dashboard pool's
// word that a request ended puts the owner back in it. The zero value is ready.
type Queue struct {
	q atomic.Pointer[workqueue.TypedRateLimitingInterface[reconcile.Request]]
}

// Source hands the controller's queue to the Queue (WatchesRawSource).
func (r *Queue) Source() source.Source {
	return source.Func(func(_ context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
		r.q.Store(&q)
		return nil
	})
}

// Add puts owner in the queue; before the controller started nothing is waiting for it.
func (r *Queue) Add(owner types.NamespacedName) {
	if q := r.q.Load(); q != nil {
		(*q).Add(reconcile.Request{NamespacedName: owner})
	}
}

// Setup adds a controller's dashboard pool to the manager (it runs on the leader) and returns
// the informer's store of RayClusters, read without a copy to map pod and Service events to
// their owners: a Get from the cache deep-copies the whole RayCluster (its pod templates)
// only to read a few labels. The store is nil when the cache's informer has none; the caller
// then reads through the client. Objects in it are shared with the informer: read, never
// modified.
func Setup(mgr ctrl.Manager, pool manager.Runnable) (toolscache.Store, error) {
	if err := mgr.Add(pool); err != nil {
		return nil, err
	}
	inf, err := mgr.GetCache().GetInformer(context.Background(), &rayv1.RayCluster{})
	if err != nil {
		return nil, err
	}
	if sii, ok := inf.(toolscache.SharedIndexInformer); ok {
		return sii.GetStore(), nil
	}
	return nil, nil
}
