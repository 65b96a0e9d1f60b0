package raycluster_test

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/controllers/raycluster"
	"github.com/raygate/raygate/internal/expectations"
	"github.com/raygate/raygate/internal/features"
	"github.com/raygate/raygate/internal/owned"
	"github.com/raygate/raygate/internal/testenv/framework"
	"github.com/raygate/raygate/test/builders"
)

// The headless worker Service follows the multi-host groups, the serve Service the
// annotation; a converged cluster makes no Service writes.
func TestHeadlessAndServeServicesFollowTheSpec(t *testing.T) {
	ctx := context.Background()
	g := builders.WorkerGroup("tpu", 1)
	g.NumOfHosts = 2
	rc := builders.RayCluster("demo", "ns").WorkerGroups(g).Obj()
	rc.UID = "cluster-uid"
	rc.Annotations = map[string]string{rayv1.EnableServeServiceKey: "true"}
	store := newStore(rc)
	live := framework.NewCountingClient(store)
	r := &raycluster.Reconciler{Client: labelledOnly{live}, APIReader: store,
		Expectations: expectations.New(time.Hour), Metrics: raycluster.NewMetrics(),
		Config: raycluster.Config{Recorder: events.NewFakeRecorder(100), Gates: features.Static{}, Now: time.Now},
	}
	req := ctrl.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "demo"}}
	reconcile := func() {
		t.Helper()
		if _, err := r.Reconcile(ctx, req); err != nil {
			t.Fatal(err)
		}
	}
	svc := func(name string) (*corev1.Service, error) {
		s := &corev1.Service{}
		return s, store.Get(ctx, types.NamespacedName{Namespace: "ns", Name: name}, s)
	}

	reconcile()
	headless, err := svc("demo-headless")
	if err != nil {
		t.Fatalf("a multi-host group gets the headless worker Service: %v", err)
	}
	if !metav1.IsControlledBy(headless, rc) || headless.Spec.ClusterIP != corev1.ClusterIPNone || !headless.Spec.PublishNotReadyAddresses {
		t.Errorf("headless worker Service = %+v", headless)
	}
	serve, err := svc("demo-serve-svc")
	if err != nil {
		t.Fatalf("the annotation gets the serve Service: %v", err)
	}
	if !metav1.IsControlledBy(serve, rc) || len(serve.Spec.Ports) != 1 || serve.Spec.Ports[0].Name != "serve" || serve.Spec.Ports[0].Port != 8000 {
		t.Errorf("serve Service = %+v", serve)
	}

	live.Writes.Reset()
	reconcile()
	for _, verb := range []string{"create", "update", "delete"} {
		if n := live.Writes.Snapshot()[verb+" Service"]; n != 0 {
			t.Errorf("a converged cluster made %d Service %s(s)", n, verb)
		}
	}

	// The annotation goes, and the multi-host group becomes single-host.
	cur := &rayv1.RayCluster{}
	if err := store.Get(ctx, req.NamespacedName, cur); err != nil {
		t.Fatal(err)
	}
	cur.Annotations = nil
	cur.Spec.WorkerGroupSpecs[0].NumOfHosts = 1
	if err := store.Update(ctx, cur); err != nil {
		t.Fatal(err)
	}
	reconcile()
	if _, err := svc("demo-serve-svc"); !apierrors.IsNotFound(err) {
		t.Errorf("the serve Service must go with the annotation: %v", err)
	}
	if _, err := svc("demo-headless"); err != nil {
		t.Errorf("the headless worker Service stays until the cluster goes, as in KubeRay: %v", err)
	}
}

// Services KubeRay made for the cluster (controlled by it, without raygate's cache label) are
// taken over: labelled, not duplicated or reported as foreign.
func TestServicesMadeByKubeRayAreTakenOver(t *testing.T) {
	ctx := context.Background()
	g := builders.WorkerGroup("tpu", 1)
	g.NumOfHosts = 2
	rc := builders.RayCluster("demo", "ns").WorkerGroups(g).Obj()
	rc.UID = "cluster-uid"
	rc.Annotations = map[string]string{rayv1.EnableServeServiceKey: "true"}
	ref := []metav1.OwnerReference{{APIVersion: "ray.io/v1", Kind: "RayCluster", Name: "demo", UID: "cluster-uid", Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}}
	kuberayHeadless := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "demo-headless", Namespace: "ns", OwnerReferences: ref,
			Labels: map[string]string{rayv1.HeadlessWorkerServiceLabelKey: "demo"}},
		Spec: corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone, Type: corev1.ServiceTypeClusterIP, PublishNotReadyAddresses: true,
			Selector: map[string]string{rayv1.ClusterLabelKey: "demo", rayv1.NodeTypeLabelKey: "worker"}},
	}
	kuberayServe := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "demo-serve-svc", Namespace: "ns", OwnerReferences: ref, Labels: map[string]string{
			rayv1.OriginatedFromCRNameLabelKey: "demo", rayv1.OriginatedFromCRDLabelKey: "RayCluster", rayv1.ServeLabelKey: "demo-serve"}},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, Selector: map[string]string{rayv1.ClusterLabelKey: "demo"},
			Ports: []corev1.ServicePort{{Name: "serve", Port: 8000}}},
	}
	store := newStore(rc, kuberayHeadless, kuberayServe)
	live := framework.NewCountingClient(store)
	r := &raycluster.Reconciler{Client: labelledOnly{live}, APIReader: store,
		Expectations: expectations.New(time.Hour), Metrics: raycluster.NewMetrics(),
		Config: raycluster.Config{Recorder: events.NewFakeRecorder(100), Gates: features.Static{}, Now: time.Now},
	}
	req := ctrl.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "demo"}}
	for range 2 {
		if _, err := r.Reconcile(ctx, req); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"demo-headless", "demo-serve-svc"} {
		s := &corev1.Service{}
		if err := store.Get(ctx, types.NamespacedName{Namespace: "ns", Name: name}, s); err != nil {
			t.Fatal(err)
		}
		if !owned.Labelled(s) {
			t.Errorf("%s was not labelled for raygate's cache: %v", name, s.Labels)
		}
	}
	got := &rayv1.RayCluster{}
	if err := store.Get(ctx, req.NamespacedName, got); err != nil {
		t.Fatal(err)
	}
	if got.Status.Reason != "" {
		t.Errorf("status.reason = %q: KubeRay's Services of the cluster are not foreign", got.Status.Reason)
	}
}
