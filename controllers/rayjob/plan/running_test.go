package plan

import (
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/features"
)

// runningJob is a Running job whose Ray job status is js.
func runningJob(mode rayv1.JobSubmissionMode, status rayv1.JobStatus, edit ...func(*rayv1.RayJob)) *rayv1.RayJob {
	return storedJob(mode, rayv1.JobDeploymentStatusRunning, append([]func(*rayv1.RayJob){func(j *rayv1.RayJob) { j.Status.JobStatus = status }}, edit...)...)
}

// withService: the job's head Service exists and points at the stored cluster.
func withService(job *rayv1.RayJob, o Observed) Observed {
	o.JobService = &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "train-head-svc", Namespace: "ml",
		OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(job, rayv1.GroupVersion.WithKind(rayv1.RayJobKind))}},
		Spec: corev1.ServiceSpec{Selector: map[string]string{rayv1.ClusterLabelKey: storedCluster}}}
	if o.Cluster == nil {
		o.Cluster = ownCluster(job, true)
	}
	return o
}

func TestRunningHTTP(t *testing.T) {
	http := func(status rayv1.JobStatus) *rayv1.RayJob { return runningJob(rayv1.HTTPMode, status) }
	notFound := &JobRead{At: t0.Add(10 * time.Second), Outcome: ReadNotFound}
	for _, tc := range []struct {
		name string
		job  *rayv1.RayJob
		jobs JobsView
		want expect
	}{
		{name: "nothing heard yet: read", job: http(""), want: expect{ds: rayv1.JobDeploymentStatusRunning, effects: []string{"ReadJob"}, wakeAt: 14 * time.Second}},
		{name: "an answer about another cluster says nothing", job: http(""), jobs: JobsView{Cluster: "other", JobID: storedID, Read: notFound},
			want: expect{effects: []string{"ReadJob"}}},
		{name: "not found: submit", job: http(""), jobs: view(notFound, nil), want: expect{effects: []string{"SubmitJob"}, wakeAt: 14 * time.Second}},
		{name: "not found, the submission under way: wait", job: http(""), jobs: view(notFound, &SubmitAnswer{Outcome: SubmitPending}), want: expect{effects: []string{}}},
		{name: "accepted after the read: PENDING, read again", job: http(""), jobs: view(notFound, &SubmitAnswer{At: t0.Add(10500 * time.Millisecond), Outcome: SubmitAccepted}),
			want: expect{js: js(rayv1.JobStatusPending), effects: []string{"ReadJob"}, events: []string{EventSubmittedJob}}},
		{name: "already exists counts as submitted", job: http(""), jobs: view(notFound, &SubmitAnswer{At: t0.Add(10500 * time.Millisecond), Outcome: SubmitAlreadyExists}),
			want: expect{js: js(rayv1.JobStatusPending), effects: []string{"ReadJob"}}},
		{name: "refused: the submission failed", job: http(""), jobs: view(notFound, &SubmitAnswer{At: t0.Add(9 * time.Second), Outcome: SubmitRefused, Message: "bad runtime_env " + hostile}),
			want: expect{ds: rayv1.JobDeploymentStatusFailed, reason: rayv1.SubmissionFailed, message: "refused the submission", effects: []string{}}},
		{name: "failed, then not found: submit again, the status-check timer runs", job: http(""), jobs: view(notFound, &SubmitAnswer{At: t0.Add(9 * time.Second), Outcome: SubmitFailed}),
			want: expect{effects: []string{"SubmitJob"}}},
		{name: "failed after the read: read first", job: http(""), jobs: view(notFound, &SubmitAnswer{At: t0.Add(11 * time.Second), Outcome: SubmitFailed}),
			want: expect{effects: []string{"ReadJob"}}},
		{name: "a job the Jobs API had and lost", job: http(rayv1.JobStatusRunning), jobs: view(notFound, nil),
			want: expect{ds: rayv1.JobDeploymentStatusFailed, reason: rayv1.AppFailed, message: "no longer knows"}},
		{name: "running: the status and a sanitized message", job: http(rayv1.JobStatusPending), jobs: view(found(10*time.Second, rayv1.JobStatusRunning, "step 3 "+hostile), nil),
			want: expect{ds: rayv1.JobDeploymentStatusRunning, js: js(rayv1.JobStatusRunning), message: "step 3", effects: []string{}, wakeAt: 13 * time.Second}},
		{name: "succeeded: Complete", job: http(rayv1.JobStatusRunning), jobs: view(found(10*time.Second, rayv1.JobStatusSucceeded, "done"), nil),
			want: expect{ds: rayv1.JobDeploymentStatusComplete, js: js(rayv1.JobStatusSucceeded), events: []string{EventCompleted}, soon: true}},
		{name: "stopped: Complete", job: http(rayv1.JobStatusRunning), jobs: view(found(10*time.Second, rayv1.JobStatusStopped, ""), nil),
			want: expect{ds: rayv1.JobDeploymentStatusComplete, js: js(rayv1.JobStatusStopped)}},
		{name: "failed: AppFailed", job: http(rayv1.JobStatusRunning), jobs: view(found(10*time.Second, rayv1.JobStatusFailed, "Traceback"), nil),
			want: expect{ds: rayv1.JobDeploymentStatusFailed, reason: rayv1.AppFailed, js: js(rayv1.JobStatusFailed), message: "Traceback", events: []string{EventFailed}}},
		{name: "an unknown status never ends the job", job: http(rayv1.JobStatusRunning),
			jobs: view(&JobRead{At: t0.Add(10 * time.Second), Outcome: ReadFound, Info: JobInfo{Status: rayv1.JobStatusPending, UnknownStatus: "DONE\x1b[0m"}}, nil),
			want: expect{ds: rayv1.JobDeploymentStatusRunning, js: js(rayv1.JobStatusPending), message: "unknown status"}},
		{name: "a read failed: the timer starts at the failure", job: http(rayv1.JobStatusRunning), jobs: view(&JobRead{At: t0.Add(9500 * time.Millisecond), Outcome: ReadFailed, Err: "EOF"}, nil),
			want: expect{ds: rayv1.JobDeploymentStatusRunning, effects: []string{}, wakeAt: 12500 * time.Millisecond}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := Decide(inputsFor(tc.job, 11*time.Second, withService(tc.job, Observed{Jobs: tc.jobs})))
			tc.want.check(t, p)
			if strings.Contains(tc.name, "timer starts") && !p.Status.JobStatusCheckFailureStartTime.Equal(at(9*time.Second)) {
				t.Errorf("failure start %v", p.Status.JobStatusCheckFailureStartTime)
			}
		})
	}
}

