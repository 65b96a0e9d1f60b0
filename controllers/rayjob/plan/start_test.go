package plan

import (
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/rayjob"
)

func TestStart(t *testing.T) {
	for _, tc := range []struct {
		name   string
		job    *rayv1.RayJob
		fresh  *Fresh
		want   expect
		id     string
		clustr string
	}{
		{name: "records the id, the cluster and the start before anything is created",
			job:  storedJob(rayv1.K8sJobMode, "", func(j *rayv1.RayJob) { j.Finalizers = nil }),
			want: expect{ds: rayv1.JobDeploymentStatusInitializing, effects: []string{"AddFinalizer"}, soon: true}, id: "train-fresh", clustr: "train-fresh"},
		{name: "spec.jobId pins the id",
			job:  storedJob(rayv1.HTTPMode, "", func(j *rayv1.RayJob) { j.Spec.JobId = "pinned" }),
			want: expect{ds: rayv1.JobDeploymentStatusInitializing, effects: []string{}}, id: "pinned", clustr: "train-fresh"},
		{name: "InteractiveMode records no id",
			job:  storedJob(rayv1.InteractiveMode, ""),
			want: expect{ds: rayv1.JobDeploymentStatusInitializing}, id: "", clustr: "train-fresh"},
		{name: "clusterSelector names the cluster",
			job: storedJob(rayv1.K8sJobMode, "", func(j *rayv1.RayJob) {
				j.Spec.RayClusterSpec, j.Spec.ClusterSelector = nil, map[string]string{rayv1.RayJobClusterSelectorKey: "shared"}
			}),
			want: expect{ds: rayv1.JobDeploymentStatusInitializing}, id: "train-fresh", clustr: "shared"},
		{name: "no names drawn: nothing starts",
			job: storedJob(rayv1.K8sJobMode, ""), fresh: &Fresh{},
			want: expect{ds: rayv1.JobDeploymentStatusNew, effects: []string{}, noWake: true}},
		{name: "suspended from the start: nothing is created",
			job:  storedJob(rayv1.K8sJobMode, "", func(j *rayv1.RayJob) { j.Spec.Suspend = true }),
			want: expect{ds: rayv1.JobDeploymentStatusSuspended, effects: []string{}, events: []string{EventSuspended}, noWake: true}},
		{name: "fixed after ValidationFailed: starts with what it recorded",
			job: storedJob(rayv1.K8sJobMode, rayv1.JobDeploymentStatusValidationFailed, func(j *rayv1.RayJob) {
				j.Status.Reason, j.Status.Message = rayv1.JobFailedReason(rayv1.ValidationFailed), "spec: bad"
			}),
			want: expect{ds: rayv1.JobDeploymentStatusInitializing}, id: storedID, clustr: storedCluster},
		{name: "fixed after ValidationFailed, suspended: releases what it may have",
			job:  storedJob(rayv1.K8sJobMode, rayv1.JobDeploymentStatusValidationFailed, func(j *rayv1.RayJob) { j.Spec.Suspend = true }),
			want: expect{ds: rayv1.JobDeploymentStatusSuspending, soon: true}, id: storedID, clustr: storedCluster},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := inputsFor(tc.job, time.Second, Observed{})
			if tc.fresh != nil {
				in.Fresh = *tc.fresh
			}
			p := Decide(in)
			tc.want.check(t, p)
			if p.Status.JobDeploymentStatus == rayv1.JobDeploymentStatusInitializing {
				start := at(time.Second)
				if tc.job.Status.JobDeploymentStatus == rayv1.JobDeploymentStatusValidationFailed {
					start = at(0) // the attempt goes on: its deadlines do not start again
				}
				// A job that creates its cluster says at once that it waits for it: the passes
				// while the cluster comes up then write nothing.
				message := clusterNotReady(tc.clustr)
				if tc.job.Spec.ClusterSelector != nil {
					message = ""
				}
				if p.Status.JobId != tc.id || p.Status.RayClusterName != tc.clustr || !p.Status.StartTime.Equal(start) || p.Status.Message != message {
					t.Errorf("status %+v", p.Status)
				}
			}
		})
	}
}

