package raycluster_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
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

// handedOut remembers every object a read without a deep copy (client.UnsafeDisableDeepCopy)
// gave the reconciler, and a copy of it as given: with the real informer cache such an object
// shares its maps and lists with the cache, so changing it would change the cache.
type handedOut struct {
	client.Client
	given []client.Object
	as    []client.Object
}

func (h *handedOut) keep(o client.Object) {
	h.given = append(h.given, o)
	h.as = append(h.as, o.DeepCopyObject().(client.Object))
}

func (h *handedOut) Get(ctx context.Context, k client.ObjectKey, o client.Object, opts ...client.GetOption) error {
	if err := h.Client.Get(ctx, k, o, opts...); err != nil {
		return err
	}
	var g client.GetOptions
	if g.ApplyOptions(opts); ptr.Deref(g.UnsafeDisableDeepCopy, false) {
		h.keep(o)
	}
	return nil
}

func (h *handedOut) List(ctx context.Context, l client.ObjectList, opts ...client.ListOption) error {
	if err := h.Client.List(ctx, l, opts...); err != nil {
		return err
	}
	var lo client.ListOptions
	if lo.ApplyOptions(opts); !ptr.Deref(lo.UnsafeDisableDeepCopy, false) {
		return nil
	}
	if pods, ok := l.(*corev1.PodList); ok {
		for i := range pods.Items {
			h.keep(&pods.Items[i])
		}
	}
	return nil
}

func (h *handedOut) changed() []string {
	var out []string
	for i, o := range h.given {
		if !equality.Semantic.DeepEqual(o, h.as[i]) {
			out = append(out, fmt.Sprintf("%T %s", o, o.GetName()))
		}
	}
	return out
}

// Every path that changes pods (bring-up, restamping a head built by another operator
// version, scaling down by name, Recreate on a spec change) leaves the listed pods, and the
// cluster it read, as they were read: both are the cache's own with the informer cache.
func TestReconcileNeverChangesListedPods(t *testing.T) {
	ctx := context.Background()
	rc := builders.RayCluster("demo", "ns").WorkerGroups(builders.WorkerGroup("workers", 2)).Obj()
	rc.Spec.UpgradeStrategy = &rayv1.RayClusterUpgradeStrategy{Type: ptr.To(rayv1.RayClusterRecreate)}
	h := &handedOut{Client: newStore(rc)}
	r := &raycluster.Reconciler{
		Client:       h,
		Expectations: expectations.New(time.Millisecond), Metrics: raycluster.NewMetrics(),
		Config: raycluster.Config{Recorder: events.NewFakeRecorder(1000), Gates: features.Static{}, Now: time.Now},
	}
	req := ctrl.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "demo"}}
	step := func(what string, change func(*rayv1.RayCluster, []corev1.Pod)) {
		t.Helper()
		cur := &rayv1.RayCluster{}
		if err := h.Client.Get(ctx, req.NamespacedName, cur); err != nil {
			t.Fatal(err)
		}
		var pods corev1.PodList
		if err := h.Client.List(ctx, &pods); err != nil {
			t.Fatal(err)
		}
		change(cur, pods.Items)
		time.Sleep(2 * time.Millisecond) // expectations expire
		for range 3 {
			if _, err := r.Reconcile(ctx, req); err != nil {
				t.Fatalf("%s: %v", what, err)
			}
		}
		if c := h.changed(); len(c) > 0 {
			t.Fatalf("%s: the pass changed objects it read without a copy %v", what, c)
		}
	}
	step("bring-up", func(*rayv1.RayCluster, []corev1.Pod) {})
	step("head from another operator version", func(_ *rayv1.RayCluster, pods []corev1.Pod) {
		for i := range pods {
			if pods[i].Labels[rayv1.NodeTypeLabelKey] == string(rayv1.HeadNode) {
				pods[i].Annotations[rayv1.KubeRayVersionKey] = "v0.0.1"
				if err := h.Update(ctx, &pods[i]); err != nil {
					t.Fatal(err)
				}
			}
		}
	})
	step("scale down by name", func(cur *rayv1.RayCluster, pods []corev1.Pod) {
		for i := range pods {
			if pods[i].Labels[rayv1.NodeTypeLabelKey] == string(rayv1.WorkerNode) {
				cur.Spec.WorkerGroupSpecs[0].Replicas = ptr.To[int32](1)
				cur.Spec.WorkerGroupSpecs[0].ScaleStrategy.WorkersToDelete = []string{pods[i].Name}
				break
			}
		}
		if err := h.Update(ctx, cur); err != nil {
			t.Fatal(err)
		}
	})
	step("Recreate on a spec change", func(cur *rayv1.RayCluster, _ []corev1.Pod) {
		cur.Spec.HeadGroupSpec.Template.Spec.Containers[0].Image = "rayproject/ray:2.53.0"
		if err := h.Update(ctx, cur); err != nil {
			t.Fatal(err)
		}
	})
	kinds := map[string]bool{}
	for _, o := range h.given {
		kinds[fmt.Sprintf("%T", o)] = true
	}
	for _, k := range []string{"*v1.Pod", "*v1.Service", "*v1.RayCluster"} {
		if !kinds[k] {
			t.Errorf("no %s was read without a deep copy; read: %v", k, kinds)
		}
	}
}

// A fault-tolerant cluster gets its Redis cleanup finalizer from the cluster read without a
// deep copy: the patch must change a copy.
func TestFinalizerPatchLeavesTheReadClusterAlone(t *testing.T) {
	ctx := context.Background()
	rc := builders.RayCluster("ft", "ns").Obj()
	rc.Spec.GcsFaultToleranceOptions = &rayv1.GcsFaultToleranceOptions{RedisAddress: "redis:6379"}
	h := &handedOut{Client: newStore(rc)}
	r := &raycluster.Reconciler{
		Client:       h,
		Expectations: expectations.New(time.Hour), Metrics: raycluster.NewMetrics(),
		Config: raycluster.Config{Recorder: events.NewFakeRecorder(100), Gates: features.Static{}, Now: time.Now},
	}
	if _, err := r.Reconcile(ctx, ctrl.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "ft"}}); err != nil {
		t.Fatal(err)
	}
	stored := &rayv1.RayCluster{}
	if err := h.Client.Get(ctx, client.ObjectKeyFromObject(rc), stored); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(stored.Finalizers, rayv1.GCSFTRedisCleanupFinalizer) {
		t.Fatalf("finalizer not added: %v", stored.Finalizers)
	}
	if c := h.changed(); len(c) > 0 {
		t.Fatalf("adding the finalizer changed objects read without a deep copy: %v", c)
	}
}