func TestRunningTimers(t *testing.T) {
	timer := func(d time.Duration) func(*rayv1.RayJob) {
		return func(j *rayv1.RayJob) { j.Status.JobStatusCheckFailureStartTime = at(d) }
	}
	ended := func(j *rayv1.RayJob) { j.Status.RayJobStatusInfo.EndTime = at(time.Minute) }
	for _, tc := range []struct {
		name string
		job  *rayv1.RayJob
		now  time.Duration
		want expect
	}{
		{name: "status checks failing past the timeout", job: runningJob(rayv1.HTTPMode, rayv1.JobStatusRunning, timer(0)), now: DefaultStatusCheckTimeout,
			want: expect{ds: rayv1.JobDeploymentStatusFailed, reason: rayv1.JobStatusCheckTimeoutExceeded, effects: []string{}}},
		{name: "... not retried", job: runningJob(rayv1.HTTPMode, rayv1.JobStatusRunning, timer(0), func(j *rayv1.RayJob) { *j.Spec.BackoffLimit = 3 }), now: DefaultStatusCheckTimeout,
			want: expect{ds: rayv1.JobDeploymentStatusFailed, reason: rayv1.JobStatusCheckTimeoutExceeded}},
		{name: "the Ray job ended and the submitter never finished", job: runningJob(rayv1.K8sJobMode, rayv1.JobStatusSucceeded, ended), now: time.Minute + DefaultTransitionGracePeriod,
			want: expect{ds: rayv1.JobDeploymentStatusComplete, reason: rayv1.JobDeploymentStatusTransitionGracePeriodExceeded}},
		{name: "... failed", job: runningJob(rayv1.K8sJobMode, rayv1.JobStatusFailed, ended), now: time.Minute + DefaultTransitionGracePeriod,
			want: expect{ds: rayv1.JobDeploymentStatusFailed, reason: rayv1.JobDeploymentStatusTransitionGracePeriodExceeded}},
		{name: "suspend first", job: runningJob(rayv1.K8sJobMode, rayv1.JobStatusRunning, timer(0), func(j *rayv1.RayJob) { j.Spec.Suspend = true }), now: time.Hour,
			want: expect{ds: rayv1.JobDeploymentStatusSuspending}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.want.check(t, Decide(inputsFor(tc.job, tc.now, withService(tc.job, Observed{}))))
		})
	}
}