func TestInitializing(t *testing.T) {
	init := func(mode rayv1.JobSubmissionMode, edit ...func(*rayv1.RayJob)) *rayv1.RayJob {
		return storedJob(mode, rayv1.JobDeploymentStatusInitializing, edit...)
	}
	k8s := init(rayv1.K8sJobMode)
	selector := func(j *rayv1.RayJob) {
		j.Spec.RayClusterSpec, j.Spec.ClusterSelector = nil, map[string]string{rayv1.RayJobClusterSelectorKey: "shared"}
		j.Status.RayClusterName = "shared"
	}
	deleting := ownCluster(k8s, false)
	deleting.DeletionTimestamp = at(0)
	for _, tc := range []struct {
		name string
		job  *rayv1.RayJob
		obs  Observed
		set  func(*Settings)
		now  time.Duration
		want expect
	}{
		{name: "creates the cluster", job: k8s, want: expect{ds: rayv1.JobDeploymentStatusInitializing, effects: []string{"CreateCluster"}, noWake: true}},
		{name: "with a batch scheduler, its submission hook first", job: k8s, set: func(s *Settings) { s.BatchScheduler = true },
			want: expect{effects: []string{"BatchSchedulerHook", "CreateCluster"}}},
		{name: "waits for the cluster to be ready (a watch brings the next pass)", job: k8s, obs: Observed{Cluster: ownCluster(k8s, false)},
			want: expect{ds: rayv1.JobDeploymentStatusInitializing, effects: []string{}, message: "not ready yet", noWake: true}},
		{name: "waits for a deleted cluster to go", job: k8s, obs: Observed{Cluster: deleting},
			want: expect{effects: []string{}, message: "being deleted"}},
		{name: "ready: records the dashboard and creates the submitter", job: k8s, obs: Observed{Cluster: ownCluster(k8s, true), HeadService: headService(storedCluster)},
			want: expect{ds: rayv1.JobDeploymentStatusRunning, effects: []string{"CreateSubmitter"}, soon: true}},
		{name: "ready, submitter there: Running", job: k8s, obs: Observed{Cluster: ownCluster(k8s, true), HeadService: headService(storedCluster), Submitter: submitterJob(k8s, "", t0)},
			want: expect{ds: rayv1.JobDeploymentStatusRunning, effects: []string{}}},
		{name: "ready, no dashboard port yet: looks again", job: k8s, obs: Observed{Cluster: ownCluster(k8s, true), HeadService: &corev1.Service{}},
			want: expect{ds: rayv1.JobDeploymentStatusInitializing, effects: []string{}, wakeAt: DefaultRecheck + time.Second}, now: time.Second},
		{name: "HTTPMode: Running, the submission follows", job: init(rayv1.HTTPMode), obs: Observed{Cluster: ownCluster(k8s, true), HeadService: headService(storedCluster)},
			want: expect{ds: rayv1.JobDeploymentStatusRunning, effects: []string{}}},
		{name: "InteractiveMode: Waiting", job: init(rayv1.InteractiveMode), obs: Observed{Cluster: ownCluster(k8s, true), HeadService: headService(storedCluster)},
			want: expect{ds: rayv1.JobDeploymentStatusWaiting}},
		{name: "a RayCluster of someone else's under the name: left alone", job: k8s, obs: Observed{Cluster: foreignCluster(storedCluster)}, now: time.Second,
			want: expect{ds: rayv1.JobDeploymentStatusInitializing, effects: []string{}, events: []string{EventOwnershipConflict}, wakeAt: time.Second + DefaultRecheck}},
		{name: "a Job of someone else's under the submitter's name: left alone", job: k8s,
			obs:  Observed{Cluster: ownCluster(k8s, true), HeadService: headService(storedCluster), Submitter: &foreignJob},
			want: expect{ds: rayv1.JobDeploymentStatusInitializing, effects: []string{}, events: []string{EventOwnershipConflict}}},
		{name: "clusterSelector names a cluster that is not there", job: init(rayv1.K8sJobMode, selector), now: time.Second,
			want: expect{ds: rayv1.JobDeploymentStatusInitializing, effects: []string{}, events: []string{EventClusterNotFound}, wakeAt: time.Second + DefaultRecheck}},
		{name: "clusterSelector: the cluster is used, not controlled", job: init(rayv1.HTTPMode, selector), obs: Observed{Cluster: foreignCluster("shared"), HeadService: headService("shared")},
			want: expect{ds: rayv1.JobDeploymentStatusRunning, effects: []string{}}},
		{name: "suspend: Suspending", job: init(rayv1.K8sJobMode, func(j *rayv1.RayJob) { j.Spec.Suspend = true }),
			want: expect{ds: rayv1.JobDeploymentStatusSuspending, effects: []string{}, soon: true}},
		{name: "active deadline", job: init(rayv1.K8sJobMode, func(j *rayv1.RayJob) { j.Spec.ActiveDeadlineSeconds = ptr.To[int32](60) }), now: time.Minute,
			want: expect{ds: rayv1.JobDeploymentStatusFailed, reason: rayv1.DeadlineExceeded, effects: []string{}, events: []string{EventFailed}}},
		{name: "before the deadlines: wakes at the first", job: init(rayv1.K8sJobMode, func(j *rayv1.RayJob) {
			j.Spec.ActiveDeadlineSeconds, j.Spec.PreRunningDeadlineSeconds = ptr.To[int32](60), ptr.To[int32](30)
		}), obs: Observed{Cluster: ownCluster(k8s, false)}, now: 10 * time.Second, want: expect{ds: rayv1.JobDeploymentStatusInitializing, wakeAt: 30 * time.Second}},
		{name: "a submitter that cannot be built fails the submission", job: init(rayv1.K8sJobMode, oldRay),
			obs:  Observed{Cluster: ownCluster(k8s, true), HeadService: headService(storedCluster)},
			want: expect{ds: rayv1.JobDeploymentStatusFailed, reason: rayv1.SubmissionFailed, message: "cannot be built", effects: []string{}}},
		{name: "a SidecarMode cluster that cannot be built fails the submission", job: init(rayv1.SidecarMode, oldRay),
			want: expect{ds: rayv1.JobDeploymentStatusFailed, reason: rayv1.SubmissionFailed, message: "cannot be built", effects: []string{}}},
		{name: "pre-running deadline, retried", job: init(rayv1.K8sJobMode, func(j *rayv1.RayJob) {
			j.Spec.PreRunningDeadlineSeconds, j.Spec.BackoffLimit = ptr.To[int32](30), ptr.To[int32](1)
		}), now: 30 * time.Second, want: expect{ds: rayv1.JobDeploymentStatusRetrying, reason: rayv1.PreRunningDeadlineExceeded, events: []string{EventRetrying}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := inputsFor(tc.job, tc.now, tc.obs)
			if tc.set != nil {
				tc.set(&in.Settings)
			}
			tc.want.check(t, Decide(in))
		})
	}
}

