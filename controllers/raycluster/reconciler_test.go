package raycluster_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	rayscheme "github.com/raygate/raygate/apis/scheme"
	"github.com/raygate/raygate/controllers/raycluster"
	"github.com/raygate/raygate/internal/expectations"
	"github.com/raygate/raygate/internal/features"
	"github.com/raygate/raygate/internal/owned"
	"github.com/raygate/raygate/internal/testenv/framework"
	"github.com/raygate/raygate/internal/validation"
	"github.com/raygate/raygate/test/builders"
)

// staleCache reads pods from a frozen copy of the cache and everything else live, like an
// informer that has not seen the last pod events yet. Writes go to the live store.
type staleCache struct {
	client.Client
	frozen client.Reader
}

func isPod(o any) bool {
	switch o.(type) {
	case *corev1.Pod, *corev1.PodList:
		return true
	}
	return false
}

func (s *staleCache) Get(ctx context.Context, k client.ObjectKey, o client.Object, opts ...client.GetOption) error {
	if isPod(o) {
		return s.frozen.Get(ctx, k, o, opts...)
	}
	return s.Client.Get(ctx, k, o, opts...)
}

func (s *staleCache) List(ctx context.Context, l client.ObjectList, opts ...client.ListOption) error {
	if isPod(l) {
		return s.frozen.List(ctx, l, opts...)
	}
	return s.Client.List(ctx, l, opts...)
}

func podIndex(o client.Object) []string { return []string{o.GetLabels()[rayv1.ClusterLabelKey]} }

func newStore(objs ...client.Object) client.Client {
	return fake.NewClientBuilder().WithScheme(rayscheme.New()).WithStatusSubresource(&rayv1.RayCluster{}).
		WithIndex(&corev1.Pod{}, raycluster.PodClusterIndex, podIndex).WithObjects(objs...).Build()
}

// A reconcile that runs before the cache shows the pods it created or deleted must not
// create or delete them again.
func TestStaleCacheNeverDuplicatesCreatesOrDeletes(t *testing.T) {
	ctx := context.Background()
	rc := builders.RayCluster("demo", "ns").WorkerGroups(builders.WorkerGroup("workers", 2)).Obj()
	live := framework.NewCountingClient(newStore(rc))
	frozen := newStore()
	r := &raycluster.Reconciler{
		Client:       &staleCache{Client: live, frozen: frozen},
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

	reconcile()
	if n := live.Writes.Snapshot()["create Pod"]; n != 3 {
		t.Fatalf("first pass created %d pods, want 3 (head + 2 workers)", n)
	}
	live.Writes.Reset()
	reconcile() // the cache still shows no pods
	if n := live.Writes.Snapshot()["create Pod"]; n != 0 {
		t.Fatalf("a pass on a stale cache created %d more pods", n)
	}

	// The cache catches up.
	var all corev1.PodList
	if err := live.List(ctx, &all); err != nil {
		t.Fatal(err)
	}
	frozen = newStore(podsAsObjects(all.Items)...)
	r.Client = &staleCache{Client: live, frozen: frozen}
	live.Writes.Reset()
	reconcile()
	if n := live.Writes.Snapshot()["create Pod"]; n != 0 {
		t.Fatalf("created %d pods although all exist", n)
	}

	// Scale down by one; the cache keeps showing the deleted pod.
	cur := &rayv1.RayCluster{}
	if err := live.Get(ctx, req.NamespacedName, cur); err != nil {
		t.Fatal(err)
	}
	cur.Spec.WorkerGroupSpecs[0].Replicas = ptr.To[int32](1)
	if err := live.Update(ctx, cur); err != nil {
		t.Fatal(err)
	}
	live.Writes.Reset()
	reconcile()
	reconcile()
	reconcile()
	if n := live.Writes.Snapshot()["delete Pod"]; n != 1 {
		t.Fatalf("deleted %d pods for a scale-down by one on a stale cache, want exactly 1", n)
	}
}

func podsAsObjects(pods []corev1.Pod) []client.Object {
	out := make([]client.Object, len(pods))
	for i := range pods {
		p := pods[i]
		p.ResourceVersion = ""
		out[i] = &p
	}
	return out
}

// Bad input never panics: a cluster without containers (which admission rejects) is
// reported, not built.
func TestClusterWithoutContainersIsRejectedNotBuilt(t *testing.T) {
	ctx := context.Background()
	rc := builders.RayCluster("empty", "ns").Obj()
	rc.Spec.HeadGroupSpec.Template.Spec.Containers = nil
	rc.Spec.WorkerGroupSpecs[0].Template.Spec.Containers = nil
	store := framework.NewCountingClient(newStore(rc))
	r := &raycluster.Reconciler{Client: store,
		Expectations: expectations.New(time.Hour), Metrics: raycluster.NewMetrics(),
		Config: raycluster.Config{Recorder: events.NewFakeRecorder(10), Gates: features.Static{}, Now: time.Now},
	}
	if _, err := r.Reconcile(ctx, ctrl.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "empty"}}); err != nil {
		t.Fatal(err)
	}
	got := &rayv1.RayCluster{}
	if err := store.Get(ctx, types.NamespacedName{Namespace: "ns", Name: "empty"}, got); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(got.Status.Reason, rayv1.ValidationFailed+": ") || !strings.Contains(got.Status.Reason, "containers") {
		t.Errorf("status.reason = %q, want a ValidationFailed reason naming the containers", got.Status.Reason)
	}
	if w := store.Writes.Snapshot(); w["create Pod"] != 0 || w["create Service"] != 0 {
		t.Errorf("writes = %v: nothing may be created for an invalid cluster", w)
	}
}

