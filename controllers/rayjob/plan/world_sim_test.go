package plan

import (
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/rayjob"
)

// simCluster is a RayCluster with a head pod, its Jobs API and, in SidecarMode, the
// submitter container in the head pod.
type simCluster struct {
	rc         *rayv1.RayCluster
	ownedByJob bool
	readyAt    time.Time // zero: never ready
	deletingAt time.Time
	// headLostAt: the head pod was lost then; it comes back headRestart later, except in
	// SidecarMode (the cluster is told not to recreate it). Its jobs are lost with it.
	headLostAt    time.Time
	dashboardDown bool
	jobs          map[string]*simRayJob
	sidecar       *simSidecar
}

func (w *world) newCluster(rc *rayv1.RayCluster) *simCluster {
	rc = rc.DeepCopy()
	rc.UID = types.UID("uid-" + rc.Name)
	rc.CreationTimestamp = metav1.NewTime(w.now)
	c := &simCluster{rc: rc, jobs: map[string]*simRayJob{}}
	if ref := metav1.GetControllerOf(rc); ref != nil && ref.UID == jobUID {
		c.ownedByJob = true
	}
	if !w.clusterNeverReady {
		c.readyAt = w.now.Add(clusterStart)
	}
	for _, ctr := range rc.Spec.HeadGroupSpec.Template.Spec.Containers {
		if ctr.Name == rayv1.SubmitterContainerName {
			c.sidecar = &simSidecar{id: envOf(ctr, rayjob.EnvSubmissionID), restarts: ctr.RestartPolicy != nil}
		}
	}
	return c
}

func envOf(c corev1.Container, name string) string {
	for _, e := range c.Env {
		if e.Name == name {
			return e.Value
		}
	}
	return ""
}

// headUp: the head pod exists.
func (c *simCluster) headUp(now time.Time) bool {
	if c.headLostAt.IsZero() {
		return true
	}
	return c.sidecar == nil && !now.Before(c.headLostAt.Add(headRestart))
}

func (c *simCluster) ready(now time.Time) bool {
	return !c.readyAt.IsZero() && !now.Before(c.readyAt) && c.headUp(now) && c.deletingAt.IsZero()
}

// reachable: the Jobs API answers.
func (c *simCluster) reachable(now time.Time) bool { return c.ready(now) && !c.dashboardDown }

func (c *simCluster) status(now time.Time) rayv1.RayClusterStatus {
	if !c.ready(now) {
		return rayv1.RayClusterStatus{DesiredWorkerReplicas: 1}
	}
	return rayv1.RayClusterStatus{State: rayv1.Ready, DesiredWorkerReplicas: 1, ReadyWorkerReplicas: 1, AvailableWorkerReplicas: 1}
}

func (c *simCluster) headService() *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: c.rc.Name + "-head-svc", Namespace: c.rc.Namespace},
		Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "gcs", Port: 6379}, {Name: "dashboard", Port: 8265}}},
	}
}

func (c *simCluster) headPod(now time.Time) *corev1.Pod {
	if !c.headUp(now) {
		return nil
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: c.rc.Name + "-head", Namespace: c.rc.Namespace}}
	if c.sidecar != nil {
		pod.Status.ContainerStatuses = []corev1.ContainerStatus{c.sidecar.status()}
	}
	return pod
}

// submit runs a job on the cluster's Jobs API; it reports whether the id was taken.
func (w *world) submit(c *simCluster, id string) (exists bool) {
	if c.jobs[id] != nil {
		w.duplicates++
		return true
	}
	a := w.app
	c.jobs[id] = &simRayJob{id: id, at: w.now, pending: a.pending, run: a.run, outcome: a.outcome, message: a.message, unknownWord: a.unknownWord}
	if w.submissions[c.rc.Name] == nil {
		w.submissions[c.rc.Name] = map[string]int{}
	}
	w.submissions[c.rc.Name][id]++
	return false
}