func TestRunningK8sJobMode(t *testing.T) {
	job := runningJob(rayv1.K8sJobMode, rayv1.JobStatusRunning)
	at20 := t0.Add(20 * time.Second)
	for _, tc := range []struct {
		name string
		sub  *batchv1.Job
		read *JobRead
		now  time.Duration
		want expect
	}{
		{name: "Ray says SUCCEEDED, the submitter still follows: wait for it, and the grace period", sub: submitterJob(job, "", t0), read: found(20*time.Second, rayv1.JobStatusSucceeded, ""), now: 21 * time.Second,
			want: expect{ds: rayv1.JobDeploymentStatusRunning, js: js(rayv1.JobStatusSucceeded), effects: []string{}, wakeAt: 19*time.Second + DefaultTransitionGracePeriod}},
		{name: "both done: Complete", sub: submitterJob(job, batchv1.JobComplete, at20), read: found(20*time.Second, rayv1.JobStatusSucceeded, ""), now: 21 * time.Second,
			want: expect{ds: rayv1.JobDeploymentStatusComplete}},
		{name: "the submitter finished after the last read: read now", sub: submitterJob(job, batchv1.JobComplete, at20), read: found(19*time.Second, rayv1.JobStatusRunning, ""), now: 21 * time.Second,
			want: expect{ds: rayv1.JobDeploymentStatusRunning, effects: []string{"ReadJob"}}},
		{name: "the submitter finished, a read sent 30 s later finds Ray still running", sub: submitterJob(job, batchv1.JobComplete, at20), read: found(50*time.Second, rayv1.JobStatusRunning, ""), now: 51 * time.Second,
			want: expect{ds: rayv1.JobDeploymentStatusFailed, js: js(rayv1.JobStatusFailed), reason: rayv1.JobDeploymentStatusTransitionGracePeriodExceeded}},
		{name: "the submitter finished, the job is not there", sub: submitterJob(job, batchv1.JobComplete, at20), read: &JobRead{At: at20.Add(time.Second), Outcome: ReadNotFound}, now: 22 * time.Second,
			want: expect{ds: rayv1.JobDeploymentStatusFailed, reason: rayv1.AppFailed, message: "Submitter completed"}},
		{name: "the submitter failed, Ray said FAILED since: AppFailed", sub: submitterJob(job, batchv1.JobFailed, at20), read: found(21*time.Second, rayv1.JobStatusFailed, "Traceback"), now: 22 * time.Second,
			want: expect{ds: rayv1.JobDeploymentStatusFailed, reason: rayv1.AppFailed, message: "Traceback"}},
		{name: "the submitter failed, the last read is older: read before deciding", sub: submitterJob(job, batchv1.JobFailed, at20), read: found(19*time.Second, rayv1.JobStatusRunning, ""), now: 21 * time.Second,
			want: expect{ds: rayv1.JobDeploymentStatusRunning, effects: []string{"ReadJob"}, wakeAt: 24 * time.Second}},
		{name: "the submitter failed, no job: SubmissionFailed", sub: submitterJob(job, batchv1.JobFailed, at20), read: &JobRead{At: at20.Add(time.Second), Outcome: ReadNotFound}, now: 22 * time.Second,
			want: expect{ds: rayv1.JobDeploymentStatusFailed, reason: rayv1.SubmissionFailed, message: "Job submission has failed. Reason: BackoffLimitExceeded"}},
		{name: "no submitter: the Jobs API and the grace period decide", read: found(20*time.Second, rayv1.JobStatusSucceeded, ""), now: 21 * time.Second,
			want: expect{ds: rayv1.JobDeploymentStatusRunning, js: js(rayv1.JobStatusSucceeded)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.want.check(t, Decide(inputsFor(job, tc.now, withService(job, Observed{Submitter: tc.sub, Jobs: view(tc.read, nil)}))))
		})
	}
}

