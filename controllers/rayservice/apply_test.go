package rayservice

import (
	"context"
	"errors"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	rayscheme "github.com/raygate/raygate/apis/scheme"
	"github.com/raygate/raygate/controllers/rayservice/plan"
)

// recorder is an executor that notes what it is asked, in order, and fails at the call
// numbered failAt (-1: never).
type recorder struct {
	calls  *[]string
	failAt int
}

func (x recorder) call(what string) error {
	*x.calls = append(*x.calls, what)
	if len(*x.calls)-1 == x.failAt {
		return errors.New(what + " failed")
	}
	return nil
}

func (x recorder) apply(actions []plan.Action) error {
	for _, a := range actions {
		if err := x.call(a.String()); err != nil {
			return err
		}
	}
	return nil
}

func (x recorder) submit(s plan.SubmitServeConfig) error {
	return x.call("submit to " + s.Cluster.Name)
}

// The cluster actions come first (a submission goes to the cluster as they leave it), then
// the submissions, then the other actions; the first failure stops the pass.
func TestCarryOutEffectsInOrderUpToTheFirstFailure(t *testing.T) {
	cluster := func(name string) *rayv1.RayCluster {
		return &rayv1.RayCluster{ObjectMeta: metav1.ObjectMeta{Name: name}}
	}
	effects := plan.Effects{
		ClusterActions: []plan.Action{plan.CreateCluster{Cluster: cluster("svc-b")}},
		Submits:        []plan.SubmitServeConfig{{Cluster: cluster("svc-a")}, {Cluster: cluster("svc-b")}},
		Actions:        []plan.Action{plan.DeleteCluster{Cluster: cluster("svc-old")}},
	}
	all := []string{"create RayCluster svc-b", "submit to svc-a", "submit to svc-b", "delete RayCluster svc-old"}
	for failAt := -1; failAt < len(all); failAt++ {
		var calls []string
		err := carryOutEffects(effects, recorder{calls: &calls, failAt: failAt})
		want := all
		if failAt >= 0 {
			want = all[:failAt+1]
		}
		if !slices.Equal(calls, want) || (err != nil) != (failAt >= 0) {
			t.Errorf("failing call %d: calls %q, error %v; want calls %q", failAt, calls, err, want)
		}
	}
}

// A pass that decides a patch the cache does not show yet (it still sees the version the
// patch was decided on) does not send it again; once the cluster changed, it does.
func TestAnnotateSendsAPatchOncePerObservedVersion(t *testing.T) {
	rc := &rayv1.RayCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "svc-a", UID: "u1", ResourceVersion: "7"}}
	patches := 0
	c := fake.NewClientBuilder().WithScheme(rayscheme.New()).WithObjects(rc.DeepCopy()).WithInterceptorFuncs(interceptor.Funcs{
		Patch: func(ctx context.Context, cl client.WithWatch, obj client.Object, p client.Patch, opts ...client.PatchOption) error {
			patches++
			return cl.Patch(ctx, obj, p, opts...)
		},
	}).Build()
	r := &Reconciler{client: c}
	ann := map[string]string{rayv1.DeleteAfterKey: "2026-01-01T00:00:00Z"}
	for range 2 {
		if err := r.annotate(context.Background(), rc, ann); err != nil {
			t.Fatal(err)
		}
	}
	if patches != 1 {
		t.Fatalf("%d patches for the same decision on the same version, want 1", patches)
	}
	if err := r.annotate(context.Background(), rc, map[string]string{rayv1.DeleteAfterKey: "2026-01-01T00:01:00Z"}); err != nil || patches != 2 {
		t.Fatalf("a different patch: %d patches, %v", patches, err)
	}
	seen := rc.DeepCopy()
	seen.ResourceVersion = "9"
	if err := r.annotate(context.Background(), seen, map[string]string{rayv1.DeleteAfterKey: "2026-01-01T00:01:00Z"}); err != nil || patches != 3 {
		t.Fatalf("the same patch on a newer version: %d patches, %v", patches, err)
	}
}

// An update decided on a version raygate has already updated is not sent: it could only
// conflict. One decided on the version that update made is.
func TestUpdateIsNotSentAgainFromTheVersionItReplaced(t *testing.T) {
	cur := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "llm-serve-svc", UID: "u1"}}
	updates := 0
	c := fake.NewClientBuilder().WithScheme(rayscheme.New()).WithObjects(cur).WithInterceptorFuncs(interceptor.Funcs{
		Update: func(ctx context.Context, cl client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			updates++
			return cl.Update(ctx, obj, opts...)
		},
	}).Build()
	r := &Reconciler{client: c, apiReader: c}
	svc := &rayv1.RayService{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "llm"}}
	read := &corev1.Service{}
	if err := c.Get(context.Background(), client.ObjectKeyFromObject(cur), read); err != nil {
		t.Fatal(err)
	}
	update := func(from *corev1.Service, selector string) error {
		want := from.DeepCopy()
		want.Spec.Selector = map[string]string{rayv1.ClusterLabelKey: selector}
		return r.applyOne(context.Background(), svc, plan.UpdateObject{Object: want})
	}
	if err := update(read, "llm-new"); err != nil || updates != 1 {
		t.Fatalf("first update: %d updates, %v", updates, err)
	}
	// The cache has not caught up: the next pass decides on the version just replaced.
	if err := update(read, "llm-new"); err != nil || updates != 1 {
		t.Fatalf("an update from the replaced version: %d updates, %v (want it skipped)", updates, err)
	}
	fresh := &corev1.Service{}
	if err := c.Get(context.Background(), client.ObjectKeyFromObject(cur), fresh); err != nil {
		t.Fatal(err)
	}
	if err := update(fresh, "llm-newer"); err != nil || updates != 2 {
		t.Fatalf("an update from the current version: %d updates, %v", updates, err)
	}
}