// statusAtEvent records every event with the status the API server held when it was sent.
type statusAtEvent struct {
	store  client.Client
	key    types.NamespacedName
	events []string
	status []rayv1.RayClusterStatus
}

func (s *statusAtEvent) Eventf(_ runtime.Object, _ runtime.Object, eventtype, reason, _, _ string, _ ...any) {
	rc := &rayv1.RayCluster{}
	_ = s.store.Get(context.Background(), s.key, rc)
	s.events = append(s.events, eventtype+" "+reason+" (status.reason at that time: "+rc.Status.Reason+")")
	s.status = append(s.status, rc.Status)
}

// Events report a pass after its status write, so the status never lags what the events say.
func TestEventsFollowTheStatusWrite(t *testing.T) {
	ctx := context.Background()
	rc := builders.RayCluster("demo", "ns").WorkerGroups(builders.WorkerGroup("workers", 2)).Obj()
	rc.Generation = 3
	store := newStore(rc)
	req := ctrl.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "demo"}}
	rec := &statusAtEvent{store: store, key: req.NamespacedName}
	r := &raycluster.Reconciler{Client: store,
		Expectations: expectations.New(time.Hour), Metrics: raycluster.NewMetrics(),
		Config: raycluster.Config{Recorder: rec, Gates: features.Static{}, Now: time.Now},
	}
	if _, err := r.Reconcile(ctx, req); err != nil {
		t.Fatal(err)
	}
	if len(rec.events) < 3 { // the head Service, the head pod, the workers
		t.Fatalf("events = %q; want the pass's creations reported", rec.events)
	}
	for i, st := range rec.status {
		if st.ObservedGeneration != 3 {
			t.Errorf("event %q was sent before the status write (observedGeneration %d)", rec.events[i], st.ObservedGeneration)
		}
	}
}

// An invalid spec goes through the one status path: its status is written once, its
// metrics are observed like any cluster's, and its event follows the status write.
func TestInvalidSpecGoesThroughTheOneStatusPath(t *testing.T) {
	ctx := context.Background()
	rc := builders.RayCluster("bad", "ns").Obj()
	rc.Spec.WorkerGroupSpecs[0].MinReplicas = ptr.To[int32](5)
	rc.Spec.WorkerGroupSpecs[0].MaxReplicas = ptr.To[int32](2)
	store := framework.NewCountingClient(newStore(rc))
	req := ctrl.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "bad"}}
	rec := &statusAtEvent{store: store, key: req.NamespacedName}
	metrics := raycluster.NewMetrics()
	reg := prometheus.NewRegistry()
	if err := metrics.Register(reg); err != nil {
		t.Fatal(err)
	}
	metrics.Bind(store)
	r := &raycluster.Reconciler{Client: store,
		Expectations: expectations.New(time.Hour), Metrics: metrics,
		Config: raycluster.Config{Recorder: rec, Gates: features.Static{}, Now: time.Now},
	}

	for range 2 {
		if _, err := r.Reconcile(ctx, req); err != nil {
			t.Fatal(err)
		}
	}
	w := store.Writes.Snapshot()
	if w["patch RayCluster/status"] != 1 || len(w) != 1 {
		t.Errorf("writes = %v; want exactly one status write over two passes and nothing else", w)
	}
	if len(rec.events) != 1 || !strings.HasPrefix(rec.events[0], "Warning ValidationFailed (status.reason at that time: "+rayv1.ValidationFailed+": ") {
		t.Errorf("events = %q; want one ValidationFailed warning, sent after the status that reports it", rec.events)
	}
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range families {
		got = append(got, f.GetName())
	}
	if !slices.Contains(got, "kuberay_cluster_info") || !slices.Contains(got, "kuberay_cluster_condition_provisioned") {
		t.Errorf("metrics = %v; an invalid cluster is observed like any other", got)
	}
}