// userSubmit runs a job the user submitted (InteractiveMode): not the operator's, not counted.
func (w *world) userSubmit(c *simCluster, id string) {
	a := w.app
	c.jobs[id] = &simRayJob{id: id, at: w.now, pending: a.pending, run: a.run, outcome: a.outcome, message: a.message}
}

// simRayJob is a Ray job: PENDING, then RUNNING, then its outcome (or STOPPED when stopped).
type simRayJob struct {
	id                   string
	at                   time.Time
	pending, run         time.Duration
	outcome              rayv1.JobStatus
	message, unknownWord string
	stoppedAt            time.Time
}

func (j *simRayJob) end() time.Time {
	end := j.at.Add(j.pending + j.run)
	if !j.stoppedAt.IsZero() && j.stoppedAt.Before(end) {
		return j.stoppedAt
	}
	return end
}

func (j *simRayJob) status(now time.Time) rayv1.JobStatus {
	switch {
	case !now.Before(j.end()) && !j.stoppedAt.IsZero() && !j.stoppedAt.After(j.end()):
		return rayv1.JobStatusStopped
	case !now.Before(j.end()):
		return j.outcome
	case now.Before(j.at.Add(j.pending)):
		return rayv1.JobStatusPending
	}
	return rayv1.JobStatusRunning
}

func (j *simRayJob) info(now time.Time) JobInfo {
	info := JobInfo{Status: j.status(now), Message: j.message, StartTimeMs: uint64(j.at.UnixMilli())}
	if rayv1.IsJobTerminal(info.Status) {
		info.EndTimeMs = uint64(j.end().UnixMilli())
	} else if j.unknownWord != "" && info.Status == rayv1.JobStatusRunning {
		info.Status, info.UnknownStatus = rayv1.JobStatusPending, j.unknownWord
	}
	return info
}

// simSidecar is the submitter container in a SidecarMode head pod.
type simSidecar struct {
	id       string
	restarts bool // restartPolicy OnFailure (SidecarSubmitterRestart)
	// submitted: the job is on the cluster (or was found there).
	submitted bool
	// exit is the exit code once terminated (nil: running); finishedAt when.
	exit          *int32
	finishedAt    time.Time
	restartCount  int32
	lastExit      *int32
	lastFinished  time.Time
	nextAttemptAt time.Time
}

func (s *simSidecar) status() corev1.ContainerStatus {
	cs := corev1.ContainerStatus{Name: rayv1.SubmitterContainerName, RestartCount: s.restartCount}
	if s.exit != nil {
		cs.State.Terminated = &corev1.ContainerStateTerminated{ExitCode: *s.exit, Reason: "Error", FinishedAt: metav1.NewTime(s.finishedAt).Rfc3339Copy()}
		if *s.exit == 0 {
			cs.State.Terminated.Reason = "Completed"
		}
	} else {
		cs.State.Running = &corev1.ContainerStateRunning{}
	}
	if s.lastExit != nil {
		cs.LastTerminationState.Terminated = &corev1.ContainerStateTerminated{ExitCode: *s.lastExit, FinishedAt: metav1.NewTime(s.lastFinished).Rfc3339Copy()}
	}
	return cs
}

// sidecarRestartDelay is the kubelet's back-off before restarting the failed sidecar.
const sidecarRestartDelay = 10 * time.Second

// next is the sidecar's next step (zero: none).
func (s *simSidecar) next(w *world, c *simCluster) time.Time {
	if c.readyAt.IsZero() || !c.headUp(w.now) || !c.deletingAt.IsZero() {
		return time.Time{}
	}
	switch {
	case s.exit != nil && *s.exit != 0 && s.restarts:
		return s.finishedAt.Add(sidecarRestartDelay)
	case s.exit != nil:
		return time.Time{}
	case !s.submitted:
		return latest(c.readyAt.Add(submitDelay), s.nextAttemptAt)
	}
	if j := c.jobs[s.id]; j != nil {
		return j.end().Add(followDelay)
	}
	return w.now // the job was lost: `ray job logs` fails
}

