package rayservice

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
)

// A demoted cluster's deletion time counts from when the demotion is stored, not from the
// pass that decided it: that pass's status write may be slow or conflict, and a time
// recorded before it would shorten the delay in-flight requests need.
func TestCleanUpRetiresOnlyAfterTheDemotionIsStored(t *testing.T) {
	ctx := context.Background()
	blue := &rayv1.RayCluster{ObjectMeta: metav1.ObjectMeta{Name: "svc-blue", Namespace: "ns"}}
	green := &rayv1.RayCluster{ObjectMeta: metav1.ObjectMeta{Name: "svc-green", Namespace: "ns"}}
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := rayv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(blue.DeepCopy(), green.DeepCopy()).Build()
	r := &Reconciler{client: c, recorder: events.NewFakeRecorder(10)}

	stored := rayv1.RayServiceStatuses{
		ActiveServiceStatus:  rayv1.RayServiceStatus{RayClusterName: blue.Name},
		PendingServiceStatus: rayv1.RayServiceStatus{RayClusterName: green.Name},
	}
	promoted := rayv1.RayServiceStatuses{ActiveServiceStatus: rayv1.RayServiceStatus{RayClusterName: green.Name}}
	svc := &rayv1.RayService{ObjectMeta: metav1.ObjectMeta{Name: "svc", Namespace: "ns"},
		Spec: rayv1.RayServiceSpec{RayClusterDeletionDelaySeconds: ptr.To[int32](30)}}

	pass := func(now time.Time, old, current rayv1.RayServiceStatuses) *pass {
		s := svc.DeepCopy()
		s.Status = current
		p := newPass(s, now)
		p.old, p.spec = old.DeepCopy(), s.Spec
		for _, name := range []string{blue.Name, green.Name} {
			rc := &rayv1.RayCluster{}
			if err := c.Get(ctx, client.ObjectKey{Namespace: "ns", Name: name}, rc); err != nil {
				t.Fatal(err)
			}
			p.owned = append(p.owned, rc)
		}
		return p
	}
	deleteAfter := func() string {
		rc := &rayv1.RayCluster{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(blue), rc); err != nil {
			t.Fatal(err)
		}
		return rc.Annotations[rayv1.DeleteAfterKey]
	}

	decided := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	p := pass(decided, stored, promoted) // the pass that promotes green
	if err := r.cleanUp(ctx, p); err != nil {
		t.Fatal(err)
	}
	if got := deleteAfter(); got != "" {
		t.Fatalf("blue got %s=%s in the pass that demoted it, before the demotion was stored", rayv1.DeleteAfterKey, got)
	}
	if !p.decided {
		t.Fatal("the demoting pass must come back soon to retire blue")
	}

	storedAt := decided.Add(5 * time.Second) // the status write took 5 s
	if err := r.cleanUp(ctx, pass(storedAt, promoted, promoted)); err != nil {
		t.Fatal(err)
	}
	if got, want := deleteAfter(), storedAt.Add(30*time.Second).Format(time.RFC3339); got != want {
		t.Fatalf("%s = %q, want %q (30 s after the demotion was stored)", rayv1.DeleteAfterKey, got, want)
	}
}