// frozenClusters reads RayClusters from a frozen copy of the cache and everything else live,
// like an informer that has not seen the last status write yet. Writes go to the live store.
type frozenClusters struct {
	client.Client
	frozen client.Reader
}

func (f frozenClusters) Get(ctx context.Context, k client.ObjectKey, o client.Object, opts ...client.GetOption) error {
	if _, ok := o.(*rayv1.RayCluster); ok {
		return f.frozen.Get(ctx, k, o, opts...)
	}
	return f.Client.Get(ctx, k, o, opts...)
}

// A pass on a cache that has not seen the last status write computes from the status last
// written: it writes nothing again, and the event of that write is not sent again.
func TestPassesReadTheirOwnStatusWrites(t *testing.T) {
	ctx := context.Background()
	rc := builders.RayCluster("bad", "ns").Obj()
	rc.Spec.WorkerGroupSpecs[0].MinReplicas = ptr.To[int32](5)
	rc.Spec.WorkerGroupSpecs[0].MaxReplicas = ptr.To[int32](2)
	store := newStore(rc)
	before := &rayv1.RayCluster{}
	if err := store.Get(ctx, client.ObjectKeyFromObject(rc), before); err != nil {
		t.Fatal(err)
	}
	live := framework.NewCountingClient(store)
	rec := events.NewFakeRecorder(10)
	r := &raycluster.Reconciler{Client: frozenClusters{Client: live, frozen: newStore(before)},
		Expectations: expectations.New(time.Hour), Metrics: raycluster.NewMetrics(),
		Config: raycluster.Config{Recorder: rec, Gates: features.Static{}, Now: time.Now},
	}
	req := ctrl.Request{NamespacedName: client.ObjectKeyFromObject(rc)}
	for range 3 {
		if _, err := r.Reconcile(ctx, req); err != nil {
			t.Fatal(err)
		}
	}
	if w := live.Writes.Snapshot(); w["patch RayCluster/status"] != 1 || len(w) != 1 {
		t.Errorf("writes = %v; want one status write over three passes on a cache behind it", w)
	}
	if n := len(rec.Events); n != 1 {
		t.Errorf("%d events; want the one ValidationFailed warning", n)
	}
}

