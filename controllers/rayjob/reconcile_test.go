package rayjob

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	rayscheme "github.com/raygate/raygate/apis/scheme"
	"github.com/raygate/raygate/controllers/rayjob/plan"
	"github.com/raygate/raygate/internal/features"
	"github.com/raygate/raygate/internal/raypod"
	"github.com/raygate/raygate/internal/testenv/cachewatch"
	"github.com/raygate/raygate/test/builders"
)

var t0 = time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)

// fixture is a reconciler on a fake API server whose reads may come from a separate,
// lagging store (the informer cache), with counted writes.
type fixture struct {
	t        *testing.T
	api      client.WithWatch
	cache    client.WithWatch // nil: reads from api
	r        *Reconciler
	rec      *events.FakeRecorder
	now      time.Time
	draws    int
	writes   []string
	failNext func(obj client.Object) error
}

func newFixture(t *testing.T, objs ...client.Object) *fixture {
	t.Helper()
	f := &fixture{t: t, now: t0, rec: events.NewFakeRecorder(100)}
	f.api = fake.NewClientBuilder().WithScheme(rayscheme.New()).WithStatusSubresource(&rayv1.RayJob{}, &rayv1.RayCluster{}, &batchv1.Job{}).
		WithObjects(objs...).Build()
	f.build()
	return f
}

// build makes the reconciler anew (an operator restart: its memory is gone).
func (f *fixture) build() {
	reads := func() client.WithWatch {
		if f.cache != nil {
			return f.cache
		}
		return f.api
	}
	c := interceptor.NewClient(f.api, interceptor.Funcs{
		Get: func(ctx context.Context, _ client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			return reads().Get(ctx, key, obj, opts...)
		},
		List: func(ctx context.Context, _ client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			return reads().List(ctx, list, opts...)
		},
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			if err := f.fail(obj); err != nil {
				return err
			}
			f.writes = append(f.writes, fmt.Sprintf("create %T %s", obj, obj.GetName()))
			return c.Create(ctx, obj, opts...)
		},
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, p client.Patch, opts ...client.PatchOption) error {
			f.writes = append(f.writes, fmt.Sprintf("patch %T %s", obj, obj.GetName()))
			return c.Patch(ctx, obj, p, opts...)
		},
		SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, p client.Patch, opts ...client.SubResourcePatchOption) error {
			f.writes = append(f.writes, fmt.Sprintf("patch %s %s", sub, obj.GetName()))
			return c.SubResource(sub).Patch(ctx, obj, p, opts...)
		},
	})
	cfg := Config{Gates: features.Static{features.RayJobDeletionPolicy: true}, Recorder: f.rec, Now: func() time.Time { return f.now }}
	f.r = newReconciler(cfg, cachewatch.Guard(c, rayscheme.New(), CacheNeeds(cfg)), f.api)
	f.r.fresh = func(job string) plan.Fresh {
		f.draws++
		return plan.Fresh{JobID: fmt.Sprintf("%s-id%d", job, f.draws), ClusterName: fmt.Sprintf("%s-c%d", job, f.draws)}
	}
}

func (f *fixture) fail(obj client.Object) error {
	if f.failNext == nil {
		return nil
	}
	err := f.failNext(obj)
	if err != nil {
		f.failNext = nil
	}
	return err
}

func (f *fixture) pass(name string) (ctrl.Result, error) {
	f.t.Helper()
	f.writes = nil
	return f.r.Reconcile(context.Background(), ctrl.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: name}})
}

func (f *fixture) mustPass(name string) ctrl.Result {
	f.t.Helper()
	res, err := f.pass(name)
	if err != nil {
		f.t.Fatalf("pass: %v", err)
	}
	return res
}

func (f *fixture) job(name string) *rayv1.RayJob {
	f.t.Helper()
	j := &rayv1.RayJob{}
	if err := f.api.Get(context.Background(), types.NamespacedName{Namespace: "ns", Name: name}, j); err != nil {
		f.t.Fatal(err)
	}
	return j
}