// foreignJob is a Job under the submitter's name that the RayJob does not control.
var foreignJob = batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "train", Namespace: "ml", UID: "uid-foreign-job"}}

// oldRay asks for metadata of a Ray that cannot take it (validation refuses it; a stored job
// may still have it).
func oldRay(j *rayv1.RayJob) {
	j.Spec.Metadata = map[string]string{"team": "ml"}
	j.Spec.RayClusterSpec.RayVersion = "2.5.0"
}

func TestCreatedClusterCarriesTheRecordedID(t *testing.T) {
	job := storedJob(rayv1.SidecarMode, rayv1.JobDeploymentStatusInitializing)
	p := Decide(inputsFor(job, time.Second, Observed{}))
	create, ok := p.Actions[0].(CreateCluster)
	if !ok {
		t.Fatalf("effects %v", kinds(p))
	}
	head := create.Cluster.Spec.HeadGroupSpec.Template.Spec
	if len(head.Containers) != 2 || envOf(head.Containers[1], rayjob.EnvSubmissionID) != storedID || !controlledBy(create.Cluster, job) || create.Cluster.Name != storedCluster {
		t.Fatalf("cluster %+v", create.Cluster.ObjectMeta)
	}
}

func TestWaiting(t *testing.T) {
	wait := func(edit ...func(*rayv1.RayJob)) *rayv1.RayJob {
		return storedJob(rayv1.InteractiveMode, rayv1.JobDeploymentStatusWaiting, append([]func(*rayv1.RayJob){func(j *rayv1.RayJob) { j.Status.JobId = "" }}, edit...)...)
	}
	for _, tc := range []struct {
		name string
		job  *rayv1.RayJob
		now  time.Duration
		want expect
	}{
		{name: "no spec.jobId: waits for the user's edit, no polling", job: wait(), want: expect{ds: rayv1.JobDeploymentStatusWaiting, effects: []string{}, noWake: true}},
		{name: "spec.jobId: Running with it", job: wait(func(j *rayv1.RayJob) { j.Spec.JobId = "mine" }), want: expect{ds: rayv1.JobDeploymentStatusRunning, soon: true}},
		{name: "pre-running deadline", job: wait(func(j *rayv1.RayJob) { j.Spec.PreRunningDeadlineSeconds = ptr.To[int32](5) }), now: 5 * time.Second,
			want: expect{ds: rayv1.JobDeploymentStatusFailed, reason: rayv1.PreRunningDeadlineExceeded}},
		{name: "active deadline (raygate: KubeRay checks only the pre-running one)", job: wait(func(j *rayv1.RayJob) { j.Spec.ActiveDeadlineSeconds = ptr.To[int32](5) }), now: 5 * time.Second,
			want: expect{ds: rayv1.JobDeploymentStatusFailed, reason: rayv1.DeadlineExceeded}},
		{name: "suspend (raygate: KubeRay ignores it while waiting)", job: wait(func(j *rayv1.RayJob) { j.Spec.Suspend, j.Spec.ShutdownAfterJobFinishes = true, true }),
			want: expect{ds: rayv1.JobDeploymentStatusSuspending}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := Decide(inputsFor(tc.job, tc.now, Observed{}))
			tc.want.check(t, p)
			if tc.job.Spec.JobId != "" && p.Status.JobId != tc.job.Spec.JobId && p.Status.JobDeploymentStatus == rayv1.JobDeploymentStatusRunning {
				t.Errorf("job id %q", p.Status.JobId)
			}
		})
	}
}