func (s *simSidecar) fire(w *world, c *simCluster) {
	terminate := func(code int32) { s.exit, s.finishedAt = &code, w.now }
	switch {
	case s.exit != nil && *s.exit != 0 && s.restarts:
		s.lastExit, s.lastFinished, s.exit = s.exit, s.finishedAt, nil
		s.restartCount++
		s.nextAttemptAt = w.now
	case !s.submitted:
		if w.app.submitFails || !c.reachable(w.now) {
			terminate(1)
			return
		}
		w.submit(c, s.id)
		s.submitted = true
	default:
		j := c.jobs[s.id]
		if j == nil || j.status(w.now) == rayv1.JobStatusFailed {
			terminate(1)
		} else {
			terminate(0)
		}
	}
}

func latest(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// simSubmitter is the submitter Job of K8sJobMode: its pod waits, checks whether the id was
// submitted, submits it if not, then follows the job to its end; a failing pod is retried
// backoffLimit times.
type simSubmitter struct {
	job        *batchv1.Job
	createdAt  time.Time
	deletingAt time.Time
	id         string
	cluster    string
	failures   int32
	nextTry    time.Time
	submitted  bool
	// done is the final condition (nil: running).
	done *batchv1.JobCondition
}

func newSubmitter(j *batchv1.Job, now time.Time) *simSubmitter {
	j = j.DeepCopy()
	j.UID = types.UID("uid-submitter-" + j.Name)
	return &simSubmitter{job: j, createdAt: now, nextTry: now.Add(submitDelay),
		id: submitterEnv(j, rayjob.EnvSubmissionID), cluster: clusterOfAddress(submitterEnv(j, rayjob.EnvDashboardAddress))}
}

func (s *simSubmitter) object(now time.Time) *batchv1.Job {
	j := s.job.DeepCopy()
	if s.done != nil {
		j.Status.Conditions = []batchv1.JobCondition{*s.done}
	}
	if !s.deletingAt.IsZero() {
		t := metav1.NewTime(s.deletingAt)
		j.DeletionTimestamp = &t
	}
	return j
}

func (s *simSubmitter) next(w *world) time.Time {
	switch {
	case !s.deletingAt.IsZero():
		return s.deletingAt.Add(deleteDelay)
	case s.done != nil:
		return time.Time{}
	case !s.submitted:
		return s.nextTry
	}
	if c := w.clusters[s.cluster]; c != nil && c.jobs[s.id] != nil && c.headUp(w.now) {
		return c.jobs[s.id].end().Add(followDelay)
	}
	return w.now // the job or its cluster was lost
}

func (s *simSubmitter) fire(w *world) {
	if !s.deletingAt.IsZero() {
		w.submitter = nil
		return
	}
	c := w.clusters[s.cluster]
	finish := func(t batchv1.JobConditionType, reason string) {
		s.done = &batchv1.JobCondition{Type: t, Status: corev1.ConditionTrue, Reason: reason, LastTransitionTime: metav1.NewTime(w.now).Rfc3339Copy()}
	}
	if !s.submitted {
		if w.app.submitFails || c == nil || !c.reachable(w.now) {
			s.failures++
			if s.failures > *s.job.Spec.BackoffLimit {
				finish(batchv1.JobFailed, "BackoffLimitExceeded")
				return
			}
			s.nextTry = w.now.Add(submitterWait)
			return
		}
		w.submit(c, s.id) // after `ray job status` said it is not there (or it is: no second run)
		s.submitted = true
		return
	}
	j := (*simRayJob)(nil)
	if c != nil && c.headUp(w.now) {
		j = c.jobs[s.id]
	}
	switch {
	case j == nil || j.status(w.now) == rayv1.JobStatusFailed:
		finish(batchv1.JobFailed, "BackoffLimitExceeded")
	default:
		finish(batchv1.JobComplete, "Completed")
	}
}
