package plan

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/defaulting"
	"github.com/raygate/raygate/internal/rayjob"
	"github.com/raygate/raygate/test/builders"
)

const (
	storedID      = "train-qz7wd"
	storedCluster = "train-k4x2p"
)

// at is a time t0 + d, as the status stores it.
func at(d time.Duration) *metav1.Time {
	t := metav1.NewTime(t0.Add(d))
	return &t
}

// storedJob is a RayJob as the API holds it in a deployment status: started at t0 with a
// recorded id and cluster (New: nothing recorded).
func storedJob(mode rayv1.JobSubmissionMode, ds rayv1.JobDeploymentStatus, edit ...func(*rayv1.RayJob)) *rayv1.RayJob {
	job := builders.RayJob("train", "ml").Mode(mode).Obj()
	defaulting.RayJob(job)
	job.UID, job.Generation = jobUID, 1
	job.Finalizers = []string{StopJobFinalizer}
	job.Status.ObservedGeneration = 1
	if ds != rayv1.JobDeploymentStatusNew {
		job.Status = rayv1.RayJobStatus{JobDeploymentStatus: ds, JobId: storedID, RayClusterName: storedCluster, StartTime: at(0),
			Succeeded: ptr.To[int32](0), Failed: ptr.To[int32](0), ObservedGeneration: 1}
		if mode == rayv1.InteractiveMode && ds == rayv1.JobDeploymentStatusInitializing {
			job.Status.JobId = ""
		}
		if ds == rayv1.JobDeploymentStatusRunning {
			job.Status.DashboardURL = storedCluster + "-head-svc.ml.svc.cluster.local:8265"
		}
	}
	for _, e := range edit {
		e(job)
	}
	return job
}

// ownCluster is the job's RayCluster, controlled by it; ready or not.
func ownCluster(job *rayv1.RayJob, ready bool) *rayv1.RayCluster {
	rc, err := rayjob.Cluster(job, storedCluster, allOn)
	if err != nil {
		panic(err)
	}
	rc.UID = "uid-" + storedCluster
	if ready {
		rc.Status.State = rayv1.Ready
	}
	return rc
}

func foreignCluster(name string) *rayv1.RayCluster {
	return &rayv1.RayCluster{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ml", UID: "uid-foreign"}, Spec: builders.ClusterSpec(),
		Status: rayv1.RayClusterStatus{State: rayv1.Ready}}
}

func headService(name string) *corev1.Service {
	return (&simCluster{rc: &rayv1.RayCluster{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ml"}}}).headService()
}

// submitterJob is the job's submitter Job with a final condition at a time (typ "": running).
func submitterJob(job *rayv1.RayJob, typ batchv1.JobConditionType, when time.Time) *batchv1.Job {
	j, err := rayjob.SubmitterJob(job, nil, allOn)
	if err != nil {
		panic(err)
	}
	if typ != "" {
		j.Status.Conditions = []batchv1.JobCondition{{Type: typ, Status: corev1.ConditionTrue, Reason: "BackoffLimitExceeded", Message: "Job has reached the specified backoff limit", LastTransitionTime: metav1.NewTime(when)}}
	}
	return j
}

// view is the pool's answers for the stored cluster and id.
func view(read *JobRead, sub *SubmitAnswer) JobsView {
	return JobsView{Cluster: storedCluster, JobID: storedID, Read: read, Submission: sub}
}

func found(when time.Duration, status rayv1.JobStatus, message string) *JobRead {
	r := &JobRead{At: t0.Add(when), Outcome: ReadFound, Info: JobInfo{Status: status, Message: message, StartTimeMs: uint64(t0.Add(time.Second).UnixMilli())}}
	if rayv1.IsJobTerminal(status) {
		r.Info.EndTimeMs = uint64(t0.Add(when - time.Second).UnixMilli())
	}
	return r
}

func inputsFor(job *rayv1.RayJob, now time.Duration, o Observed) Inputs {
	return Inputs{Job: job, Observed: o, Now: t0.Add(now), Settings: Settings{Gates: allOn},
		Fresh: Fresh{JobID: "train-fresh", ClusterName: "train-fresh"}}
}

// kinds names the effects of a plan, in order.
func kinds(p Plan) []string {
	var out []string
	for _, a := range p.Actions {
		out = append(out, strings.TrimPrefix(fmt.Sprintf("%T", a), "plan."))
	}
	for _, q := range p.Requests {
		out = append(out, strings.TrimPrefix(fmt.Sprintf("%T", q), "plan."))
	}
	return out
}

func reasons(p Plan) []string {
	var out []string
	for _, e := range p.Events {
		out = append(out, e.Reason)
	}
	return out
}

// expect is what a table case checks of a plan; zero fields are not checked.
type expect struct {
	ds      rayv1.JobDeploymentStatus
	reason  rayv1.JobFailedReason
	js      *rayv1.JobStatus
	effects []string // nil: not checked; []string{}: none
	events  []string
	message string // a substring
	wakeAt  time.Duration
	soon    bool
	noWake  bool
}

func (e expect) check(t *testing.T, p Plan) {
	t.Helper()
	st := p.Status
	if e.ds != "" && st.JobDeploymentStatus != e.ds {
		t.Errorf("deployment status %q, want %q (%s: %s)", st.JobDeploymentStatus, e.ds, st.Reason, st.Message)
	}
	if e.reason != "" && st.Reason != e.reason {
		t.Errorf("reason %q, want %q (%s)", st.Reason, e.reason, st.Message)
	}
	if e.js != nil && st.JobStatus != *e.js {
		t.Errorf("job status %q, want %q", st.JobStatus, *e.js)
	}
	if e.effects != nil && !slices.Equal(kinds(p), e.effects) {
		t.Errorf("effects %v, want %v", kinds(p), e.effects)
	}
	if e.events != nil && !slices.Equal(reasons(p), e.events) {
		t.Errorf("events %v, want %v", p.Events, e.events)
	}
	if e.message != "" && !strings.Contains(st.Message, e.message) {
		t.Errorf("message %q, want it to contain %q", st.Message, e.message)
	}
	if e.wakeAt != 0 && !p.Wake.At.Equal(t0.Add(e.wakeAt)) {
		t.Errorf("wakes at %v, want t0+%s", p.Wake.At.Sub(t0), e.wakeAt)
	}
	if e.soon && !p.Wake.Soon {
		t.Error("does not come back soon")
	}
	if e.noWake && (p.Wake.Soon || !p.Wake.At.IsZero()) {
		t.Errorf("wakes (%+v), want no wake-up", p.Wake)
	}
	if len(textBreaches(p)) > 0 {
		t.Errorf("text: %v", textBreaches(p))
	}
}

func js(s rayv1.JobStatus) *rayv1.JobStatus { return &s }

// sameStatus reports whether the plan kept the stored status itself.
func sameStatus(p Plan, job *rayv1.RayJob) bool { return reflect.DeepEqual(p.Status, job.Status) }
