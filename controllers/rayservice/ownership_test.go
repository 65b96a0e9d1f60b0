package rayservice

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	rayscheme "github.com/raygate/raygate/apis/scheme"
	"github.com/raygate/raygate/controllers/rayservice/plan"
	"github.com/raygate/raygate/internal/owned"
	"github.com/raygate/raygate/test/builders"
)

// labelledCache reads the way the manager's cache does: only objects raygate labelled exist.
type labelledCache struct{ client.Client }

func (c labelledCache) Get(ctx context.Context, k client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if err := c.Client.Get(ctx, k, obj, opts...); err != nil {
		return err
	}
	if !owned.Labelled(obj) {
		return apierrors.NewNotFound(schema.GroupResource{Resource: "services"}, k.Name)
	}
	return nil
}

// A create that finds the name taken by a Service the cache cannot see fails the pass; the
// next pass reads it from the API server so the plan can report it, until it is gone. One
// of the RayService's own that an older raygate made without the label is relabelled at once.
func TestCreateFindsTheNameTaken(t *testing.T) {
	ctx := context.Background()
	svc := builders.RayService("svc", "ns").Obj()
	svc.UID = "svc-uid"
	ref := *metav1.NewControllerRef(svc, rayv1.GroupVersion.WithKind(rayv1.RayServiceKind))
	foreign := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "svc-serve-svc", UID: "f"}}
	old := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "svc-head-svc", UID: "o", OwnerReferences: []metav1.OwnerReference{ref}}}
	api := fake.NewClientBuilder().WithScheme(rayscheme.New()).WithObjects(foreign, old).Build()
	r := &Reconciler{client: labelledCache{api}, apiReader: api, recorder: events.NewFakeRecorder(10)}
	want := func(name string) *corev1.Service {
		return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, OwnerReferences: []metav1.OwnerReference{ref},
			Labels: map[string]string{rayv1.KubernetesCreatedByLabelKey: rayv1.ComponentName}}}
	}

	err := r.applyOne(ctx, svc, plan.CreateObject{Object: want("svc-serve-svc")})
	if err == nil || !strings.Contains(err.Error(), "Service svc-serve-svc exists and is not controlled by this RayService (it has no controller)") {
		t.Fatalf("a foreign Service: %v", err)
	}
	key := types.NamespacedName{Namespace: "ns", Name: "svc-serve-svc"}
	read := &corev1.Service{}
	if found, err := r.objects(svc).Get(ctx, key, read); !found || err != nil || read.UID != "f" {
		t.Fatalf("the next pass reads it through: %v %v %+v", found, err, read.ObjectMeta)
	}

	if err := r.applyOne(ctx, svc, plan.CreateObject{Object: want("svc-head-svc")}); err != nil {
		t.Fatalf("the RayService's own Service: %v", err)
	}
	if err := api.Get(ctx, client.ObjectKeyFromObject(old), read); err != nil || !owned.Labelled(read) || read.UID != "o" {
		t.Errorf("not relabelled in place: %v %+v", err, read.ObjectMeta)
	}

	if err := api.Delete(ctx, foreign); err != nil {
		t.Fatal(err)
	}
	if found, err := r.objects(svc).Get(ctx, key, &corev1.Service{}); found || err != nil || r.taken.Len() != 0 {
		t.Errorf("once gone it is forgotten: found %v, %v, %d names", found, err, r.taken.Len())
	}
}

// A serve config record (a ConfigMap, never cached) whose name is taken is not written, and
// is read and reported by the next passes until it is gone.
func TestForeignRecordIsReportedUntilGone(t *testing.T) {
	ctx := context.Background()
	svc := builders.RayService("svc", "ns").Obj()
	rc := &rayv1.RayCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "svc-aaaaa", UID: "rc-uid"}}
	taken := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "svc-aaaaa" + serveConfigRecordSuffix}}
	api := fake.NewClientBuilder().WithScheme(rayscheme.New()).WithObjects(taken).Build()
	r := &Reconciler{client: api, apiReader: api}
	cfg, err := plan.ParseServeConfig(builders.DefaultServeConfig)
	if err != nil {
		t.Fatal(err)
	}
	obs := func() string {
		o := &plan.Observed{ForeignRecords: map[string]string{}}
		if err := r.observeRecord(ctx, svc, rc, o); err != nil {
			t.Fatal(err)
		}
		return o.ForeignRecords[rc.Name]
	}
	if got := obs(); got != "" {
		t.Fatalf("a record not known to be taken is not read: %q", got)
	}
	if err := r.writeRecord(ctx, r.objects(svc), rc, cfg, nil); err == nil {
		t.Fatal("a foreign record was written")
	}
	if got := obs(); got != "ConfigMap svc-aaaaa-serve-configs exists and is not controlled by RayCluster svc-aaaaa (it has no controller)" {
		t.Errorf("reported %q", got)
	}
	if err := api.Delete(ctx, taken); err != nil {
		t.Fatal(err)
	}
	if got := obs(); got != "" || r.taken.Len() != 0 {
		t.Errorf("once gone: %q, %d names", got, r.taken.Len())
	}
	if err := r.writeRecord(ctx, r.objects(svc), rc, cfg, nil); err != nil {
		t.Fatal(err)
	}
}