// Objects with the names raygate wants that the cluster does not control — a Service someone
// created, a RoleBinding applied by GitOps, one controlled by another RayCluster — are never
// updated, deleted or adopted: the cluster reports them in OwnershipConflict and a Warning
// event, once, and goes on with its pods.
func TestForeignObjectsAreLeftUntouchedAndReported(t *testing.T) {
	ctx := context.Background()
	rc := builders.RayCluster("demo", "ns").WorkerGroups(builders.WorkerGroup("workers", 1)).Obj()
	rc.UID = "cluster-uid"
	rc.Spec.EnableInTreeAutoscaling = ptr.To(true)
	headSvc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "demo-head-svc", Namespace: "ns", Labels: map[string]string{"team": "a"}},
		Spec:       corev1.ServiceSpec{Selector: map[string]string{"app": "theirs"}, Ports: []corev1.ServicePort{{Name: "x", Port: 1}}},
	}
	binding := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "demo", Namespace: "ns", OwnerReferences: []metav1.OwnerReference{{
			APIVersion: "ray.io/v1", Kind: "RayCluster", Name: "other", UID: "other-uid", Controller: ptr.To(true)}}},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "edit"},
		Subjects: []rbacv1.Subject{{Kind: "User", Name: "alice"}},
	}
	store := newStore(rc, headSvc, binding)
	live := framework.NewCountingClient(store)
	rec := events.NewFakeRecorder(100)
	r := &raycluster.Reconciler{
		// The manager's cache holds only objects raygate labelled: the foreign ones are found
		// only when a create is refused, by reading the API server.
		Client: labelledOnly{live}, APIReader: store,
		Expectations: expectations.New(time.Hour), Metrics: raycluster.NewMetrics(),
		Config: raycluster.Config{Recorder: rec, Gates: features.Static{features.RayClusterStatusConditions: true}, Now: time.Now},
	}
	req := ctrl.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "demo"}}
	for range 3 {
		res, err := r.Reconcile(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		if res.RequeueAfter <= 0 || res.RequeueAfter > time.Minute {
			t.Fatalf("RequeueAfter = %v: a conflict is looked at again within a minute (the foreign object is not watched)", res.RequeueAfter)
		}
	}

	var gotSvc corev1.Service
	if err := store.Get(ctx, types.NamespacedName{Namespace: "ns", Name: "demo-head-svc"}, &gotSvc); err != nil {
		t.Fatal(err)
	}
	if !equality.Semantic.DeepEqual(gotSvc.Spec, headSvc.Spec) || len(gotSvc.OwnerReferences) != 0 || !maps.Equal(gotSvc.Labels, headSvc.Labels) {
		t.Errorf("the foreign Service was changed: %+v", gotSvc)
	}
	var gotRB rbacv1.RoleBinding
	if err := store.Get(ctx, types.NamespacedName{Namespace: "ns", Name: "demo"}, &gotRB); err != nil {
		t.Fatalf("the foreign RoleBinding must not be deleted: %v", err)
	}
	if gotRB.RoleRef != binding.RoleRef || !equality.Semantic.DeepEqual(gotRB.Subjects, binding.Subjects) {
		t.Errorf("the foreign RoleBinding was changed: %+v", gotRB)
	}
	for verbKind := range live.Writes.Snapshot() {
		if strings.Contains(verbKind, "services") && !strings.HasPrefix(verbKind, "create") || strings.Contains(verbKind, "rolebindings") && !strings.HasPrefix(verbKind, "create") {
			t.Errorf("write %q touched a foreign object", verbKind)
		}
	}

	var got rayv1.RayCluster
	if err := store.Get(ctx, req.NamespacedName, &got); err != nil {
		t.Fatal(err)
	}
	c := meta.FindStatusCondition(got.Status.Conditions, string(rayv1.OwnershipConflict))
	if c == nil || c.Status != metav1.ConditionTrue || c.Reason != rayv1.ForeignObject ||
		!strings.Contains(c.Message, "Service demo-head-svc exists and is not controlled by this RayCluster (it has no controller)") ||
		!strings.Contains(c.Message, "RoleBinding demo exists and is not controlled by this RayCluster (it is controlled by RayCluster other)") {
		t.Fatalf("OwnershipConflict = %+v", c)
	}
	var heads corev1.PodList
	if err := store.List(ctx, &heads, client.InNamespace("ns"), client.MatchingLabels{rayv1.NodeTypeLabelKey: string(rayv1.HeadNode)}); err != nil || len(heads.Items) != 1 {
		t.Errorf("the cluster still gets its head pod: %d, %v", len(heads.Items), err)
	}
	warnings := 0
	for len(rec.Events) > 0 {
		if e := <-rec.Events; strings.Contains(e, raycluster.EventOwnershipConflict) {
			warnings++
			if !strings.HasPrefix(e, "Warning") {
				t.Errorf("event %q is not a Warning", e)
			}
		}
	}
	if warnings != 1 {
		t.Errorf("%d OwnershipConflict events over three passes, want 1", warnings)
	}

	// Once the foreign objects are gone, raygate creates its own and the condition goes.
	if err := store.Delete(ctx, &gotSvc); err != nil {
		t.Fatal(err)
	}
	if err := store.Delete(ctx, &gotRB); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, err := r.Reconcile(ctx, req); err != nil {
			t.Fatal(err)
		}
	}
	if err := store.Get(ctx, req.NamespacedName, &got); err != nil {
		t.Fatal(err)
	}
	if c := meta.FindStatusCondition(got.Status.Conditions, string(rayv1.OwnershipConflict)); c != nil {
		t.Errorf("OwnershipConflict still set: %+v", c)
	}
	if err := store.Get(ctx, types.NamespacedName{Namespace: "ns", Name: "demo-head-svc"}, &gotSvc); err != nil || !metav1.IsControlledBy(&gotSvc, &got) {
		t.Errorf("raygate's own head Service: %v %+v", err, gotSvc.OwnerReferences)
	}
}

