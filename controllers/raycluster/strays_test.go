package raycluster_test

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/controllers/raycluster"
	"github.com/raygate/raygate/internal/expectations"
	"github.com/raygate/raygate/internal/features"
	"github.com/raygate/raygate/internal/testenv/framework"
	"github.com/raygate/raygate/test/builders"
)

// foreignPod is a pod someone else created with a cluster's labels: no controller
// reference to the cluster (owner nil), or one to another object.
func foreignPod(name, nodeType string, owner *metav1.OwnerReference) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID(name + "-uid"), Labels: map[string]string{
			rayv1.ClusterLabelKey: "victim", rayv1.NodeTypeLabelKey: nodeType, rayv1.NodeGroupLabelKey: "workers",
			rayv1.IsRayNodeLabelKey: "yes", rayv1.KubernetesCreatedByLabelKey: rayv1.ComponentName,
		}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "ray-worker", Image: "rayproject/ray:2.52.0"}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{
			{Type: corev1.PodReady, Status: corev1.ConditionTrue}}},
	}
	if nodeType == string(rayv1.HeadNode) {
		delete(p.Labels, rayv1.NodeGroupLabelKey)
	}
	if owner != nil {
		p.OwnerReferences = []metav1.OwnerReference{*owner}
	}
	return p
}

// A pod carrying a RayCluster's labels that the cluster does not control is neither counted
// (the cluster still gets its own head and worker) nor deleted (by suspend's delete-all or
// by scale-down), and is reported once.
func TestForeignPodsAreNeitherCountedNorDeleted(t *testing.T) {
	ctx := context.Background()
	rc := builders.RayCluster("victim", "ns").WorkerGroups(builders.WorkerGroup("workers", 1)).Obj()
	rc.UID = "victim-uid"
	otherOwner := &metav1.OwnerReference{APIVersion: "ray.io/v1", Kind: rayv1.RayClusterKind, Name: "victim", UID: "another-uid", Controller: ptr.To(true)}
	notController := &metav1.OwnerReference{APIVersion: "ray.io/v1", Kind: rayv1.RayClusterKind, Name: "victim", UID: "victim-uid"}
	foreign := []*corev1.Pod{
		foreignPod("tenant-head", string(rayv1.HeadNode), nil),
		foreignPod("tenant-worker", string(rayv1.WorkerNode), nil),
		foreignPod("tenant-worker-other-owner", string(rayv1.WorkerNode), otherOwner),
		foreignPod("tenant-worker-not-controller", string(rayv1.WorkerNode), notController),
	}
	store := framework.NewCountingClient(newStore(rc, foreign[0], foreign[1], foreign[2], foreign[3]))
	rec := events.NewFakeRecorder(100)
	r := &raycluster.Reconciler{Client: store,
		Expectations: expectations.New(time.Hour), Metrics: raycluster.NewMetrics(),
		Config: raycluster.Config{Recorder: rec, Gates: features.Static{}, Now: time.Now},
	}
	req := ctrl.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "victim"}}
	reconcile := func(times int) {
		t.Helper()
		for range times {
			if _, err := r.Reconcile(ctx, req); err != nil {
				t.Fatal(err)
			}
		}
	}
	foreignReports := func() int {
		n := 0
		for {
			select {
			case e := <-rec.Events:
				if strings.Contains(e, raycluster.EventForeignPods) {
					n++
				}
			default:
				return n
			}
		}
	}
	stillThere := func(when string) {
		t.Helper()
		for _, p := range foreign {
			if err := store.Get(ctx, types.NamespacedName{Namespace: "ns", Name: p.Name}, &corev1.Pod{}); err != nil {
				t.Fatalf("%s: foreign pod %s: %v", when, p.Name, err)
			}
		}
	}

	reconcile(1)
	if n := store.Writes.Snapshot()["create Pod"]; n != 2 {
		t.Fatalf("created %d pods, want 2 (a head and a worker of its own: the foreign pods do not count)", n)
	}
	if n := foreignReports(); n != 1 {
		t.Fatalf("%d ForeignPods events on the first pass, want 1", n)
	}
	reconcile(3)
	if n := foreignReports(); n != 0 {
		t.Fatalf("%d more ForeignPods events for the same pods, want none", n)
	}

	// Scale down to 0: raygate deletes its worker, not the foreign ones.
	cur := &rayv1.RayCluster{}
	if err := store.Get(ctx, req.NamespacedName, cur); err != nil {
		t.Fatal(err)
	}
	cur.Spec.WorkerGroupSpecs[0].Replicas = ptr.To[int32](0)
	if err := store.Update(ctx, cur); err != nil {
		t.Fatal(err)
	}
	store.Writes.Reset()
	reconcile(3)
	if n := store.Writes.Snapshot()["delete Pod"]; n != 1 {
		t.Fatalf("scale-down deleted %d pods, want 1 (its own worker)", n)
	}
	stillThere("after the scale-down")

	// Suspend deletes every pod of the cluster: its own head only.
	if err := store.Get(ctx, req.NamespacedName, cur); err != nil {
		t.Fatal(err)
	}
	cur.Spec.Suspend = ptr.To(true)
	if err := store.Update(ctx, cur); err != nil {
		t.Fatal(err)
	}
	store.Writes.Reset()
	reconcile(4)
	if w := store.Writes.Snapshot(); w["delete Pod"] != 1 || w["deletecollection Pod"] != 0 {
		t.Fatalf("suspend wrote %v, want exactly one pod delete (its own head) and no delete by label", w)
	}
	stillThere("after the suspend")
}
