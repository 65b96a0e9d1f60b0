package raycluster_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/controllers/raycluster"
	"github.com/raygate/raygate/internal/batchscheduler"
	"github.com/raygate/raygate/internal/batchscheduler/volcano"
	"github.com/raygate/raygate/internal/expectations"
	"github.com/raygate/raygate/internal/features"
	"github.com/raygate/raygate/test/builders"
)

func batchReconciler(c client.Client, installed bool) (*raycluster.Reconciler, *events.FakeRecorder) {
	rec := events.NewFakeRecorder(100)
	return &raycluster.Reconciler{
		Client:       c,
		Expectations: expectations.New(time.Hour), Metrics: raycluster.NewMetrics(),
		BatchScheduler: &batchscheduler.Syncer{Scheduler: volcano.Scheduler{}, Client: c, Reader: c, APIReader: c, Installed: installed},
		Config:         raycluster.Config{Recorder: rec, Gates: features.Static{}, Now: time.Now},
	}, rec
}

func TestBatchSchedulerPodGroupBeforePods(t *testing.T) {
	ctx := context.Background()
	rc := builders.RayCluster("demo", "ns").WorkerGroups(builders.WorkerGroup("workers", 2)).Obj()
	rc.Labels = map[string]string{volcano.QueueLabelKey: "q"}
	c := newStore(rc)
	r, _ := batchReconciler(c, true)
	if _, err := r.Reconcile(ctx, ctrl.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "demo"}}); err != nil {
		t.Fatal(err)
	}
	pg := &unstructured.Unstructured{}
	pg.SetGroupVersionKind(volcano.PodGroupKind)
	if err := c.Get(ctx, client.ObjectKey{Namespace: "ns", Name: "ray-demo-pg"}, pg); err != nil {
		t.Fatalf("no PodGroup: %v", err)
	}
	if m, _, _ := unstructured.NestedInt64(pg.Object, "spec", "minMember"); m != 3 {
		t.Errorf("minMember = %d, want 3", m)
	}
	var pods corev1.PodList
	if err := c.List(ctx, &pods); err != nil {
		t.Fatal(err)
	}
	if len(pods.Items) != 3 {
		t.Fatalf("%d pods, want 3", len(pods.Items))
	}
	for _, p := range pods.Items {
		if p.Spec.SchedulerName != "volcano" || p.Annotations[volcano.GroupNameAnnotationKey] != "ray-demo-pg" ||
			p.Annotations[volcano.TaskSpecAnnotationKey] != p.Labels[rayv1.NodeGroupLabelKey] || p.Labels[volcano.QueueLabelKey] != "q" {
			t.Errorf("pod %s not marked for Volcano: schedulerName %q, annotations %v, labels %v", p.Name, p.Spec.SchedulerName, p.Annotations, p.Labels)
		}
	}
}

func TestBatchSchedulerWithoutCRDCreatesNoPods(t *testing.T) {
	ctx := context.Background()
	rc := builders.RayCluster("demo", "ns").Obj()
	c := newStore(rc)
	r, rec := batchReconciler(c, false)
	_, err := r.Reconcile(ctx, ctrl.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "demo"}})
	if err == nil || !strings.Contains(err.Error(), "podgroups.scheduling.volcano.sh is not served") {
		t.Fatalf("err = %v", err)
	}
	var pods corev1.PodList
	if err := c.List(ctx, &pods); err != nil {
		t.Fatal(err)
	}
	if len(pods.Items) != 0 {
		t.Errorf("%d pods created without their PodGroup", len(pods.Items))
	}
	got := &rayv1.RayCluster{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(rc), got); err != nil {
		t.Fatal(err)
	}
	cond := meta.FindStatusCondition(got.Status.Conditions, string(rayv1.RayClusterReplicaFailure))
	if cond == nil || cond.Reason != "FailedToSyncPodGroup" || !strings.Contains(cond.Message, "install volcano, then restart raygate") {
		t.Errorf("ReplicaFailure = %+v", cond)
	}
	var sent []string
	for len(rec.Events) > 0 {
		sent = append(sent, <-rec.Events)
	}
	if !slices.ContainsFunc(sent, func(e string) bool { return strings.HasPrefix(e, "Warning FailedToSyncPodGroup") }) {
		t.Errorf("events %q, want a Warning FailedToSyncPodGroup", sent)
	}
}
