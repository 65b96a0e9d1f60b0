package raycronjob

import (
	"context"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	rayscheme "github.com/raygate/raygate/apis/scheme"
	"github.com/raygate/raygate/internal/features"
	"github.com/raygate/raygate/test/builders"
)

type fixture struct {
	t   *testing.T
	now time.Time
	api client.Client
	rec *events.FakeRecorder
}

var key = types.NamespacedName{Namespace: "ns", Name: "nightly"}

func newFixture(t *testing.T, cj *rayv1.RayCronJob) *fixture {
	f := &fixture{t: t, now: at("2026-01-01T10:15:00Z"), rec: events.NewFakeRecorder(100)}
	cj.CreationTimestamp = metav1.Time{Time: f.now}
	cj.UID = "cron-uid"
	f.api = fake.NewClientBuilder().WithScheme(rayscheme.New()).WithStatusSubresource(&rayv1.RayCronJob{}).WithObjects(cj).Build()
	return f
}

// reconciler is a fresh reconciler, as after an operator restart: it remembers nothing.
func (f *fixture) reconciler() *Reconciler {
	return newReconciler(Config{Gates: features.Static{features.RayCronJob: true}, Recorder: f.rec, Now: func() time.Time { return f.now }, Location: time.UTC}, f.api, f.api)
}

func (f *fixture) pass(r *Reconciler) ctrl.Result {
	f.t.Helper()
	res, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: key})
	if err != nil {
		f.t.Fatal(err)
	}
	return res
}

func (f *fixture) jobs() []string {
	f.t.Helper()
	var list rayv1.RayJobList
	if err := f.api.List(context.Background(), &list); err != nil {
		f.t.Fatal(err)
	}
	var names []string
	for _, j := range list.Items {
		names = append(names, j.Name)
	}
	return names
}

func (f *fixture) cronJob() *rayv1.RayCronJob {
	f.t.Helper()
	cj := &rayv1.RayCronJob{}
	if err := f.api.Get(context.Background(), key, cj); err != nil {
		f.t.Fatal(err)
	}
	return cj
}

func (f *fixture) events() string {
	var out []string
	for {
		select {
		case e := <-f.rec.Events:
			out = append(out, e)
		default:
			return strings.Join(out, "\n")
		}
	}
}

func TestReconcileCreatesEachRunOnce(t *testing.T) {
	f := newFixture(t, builders.RayCronJob("nightly", "ns").Schedule("0 * * * *").Obj())
	r := f.reconciler()
	if res := f.pass(r); res.RequeueAfter != 45*time.Minute || len(f.jobs()) != 0 {
		t.Fatalf("before the first run: %+v, jobs %v", res, f.jobs())
	}
	f.now = at("2026-01-01T11:00:00Z")
	res := f.pass(r)
	if res.RequeueAfter != time.Hour {
		t.Errorf("requeue after %s, want 1h", res.RequeueAfter)
	}
	want := RunJob(f.cronJob(), at("2026-01-01T11:00:00Z")).Name
	if got := f.jobs(); len(got) != 1 || got[0] != want {
		t.Fatalf("jobs %v, want [%s]", got, want)
	}
	job := &rayv1.RayJob{}
	if err := f.api.Get(context.Background(), types.NamespacedName{Namespace: "ns", Name: want}, job); err != nil {
		t.Fatal(err)
	}
	if job.Labels[rayv1.RayCronJobNameLabelKey] != "nightly" || job.Annotations[rayv1.RayCronJobTimestampAnnotationKey] != "2026-01-01T11:00:00Z" ||
		!metav1.IsControlledBy(job, f.cronJob()) || job.Spec.Entrypoint != builders.DefaultEntrypoint {
		t.Errorf("RayJob: %+v %+v %+v", job.Labels, job.Annotations, job.OwnerReferences)
	}
	if got := f.cronJob().Status.LastScheduleTime; got == nil || !got.Time.Equal(at("2026-01-01T11:00:00Z")) {
		t.Errorf("lastScheduleTime %v", got)
	}
	if ev := f.events(); !strings.Contains(ev, "Normal CreatedRayJob Created RayJob "+want) {
		t.Errorf("events: %s", ev)
	}

	// A restart whose status write was lost: the run is found, not created again.
	cj := f.cronJob()
	cj.Status.LastScheduleTime = nil
	if err := f.api.Status().Update(context.Background(), cj); err != nil {
		t.Fatal(err)
	}
	f.now = at("2026-01-01T11:00:30Z")
	f.pass(f.reconciler())
	if got := f.jobs(); len(got) != 1 {
		t.Errorf("after a restart: jobs %v", got)
	}
	if got := f.cronJob().Status.LastScheduleTime; got == nil || !got.Time.Equal(at("2026-01-01T11:00:00Z")) {
		t.Errorf("lastScheduleTime %v", got)
	}
}

func TestReconcileCatchesUpAfterDowntime(t *testing.T) {
	f := newFixture(t, builders.RayCronJob("nightly", "ns").Schedule("0 * * * *").Obj())
	f.now = at("2026-01-01T13:30:00Z")
	r := f.reconciler()
	for range 3 {
		if res := f.pass(r); res.RequeueAfter <= 0 {
			t.Fatalf("no requeue: %+v", res)
		}
	}
	if res := f.pass(r); res.RequeueAfter != 30*time.Minute {
		t.Errorf("after catching up: %+v", res)
	}
	if got := f.jobs(); len(got) != 3 {
		t.Errorf("jobs %v, want the 11:00, 12:00 and 13:00 runs", got)
	}
}

func TestReconcileSuspendedAndInvalid(t *testing.T) {
	f := newFixture(t, builders.RayCronJob("nightly", "ns").Schedule("* * * * *").Suspend(true).Obj())
	f.now = at("2026-01-01T12:00:00Z")
	if res := f.pass(f.reconciler()); res.RequeueAfter != 0 || len(f.jobs()) != 0 {
		t.Errorf("suspended: %+v, jobs %v", res, f.jobs())
	}
	if ev := f.events(); !strings.Contains(ev, "Normal SuspendedRayCronJob") {
		t.Errorf("events: %s", ev)
	}

	g := newFixture(t, builders.RayCronJob("nightly", "ns").Schedule("61 * * * *").Obj())
	g.now = at("2026-01-01T12:00:00Z")
	if res := g.pass(g.reconciler()); res.RequeueAfter != 0 || len(g.jobs()) != 0 {
		t.Errorf("invalid: %+v, jobs %v", res, g.jobs())
	}
	if ev := g.events(); !strings.Contains(ev, "Warning InvalidRayCronJobSpec spec.schedule: Invalid value") {
		t.Errorf("events: %s", ev)
	}
}

func TestReconcileNameTakenByAnother(t *testing.T) {
	f := newFixture(t, builders.RayCronJob("nightly", "ns").Schedule("0 * * * *").Obj())
	other := builders.RayJob(RunJob(f.cronJob(), at("2026-01-01T11:00:00Z")).Name, "ns").Obj()
	if err := f.api.Create(context.Background(), other); err != nil {
		t.Fatal(err)
	}
	f.now = at("2026-01-01T11:00:00Z")
	f.pass(f.reconciler())
	if got := f.cronJob().Status.LastScheduleTime; got == nil {
		t.Error("the run was not passed over")
	}
	if ev := f.events(); !strings.Contains(ev, "Warning RayJobNameTaken") {
		t.Errorf("events: %s", ev)
	}
}