// A cluster stored above the admin's pod bounds (stored before a bound was lowered, or while
// the webhook was off) is served at the bounds, not frozen: raygate creates pods up to them,
// says so in status.reason and one Warning event, and allocates nothing per requested pod.
func TestStoredClusterAboveThePodBoundsIsServedAtThem(t *testing.T) {
	ctx := context.Background()
	rc := builders.RayCluster("big", "ns").WorkerGroups(builders.WorkerGroup("workers", 2147483647)).Obj()
	store := newStore(rc)
	rec := events.NewFakeRecorder(100)
	r := &raycluster.Reconciler{
		Client:       store,
		Expectations: expectations.New(time.Hour), Metrics: raycluster.NewMetrics(),
		Config: raycluster.Config{Recorder: rec, Gates: features.Static{features.RayClusterStatusConditions: true}, Now: time.Now, Limits: validation.Limits{MaxPodsPerGroup: 3, MaxPodsPerCluster: 10}},
	}
	req := ctrl.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "big"}}
	for range 4 {
		if _, err := r.Reconcile(ctx, req); err != nil {
			t.Fatal(err)
		}
	}
	var pods corev1.PodList
	if err := store.List(ctx, &pods, client.InNamespace("ns")); err != nil {
		t.Fatal(err)
	}
	if len(pods.Items) != 4 {
		t.Fatalf("%d pods, want the head and 3 workers", len(pods.Items))
	}
	var got rayv1.RayCluster
	if err := store.Get(ctx, req.NamespacedName, &got); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(got.Status.Reason, "worker group workers is capped at 3 replicas") || got.Status.DesiredWorkerReplicas != 3 {
		t.Errorf("status: reason %q, desired workers %d", got.Status.Reason, got.Status.DesiredWorkerReplicas)
	}
	capped := 0
	for len(rec.Events) > 0 {
		if e := <-rec.Events; strings.Contains(e, raycluster.EventCappedAtPodLimits) {
			capped++
		}
	}
	if capped != 1 {
		t.Errorf("%d CappedAtPodLimits events, want 1", capped)
	}
}

// labelledOnly reads Services, ServiceAccounts, Roles and RoleBindings the way the manager's
// cache does: only those raygate labelled exist.
type labelledOnly struct{ client.Client }

func (c labelledOnly) Get(ctx context.Context, k client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	switch obj.(type) {
	case *corev1.Service, *corev1.ServiceAccount, *rbacv1.Role, *rbacv1.RoleBinding:
		found := obj.DeepCopyObject().(client.Object)
		if err := c.Client.Get(ctx, k, found, opts...); err != nil {
			return err
		}
		if !owned.Labelled(found) {
			return apierrors.NewNotFound(schema.GroupResource{Resource: fmt.Sprintf("%T", obj)}, k.Name)
		}
	}
	return c.Client.Get(ctx, k, obj, opts...)
}

// podLists counts the pod lists a pass makes.
type podLists struct {
	client.Client
	n int
}

func (c *podLists) List(ctx context.Context, l client.ObjectList, opts ...client.ListOption) error {
	if _, ok := l.(*corev1.PodList); ok {
		c.n++
	}
	return c.Client.List(ctx, l, opts...)
}

// A pass that writes no pod computes the status from the pods it read (a copy of every pod
// per list); one that created pods lists them again for its status.
func TestPodsAreListedAgainOnlyAfterAPassWroteSome(t *testing.T) {
	ctx := context.Background()
	rc := builders.RayCluster("demo", "ns").WorkerGroups(builders.WorkerGroup("workers", 2)).Obj()
	store := &podLists{Client: newStore(rc)}
	r := &raycluster.Reconciler{Client: store,
		Expectations: expectations.New(time.Hour), Metrics: raycluster.NewMetrics(),
		Config: raycluster.Config{Recorder: events.NewFakeRecorder(100), Gates: features.Static{}, Now: time.Now},
	}
	req := ctrl.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "demo"}}
	for _, step := range []struct {
		what  string
		lists int
	}{
		{"bring-up: creates the pods", 2},
		{"steady: nothing to write", 1},
	} {
		store.n = 0
		if _, err := r.Reconcile(ctx, req); err != nil {
			t.Fatal(err)
		}
		if store.n != step.lists {
			t.Errorf("%s: %d pod lists, want %d", step.what, store.n, step.lists)
		}
	}
	var pods corev1.PodList
	if err := store.Client.List(ctx, &pods); err != nil || len(pods.Items) != 3 {
		t.Fatalf("pods = %d, %v; want the head and 2 workers", len(pods.Items), err)
	}
}
