package raycluster_test

import (
	"context"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/controllers/raycluster"
	"github.com/raygate/raygate/internal/expectations"
	"github.com/raygate/raygate/internal/features"
	"github.com/raygate/raygate/test/builders"
)

// inFlight counts the pod creates and deletes running at once; each takes a millisecond,
// like a round trip to the API server, so the calls of one batch overlap.
type inFlight struct {
	client.Client
	mu                  sync.Mutex
	creates, deletes    int
	peakCreate, peakDel int
}

func (c *inFlight) Create(ctx context.Context, obj client.Object, opts ...client.CreateOption) error {
	if _, ok := obj.(*corev1.Pod); !ok {
		return c.Client.Create(ctx, obj, opts...)
	}
	c.mu.Lock()
	c.creates++
	c.peakCreate = max(c.peakCreate, c.creates)
	c.mu.Unlock()
	time.Sleep(time.Millisecond)
	defer func() { c.mu.Lock(); c.creates--; c.mu.Unlock() }()
	return c.Client.Create(ctx, obj, opts...)
}

func (c *inFlight) Delete(ctx context.Context, obj client.Object, opts ...client.DeleteOption) error {
	if _, ok := obj.(*corev1.Pod); !ok {
		return c.Client.Delete(ctx, obj, opts...)
	}
	c.mu.Lock()
	c.deletes++
	c.peakDel = max(c.peakDel, c.deletes)
	c.mu.Unlock()
	time.Sleep(time.Millisecond)
	defer func() { c.mu.Lock(); c.deletes--; c.mu.Unlock() }()
	return c.Client.Delete(ctx, obj, opts...)
}

// A worker group scaled from 0 to the bound of one pass (500 creates) never has more than
// 64 pod creates in flight, and suspending the cluster never more than 64 deletes.
func TestPodWritesInFlightAreCapped(t *testing.T) {
	const limit = 64 // the documented cap (docs/admission.md)
	ctx := context.Background()
	rc := builders.RayCluster("big", "ns").WorkerGroups(builders.WorkerGroup("workers", 0)).Obj()
	store := &inFlight{Client: newStore(rc)}
	r := &raycluster.Reconciler{Client: store,
		Expectations: expectations.New(time.Hour), Metrics: raycluster.NewMetrics(),
		Config: raycluster.Config{Recorder: events.NewFakeRecorder(1000), Gates: features.Static{}, Now: time.Now},
	}
	req := ctrl.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "big"}}
	reconcile := func() {
		t.Helper()
		if _, err := r.Reconcile(ctx, req); err != nil {
			t.Fatal(err)
		}
	}
	update := func(change func(*rayv1.RayCluster)) {
		t.Helper()
		cur := &rayv1.RayCluster{}
		if err := store.Get(ctx, req.NamespacedName, cur); err != nil {
			t.Fatal(err)
		}
		change(cur)
		if err := store.Update(ctx, cur); err != nil {
			t.Fatal(err)
		}
	}
	countPods := func() int {
		var pods corev1.PodList
		if err := store.List(ctx, &pods, client.InNamespace("ns")); err != nil {
			t.Fatal(err)
		}
		return len(pods.Items)
	}

	reconcile() // the head
	update(func(c *rayv1.RayCluster) {
		c.Spec.WorkerGroupSpecs[0].Replicas, c.Spec.WorkerGroupSpecs[0].MaxReplicas = ptr.To[int32](500), ptr.To[int32](500)
	})
	reconcile()
	if n := countPods(); n != 501 {
		t.Fatalf("%d pods after the scale-up, want 501", n)
	}
	if store.peakCreate > limit {
		t.Errorf("%d pod creates in flight at once, over the cap of %d", store.peakCreate, limit)
	}

	update(func(c *rayv1.RayCluster) { c.Spec.Suspend = ptr.To(true) })
	for i := 0; i < 5 && countPods() > 0; i++ {
		reconcile()
	}
	if n := countPods(); n != 0 {
		t.Fatalf("%d pods left after the suspend", n)
	}
	if store.peakDel > limit {
		t.Errorf("%d pod deletes in flight at once, over the cap of %d", store.peakDel, limit)
	}
	t.Logf("peak in flight: %d creates, %d deletes", store.peakCreate, store.peakDel)
}