func TestDeleting(t *testing.T) {
	running := func(edit ...func(*rayv1.RayJob)) *rayv1.RayJob {
		return storedJob(rayv1.HTTPMode, rayv1.JobDeploymentStatusRunning, append([]func(*rayv1.RayJob){func(j *rayv1.RayJob) {
			j.DeletionTimestamp = at(0)
			j.Status.JobStatus = rayv1.JobStatusRunning
		}}, edit...)...)
	}
	rc := ownCluster(running(), true)
	goingCluster := rc.DeepCopy()
	goingCluster.DeletionTimestamp = at(0)
	for _, tc := range []struct {
		name string
		job  *rayv1.RayJob
		obs  Observed
		want []string
	}{
		{name: "a running job is asked to stop first", job: running(), obs: Observed{Cluster: rc}, want: []string{"StopJob"}},
		{name: "any answer to the stop will do", job: running(), obs: Observed{Cluster: rc, Jobs: JobsView{Cluster: storedCluster, JobID: storedID, Stop: &StopAnswer{At: t0, Err: "timeout"}}},
			want: []string{"RemoveFinalizer"}},
		{name: "a finished job: no stop", job: running(func(j *rayv1.RayJob) { j.Status.JobStatus = rayv1.JobStatusSucceeded }), obs: Observed{Cluster: rc}, want: []string{"RemoveFinalizer"}},
		{name: "no cluster to ask", job: running(), want: []string{"RemoveFinalizer"}},
		{name: "a cluster going away: not asked", job: running(), obs: Observed{Cluster: goingCluster}, want: []string{"RemoveFinalizer"}},
		{name: "no id: no stop", job: running(func(j *rayv1.RayJob) { j.Status.JobId = "" }), obs: Observed{Cluster: rc}, want: []string{"RemoveFinalizer"}},
		{name: "no finalizer: nothing", job: running(func(j *rayv1.RayJob) { j.Finalizers = nil }), obs: Observed{Cluster: rc}, want: []string{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := Decide(inputsFor(tc.job, time.Second, tc.obs))
			expect{effects: tc.want, noWake: true}.check(t, p)
			if !sameStatus(p, tc.job) {
				t.Error("the status of a RayJob being deleted changed")
			}
		})
	}
}