func TestRunningSidecarMode(t *testing.T) {
	job := runningJob(rayv1.SidecarMode, rayv1.JobStatusRunning)
	pod := func(s simSidecar) *corev1.Pod {
		return &corev1.Pod{Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{Name: "ray-head"}, s.status()}}}
	}
	code := func(c int32) *int32 { return &c }
	at20 := t0.Add(20 * time.Second)
	for _, tc := range []struct {
		name     string
		pod      *corev1.Pod
		restarts bool
		read     *JobRead
		want     expect
	}{
		{name: "the head pod is gone", want: expect{ds: rayv1.JobDeploymentStatusFailed, reason: rayv1.AppFailed, message: "Ray head pod not found."}},
		{name: "the submitter exited 1 before any job: SubmissionFailed", pod: pod(simSidecar{exit: code(1), finishedAt: at20}), read: &JobRead{At: at20, Outcome: ReadNotFound},
			want: expect{ds: rayv1.JobDeploymentStatusFailed, reason: rayv1.SubmissionFailed, message: "terminated with exit code 1"}},
		{name: "with restarts, a failure below the limit is not the end", restarts: true, pod: pod(simSidecar{exit: code(1), finishedAt: at20, restartCount: 1, lastExit: code(1)}),
			read: found(21*time.Second, rayv1.JobStatusRunning, ""), want: expect{ds: rayv1.JobDeploymentStatusRunning, wakeAt: 24 * time.Second}},
		{name: "with restarts, past the limit", restarts: true, pod: pod(simSidecar{exit: code(1), finishedAt: at20, restartCount: 2, lastExit: code(1), lastFinished: at20}),
			read: &JobRead{At: at20, Outcome: ReadNotFound}, want: expect{ds: rayv1.JobDeploymentStatusFailed, reason: rayv1.SubmissionFailed, message: "maximum restart count"}},
		{name: "exited 0, Ray says SUCCEEDED", pod: pod(simSidecar{exit: code(0), finishedAt: at20}), read: found(21*time.Second, rayv1.JobStatusSucceeded, ""),
			want: expect{ds: rayv1.JobDeploymentStatusComplete}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := inputsFor(job, 22*time.Second, withService(job, Observed{HeadPod: tc.pod, Jobs: view(tc.read, nil)}))
			in.Settings.Gates = features.Static{features.SidecarSubmitterRestart: tc.restarts}
			tc.want.check(t, Decide(in))
		})
	}
}

func TestRunningCluster(t *testing.T) {
	job := runningJob(rayv1.HTTPMode, rayv1.JobStatusRunning)
	rc := ownCluster(job, true)
	going := rc.DeepCopy()
	going.DeletionTimestamp = at(0)
	foreignSvc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "train-head-svc"}}
	oldSvc := withService(job, Observed{}).JobService
	oldSvc.Spec.Selector[rayv1.ClusterLabelKey] = "train-older"
	read := view(found(10*time.Second, rayv1.JobStatusRunning, ""), nil)
	for _, tc := range []struct {
		name string
		obs  Observed
		want expect
	}{
		{name: "the cluster is gone: never created again mid-attempt", obs: Observed{Jobs: read}, want: expect{ds: rayv1.JobDeploymentStatusFailed, reason: rayv1.AppFailed, effects: []string{}}},
		{name: "the cluster is going", obs: Observed{Cluster: going, Jobs: read}, want: expect{ds: rayv1.JobDeploymentStatusFailed, reason: rayv1.AppFailed, effects: []string{}}},
		{name: "the cluster is someone else's", obs: Observed{Cluster: foreignCluster(storedCluster), Jobs: read}, want: expect{ds: rayv1.JobDeploymentStatusFailed, effects: []string{}}},
		{name: "the job's head Service is created", obs: Observed{Cluster: rc, Jobs: read}, want: expect{effects: []string{"PointJobService"}}},
		{name: "... pointed at the current cluster", obs: Observed{Cluster: rc, JobService: oldSvc, Jobs: read}, want: expect{effects: []string{"PointJobService"}}},
		{name: "... left alone when someone else's", obs: Observed{Cluster: rc, JobService: foreignSvc, Jobs: read}, want: expect{effects: []string{}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.want.check(t, Decide(inputsFor(job, 11*time.Second, tc.obs)))
		})
	}
}
