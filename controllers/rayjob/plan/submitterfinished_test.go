package plan

import (
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
)

// The submitter finished at t0+20s, so the 30 s the Ray job has to report a final status end
// at t0+50s. Only a read sent at or after that moment can show the job still not ended.
func TestSubmitterFinishedTimeout(t *testing.T) {
	job := runningJob(rayv1.K8sJobMode, rayv1.JobStatusRunning)
	finished := submitterJob(job, batchv1.JobComplete, t0.Add(20*time.Second))
	sent := func(sentAt, at time.Duration, outcome ReadOutcome, status rayv1.JobStatus) *JobRead {
		r := &JobRead{Sent: t0.Add(sentAt), At: t0.Add(at), Outcome: outcome}
		if outcome == ReadFound {
			r.Info = JobInfo{Status: status, Message: "m"}
			if rayv1.IsJobTerminal(status) {
				r.Info.EndTimeMs = uint64(t0.Add(sentAt).UnixMilli())
			}
		}
		if outcome == ReadFailed {
			r.Err = "context deadline exceeded"
		}
		return r
	}
	checkFailing := func(d time.Duration) func(*rayv1.RayJob) {
		return func(j *rayv1.RayJob) { j.Status.JobStatusCheckFailureStartTime = at(d) }
	}
	running := rayv1.JobDeploymentStatusRunning
	for _, tc := range []struct {
		name string
		job  *rayv1.RayJob
		read *JobRead
		now  time.Duration
		want expect
	}{
		{name: "before the deadline: read at the poll interval, wake at the deadline at the latest",
			read: found(39*time.Second, rayv1.JobStatusRunning, ""), now: 40 * time.Second,
			want: expect{ds: running, effects: []string{}, wakeAt: 42 * time.Second}},
		{name: "at the deadline, the last read was before it: read again, no failure",
			read: found(49*time.Second, rayv1.JobStatusRunning, ""), now: 50 * time.Second,
			want: expect{ds: running, js: js(rayv1.JobStatusRunning), effects: []string{"ReadJob"}, wakeAt: 52 * time.Second}},
		{name: "long past the deadline, raygate's own reads late: still no failure, one read asked",
			read: found(45*time.Second, rayv1.JobStatusRunning, ""), now: 90 * time.Second,
			want: expect{ds: running, effects: []string{"ReadJob"}, wakeAt: 93 * time.Second}},
		{name: "a read sent before the deadline and answered after it does not count",
			read: sent(49*time.Second, 51*time.Second, ReadFound, rayv1.JobStatusRunning), now: 51 * time.Second,
			want: expect{ds: running, effects: []string{"ReadJob"}}},
		{name: "a read sent after the deadline finds the job RUNNING: it fails",
			read: sent(50*time.Second, 51*time.Second, ReadFound, rayv1.JobStatusRunning), now: 51 * time.Second,
			want: expect{ds: rayv1.JobDeploymentStatusFailed, js: js(rayv1.JobStatusFailed), reason: rayv1.JobDeploymentStatusTransitionGracePeriodExceeded,
				message: "did not reach terminal state within 30s", effects: []string{}}},
		{name: "... PENDING with a word Ray does not have: it fails too",
			read: &JobRead{Sent: t0.Add(55 * time.Second), At: t0.Add(56 * time.Second), Outcome: ReadFound, Info: JobInfo{Status: rayv1.JobStatusPending, UnknownStatus: "ALMOST"}}, now: 56 * time.Second,
			want: expect{ds: rayv1.JobDeploymentStatusFailed, reason: rayv1.JobDeploymentStatusTransitionGracePeriodExceeded}},
		{name: "a read sent after the deadline finds it SUCCEEDED: Complete",
			read: sent(60*time.Second, 61*time.Second, ReadFound, rayv1.JobStatusSucceeded), now: 61 * time.Second,
			want: expect{ds: rayv1.JobDeploymentStatusComplete, js: js(rayv1.JobStatusSucceeded)}},
		{name: "a read sent after the deadline failed: no failure, the status-check timer starts",
			read: sent(50500*time.Millisecond, 51*time.Second, ReadFailed, ""), now: 51 * time.Second,
			want: expect{ds: running, effects: []string{}, wakeAt: 54 * time.Second}},
		{name: "reads failing ever since: the status-check timer ends the job",
			job:  runningJob(rayv1.K8sJobMode, rayv1.JobStatusRunning, checkFailing(51*time.Second)),
			read: sent(350*time.Second, 351*time.Second, ReadFailed, ""), now: 51*time.Second + DefaultStatusCheckTimeout,
			want: expect{ds: rayv1.JobDeploymentStatusFailed, reason: rayv1.JobStatusCheckTimeoutExceeded}},
		{name: "a read after the submitter finished finds no job: AppFailed at once",
			read: sent(22*time.Second, 22*time.Second, ReadNotFound, ""), now: 23 * time.Second,
			want: expect{ds: rayv1.JobDeploymentStatusFailed, reason: rayv1.AppFailed, message: "Submitter completed"}},
		{name: "a read sent before the submitter finished and answered after does not say the job is gone",
			read: sent(19*time.Second, 21*time.Second, ReadNotFound, ""), now: 21 * time.Second,
			want: expect{ds: running, effects: []string{"ReadJob"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			j := job
			if tc.job != nil {
				j = tc.job
			}
			tc.want.check(t, Decide(inputsFor(j, tc.now, withService(j, Observed{Submitter: finished, Jobs: view(tc.read, nil)}))))
		})
	}
}

// SidecarMode follows the same rule, from the submitter container's end.
func TestSubmitterFinishedTimeoutSidecar(t *testing.T) {
	job := runningJob(rayv1.SidecarMode, rayv1.JobStatusRunning)
	code := int32(0)
	sidecar := &simSidecar{exit: &code, finishedAt: t0.Add(20 * time.Second)}
	pod := &corev1.Pod{Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{Name: "ray-head"}, sidecar.status()}}}
	for _, tc := range []struct {
		name string
		read *JobRead
		now  time.Duration
		want expect
	}{
		{name: "past the deadline, the last read before it: read, no failure", read: found(45*time.Second, rayv1.JobStatusRunning, ""), now: 70 * time.Second,
			want: expect{ds: rayv1.JobDeploymentStatusRunning, effects: []string{"ReadJob"}}},
		{name: "a read after the deadline: RUNNING fails it", read: found(50*time.Second, rayv1.JobStatusRunning, ""), now: 51 * time.Second,
			want: expect{ds: rayv1.JobDeploymentStatusFailed, reason: rayv1.JobDeploymentStatusTransitionGracePeriodExceeded}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.want.check(t, Decide(inputsFor(job, tc.now, withService(job, Observed{HeadPod: pod, Jobs: view(tc.read, nil)}))))
		})
	}
}

// A saturated dashboard pool sends every read a minute after it was asked: the submitter's
// end is over 30 s past before raygate hears that the Ray job ended, and the job still
// completes.
func TestLateReadsDoNotFailTheJob(t *testing.T) {
	for _, mode := range []rayv1.JobSubmissionMode{rayv1.K8sJobMode, rayv1.SidecarMode} {
		t.Run(string(mode), func(t *testing.T) {
			w := newWorld(jobIn(mode).Obj())
			w.poolLag = time.Minute
			drive(t, w).quiet()
			st := w.job.Status
			if st.JobDeploymentStatus != rayv1.JobDeploymentStatusComplete || st.JobStatus != rayv1.JobStatusSucceeded || st.Reason != "" {
				t.Fatalf("status %s/%s (%s): %s", st.JobDeploymentStatus, st.JobStatus, st.Reason, st.Message)
			}
			if w.runs() != 1 {
				t.Errorf("submissions %v, want one", w.submissions)
			}
		})
	}
}