func TestInvalid(t *testing.T) {
	errs := field.ErrorList{field.Invalid(field.NewPath("spec", "backoffLimit"), -1, "must be >= 0 "+hostile)}
	job := storedJob(rayv1.K8sJobMode, rayv1.JobDeploymentStatusRunning)
	in := inputsFor(job, time.Second, Observed{Cluster: ownCluster(job, true)})
	in.Invalid = errs
	p := Decide(in)
	expect{ds: rayv1.JobDeploymentStatusValidationFailed, reason: rayv1.JobFailedReason(rayv1.ValidationFailed), effects: []string{}, events: []string{EventInvalidSpec}, noWake: true}.check(t, p)

	// The next pass, with the status stored: the stored status itself, no event.
	in.Job = job.DeepCopy()
	in.Job.Status = p.Status
	again := Decide(in)
	if !sameStatus(again, in.Job) || len(again.Events) != 0 {
		t.Errorf("second pass: status changed %v, events %v", !sameStatus(again, in.Job), again.Events)
	}

	// A job that ended keeps its final status.
	done := storedJob(rayv1.K8sJobMode, rayv1.JobDeploymentStatusComplete, func(j *rayv1.RayJob) { j.Status.EndTime = at(0) })
	in = inputsFor(done, time.Second, Observed{})
	in.Invalid = field.ErrorList{field.Invalid(field.NewPath("metadata", "name"), "x", "too long")}
	p = Decide(in)
	if !sameStatus(p, done) || len(p.Actions) != 0 || len(p.Events) != 1 || p.Events[0].Reason != EventInvalidMetadata {
		t.Errorf("a finished invalid job: %+v %v", p.Status, p.Events)
	}
}

func TestInvalidReason(t *testing.T) {
	for want, errs := range map[string]field.ErrorList{
		EventInvalidMetadata: {field.Invalid(field.NewPath("spec"), 1, ""), field.Invalid(field.NewPath("metadata", "name"), 1, "")},
		EventInvalidSpec:     {field.Invalid(field.NewPath("status", "x"), 1, ""), field.Invalid(field.NewPath("spec", "x"), 1, "")},
		EventInvalidStatus:   {field.Invalid(field.NewPath("status", "jobDeploymentStatus"), 1, "")},
	} {
		if got := invalidReason(errs); got != want {
			t.Errorf("%v: %s, want %s", errs, got, want)
		}
	}
}

func TestManagedByOther(t *testing.T) {
	job := storedJob(rayv1.K8sJobMode, rayv1.JobDeploymentStatusRunning, func(j *rayv1.RayJob) {
		j.Spec.ManagedBy = ptr.To("kueue.x-k8s.io/multikueue")
		j.Spec.Suspend = true
		j.DeletionTimestamp = at(0)
	})
	p := Decide(inputsFor(job, time.Hour, Observed{Cluster: ownCluster(job, true)}))
	if !p.empty() || !sameStatus(p, job) || len(p.Events) != 0 || !p.Wake.At.IsZero() {
		t.Fatalf("plan %+v", p)
	}
}

func TestUnchangedStatusIsTheStoredOne(t *testing.T) {
	job := storedJob(rayv1.K8sJobMode, rayv1.JobDeploymentStatusRunning, func(j *rayv1.RayJob) {
		j.Status.JobStatus = rayv1.JobStatusRunning
		j.Status.Message = "running"
		j.Status.RayJobStatusInfo.StartTime = at(time.Second)
	})
	rc := ownCluster(job, true)
	job.Status.RayClusterStatus = *rc.Status.DeepCopy()
	rc.Status.LastUpdateTime = at(time.Minute) // a heartbeat writes nothing
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "train-head-svc", OwnerReferences: rc.OwnerReferences}, Spec: corev1.ServiceSpec{Selector: map[string]string{rayv1.ClusterLabelKey: storedCluster}}}
	obs := Observed{Cluster: rc, Submitter: submitterJob(job, "", t0), JobService: svc, Jobs: view(found(10*time.Second, rayv1.JobStatusRunning, "running"), nil)}
	p := Decide(inputsFor(job, 11*time.Second, obs))
	if !sameStatus(p, job) || len(p.Actions) != 0 {
		t.Fatalf("status changed: %+v; effects %v", p.Status, kinds(p))
	}
	expect{wakeAt: 13 * time.Second}.check(t, p)
}