func (f *fixture) events() []string {
	var out []string
	for {
		select {
		case e := <-f.rec.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

func withUID(j *rayv1.RayJob) *rayv1.RayJob {
	j.UID = "job-uid"
	return j
}

// A K8sJobMode RayJob from New to Running, pass by pass: the names are recorded (with the
// finalizer) before anything is created; the cluster, then the submitter and the job's
// Service are created; the status is written only in the passes that change it, and the
// events of what was created come with them.
func TestPassesOfAK8sJobModeJob(t *testing.T) {
	f := newFixture(t, withUID(builders.RayJob("job", "ns").Obj()))

	res := f.mustPass("job")
	j := f.job("job")
	if j.Status.JobDeploymentStatus != rayv1.JobDeploymentStatusInitializing || j.Status.JobId != "job-id1" || j.Status.RayClusterName != "job-c1" ||
		!slices.Contains(j.Finalizers, plan.StopJobFinalizer) || res.RequeueAfter <= 0 {
		t.Fatalf("after the first pass: %+v, finalizers %v, %+v", j.Status, j.Finalizers, res)
	}
	if want := []string{"patch *v1.RayJob job", "patch status job"}; !cmp.Equal(f.writes, want) {
		t.Errorf("writes %v, want %v", f.writes, want)
	}

	f.mustPass("job")
	if want := []string{"create *v1.RayCluster job-c1"}; !cmp.Equal(f.writes, want) {
		t.Errorf("second pass writes %v, want %v (no status write)", f.writes, want)
	}
	if ev := f.events(); len(ev) != 1 || !strings.HasPrefix(ev[0], "Normal CreatedRayCluster") {
		t.Errorf("events %v", ev)
	}
	rc := &rayv1.RayCluster{}
	if err := f.api.Get(context.Background(), types.NamespacedName{Namespace: "ns", Name: "job-c1"}, rc); err != nil {
		t.Fatal(err)
	}
	if !metav1IsControlledBy(rc, j) {
		t.Errorf("the cluster is not controlled by the RayJob: %+v", rc.OwnerReferences)
	}

	// The cluster is there, not ready: the status says so, once.
	f.mustPass("job")
	if msg := f.job("job").Status.Message; !strings.Contains(msg, "not ready") {
		t.Errorf("message %q", msg)
	}
	f.mustPass("job")
	if len(f.writes) != 0 {
		t.Errorf("an unchanged pass wrote %v", f.writes)
	}

	// The cluster is ready with its head Service: the submitter comes, the job runs.
	rc.Status.State = rayv1.Ready
	if err := f.api.Status().Update(context.Background(), rc); err != nil {
		t.Fatal(err)
	}
	if err := f.api.Create(context.Background(), raypod.HeadService(rc)); err != nil {
		t.Fatal(err)
	}
	f.mustPass("job")
	j = f.job("job")
	if j.Status.JobDeploymentStatus != rayv1.JobDeploymentStatusRunning || j.Status.DashboardURL != "job-c1-head-svc.ns.svc.cluster.local:8265" {
		t.Fatalf("after the cluster is ready: %+v", j.Status)
	}
	sub := &batchv1.Job{}
	if err := f.api.Get(context.Background(), types.NamespacedName{Namespace: "ns", Name: "job"}, sub); err != nil {
		t.Fatalf("no submitter: %v", err)
	}
	if sub.Labels[rayv1.KubernetesCreatedByLabelKey] != rayv1.ComponentName || !metav1IsControlledBy(sub, j) {
		t.Errorf("submitter metadata %+v", sub.ObjectMeta)
	}

	f.mustPass("job")
	svc := &corev1.Service{}
	if err := f.api.Get(context.Background(), types.NamespacedName{Namespace: "ns", Name: "job-head-svc"}, svc); err != nil {
		t.Fatalf("no job Service: %v", err)
	}
	if svc.Spec.Selector[rayv1.ClusterLabelKey] != "job-c1" || svc.Labels[rayv1.OriginatedFromCRNameLabelKey] != "job" ||
		svc.Labels[rayv1.KubernetesCreatedByLabelKey] != rayv1.ComponentName || !metav1IsControlledBy(svc, j) {
		t.Errorf("job Service %+v %+v", svc.Labels, svc.Spec.Selector)
	}
}

// A failed action ends the pass: the status that relies on it is not written, and the
// failure is announced with KubeRay's reason.
func TestAFailedActionStopsThePassBeforeTheStatusWrite(t *testing.T) {
	f := newFixture(t, withUID(builders.RayJob("job", "ns").Obj()))
	f.mustPass("job")
	before := f.job("job").Status
	f.failNext = func(obj client.Object) error {
		if _, ok := obj.(*rayv1.RayCluster); ok {
			return apierrors.NewForbidden(rayv1.GroupVersion.WithResource("rayclusters").GroupResource(), obj.GetName(), fmt.Errorf("quota"))
		}
		return nil
	}
	if _, err := f.pass("job"); err == nil {
		t.Fatal("the pass did not fail")
	}
	if len(f.writes) != 0 {
		t.Errorf("writes after the failure: %v", f.writes)
	}
	if diff := cmp.Diff(before, f.job("job").Status); diff != "" {
		t.Errorf("the status changed:\n%s", diff)
	}
	if ev := f.events(); len(ev) != 1 || !strings.HasPrefix(ev[0], "Warning FailedToCreateRayCluster") {
		t.Errorf("events %v", ev)
	}
}

// A pass never acts on a status it already replaced: with the cache still showing the
// RayJob before the first write, the second pass reads the API server, so the recorded
// submission id and cluster name are kept (a pass reading the cache would start over with
// new ones, and could submit the job twice). An operator restart (new memory, a cache
// caught up) goes on with them too.
func TestAPassReadsItsOwnWrites(t *testing.T) {
	job := withUID(builders.RayJob("job", "ns").Obj())
	f := newFixture(t, job)
	f.cache = fake.NewClientBuilder().WithScheme(rayscheme.New()).WithStatusSubresource(&rayv1.RayJob{}).WithObjects(job.DeepCopy()).Build()
	f.build()
	f.mustPass("job")
	if got := f.job("job").Status.JobId; got != "job-id1" {
		t.Fatalf("recorded id %q", got)
	}
	cached := &rayv1.RayJob{}
	if err := f.cache.Get(context.Background(), types.NamespacedName{Namespace: "ns", Name: "job"}, cached); err != nil || cached.Status.JobId != "" {
		t.Fatalf("the cache is not behind: %+v", cached.Status)
	}
	f.mustPass("job")
	if st := f.job("job").Status; st.JobId != "job-id1" || st.RayClusterName != "job-c1" {
		t.Fatalf("the second pass replaced the recorded names: %+v", st)
	}
	if want := []string{"create *v1.RayCluster job-c1"}; !cmp.Equal(f.writes, want) {
		t.Errorf("second pass writes %v, want %v", f.writes, want)
	}

	f.cache = nil
	f.build()
	f.mustPass("job")
	if st := f.job("job").Status; st.JobId != "job-id1" || st.RayClusterName != "job-c1" {
		t.Fatalf("after a restart: %+v", st)
	}
}

// An invalid stored RayJob gets ValidationFailed and nothing else: no finalizer, no cluster.
func TestAnInvalidJobCreatesNothing(t *testing.T) {
	job := withUID(builders.RayJob("job", "ns").Obj())
	job.Spec.SubmissionMode = "Telepathy"
	f := newFixture(t, job)
	f.mustPass("job")
	j := f.job("job")
	if j.Status.JobDeploymentStatus != rayv1.JobDeploymentStatusValidationFailed || len(j.Finalizers) != 0 {
		t.Fatalf("%+v, finalizers %v", j.Status, j.Finalizers)
	}
	if want := []string{"patch status job"}; !cmp.Equal(f.writes, want) {
		t.Errorf("writes %v, want %v", f.writes, want)
	}
	if ev := f.events(); len(ev) != 1 || !strings.HasPrefix(ev[0], "Warning InvalidRayJobSpec") {
		t.Errorf("events %v", ev)
	}
}

// Every kind the controller watches or reads through the cache at set-up is one it declares.
func TestTheControllerWatchesWhatItDeclares(t *testing.T) {
	scheme := rayscheme.New()
	cfg := Config{Recorder: events.NewFakeRecorder(1)}
	got := cachewatch.Kinds(t, scheme, func(mgr ctrl.Manager) error { return New(mgr, cfg).SetupWithManager(mgr) })
	want, err := CacheNeeds(cfg).GVKs(scheme)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("declared (-) and watched (+) kinds differ:\n%s", diff)
	}
}

func metav1IsControlledBy(obj client.Object, job *rayv1.RayJob) bool {
	for _, r := range obj.GetOwnerReferences() {
		if r.Controller != nil && *r.Controller && r.UID == job.UID && r.Kind == rayv1.RayJobKind {
			return true
		}
	}
	return false
}
