package raygatectl

import (
	"bytes"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
)

func at(d time.Duration) *metav1.Time { t := metav1.NewTime(now.Add(d)); return &t }

// succeeded is the RayJob sample after its run: SUCCEEDED, Complete.
func succeeded() *rayv1.RayJob {
	return &rayv1.RayJob{
		ObjectMeta: metav1.ObjectMeta{Name: "rayjob-sample", Namespace: "default", Generation: 1},
		Spec:       rayv1.RayJobSpec{Entrypoint: "python -c 'print(1)'", ShutdownAfterJobFinishes: true, TTLSecondsAfterFinished: 30, ActiveDeadlineSeconds: ptr.To[int32](600)},
		Status: rayv1.RayJobStatus{
			ObservedGeneration: 1, JobId: "rayjob-sample-x7k2p", RayClusterName: "rayjob-sample-4hw2t",
			DashboardURL: "rayjob-sample-4hw2t-head-svc.default.svc.cluster.local:8265",
			JobStatus:    rayv1.JobStatusSucceeded, JobDeploymentStatus: rayv1.JobDeploymentStatusComplete,
			StartTime: at(-90 * time.Second), EndTime: at(-20 * time.Second),
			RayJobStatusInfo: rayv1.RayJobStatusInfo{StartTime: at(-60 * time.Second), EndTime: at(-21 * time.Second)},
			Succeeded:        ptr.To[int32](1), Failed: ptr.To[int32](0),
			RayClusterStatus: rayv1.RayClusterStatus{State: rayv1.Ready, ReadyWorkerReplicas: 1, DesiredWorkerReplicas: 1},
		},
	}
}

// initializing waits for its cluster, with both deadlines ahead.
func initializing() *rayv1.RayJob {
	job := succeeded()
	job.Spec.SubmissionMode = rayv1.HTTPMode
	job.Spec.PreRunningDeadlineSeconds = ptr.To[int32](300)
	job.Status = rayv1.RayJobStatus{
		ObservedGeneration: 1, JobId: "rayjob-sample-x7k2p", RayClusterName: "rayjob-sample-4hw2t",
		JobDeploymentStatus: rayv1.JobDeploymentStatusInitializing, StartTime: at(-100 * time.Second),
		Message:          "RayCluster rayjob-sample-4hw2t is not ready yet",
		RayClusterStatus: rayv1.RayClusterStatus{ReadyWorkerReplicas: 0, DesiredWorkerReplicas: 1},
	}
	return job
}

// deadlineExceeded ran past activeDeadlineSeconds.
func deadlineExceeded() *rayv1.RayJob {
	job := succeeded()
	job.Status.JobStatus, job.Status.JobDeploymentStatus, job.Status.Reason = rayv1.JobStatusStopped, rayv1.JobDeploymentStatusFailed, rayv1.DeadlineExceeded
	job.Status.Message = "The RayJob has passed the activeDeadlineSeconds. StartTime: 2026-11-26T09:50:00Z. ActiveDeadlineSeconds: 600"
	job.Status.Succeeded, job.Status.Failed = ptr.To[int32](0), ptr.To[int32](1)
	return job
}

func TestRenderRayJob(t *testing.T) {
	for _, tc := range []struct {
		golden string
		job    *rayv1.RayJob
		render func(*bytes.Buffer, JobView) error
	}{
		{"job-status-succeeded.golden", succeeded(), func(b *bytes.Buffer, v JobView) error { return RenderJobStatus(b, v) }},
		{"job-why-succeeded.golden", succeeded(), func(b *bytes.Buffer, v JobView) error { return RenderJobWhy(b, v) }},
		{"job-status-initializing.golden", initializing(), func(b *bytes.Buffer, v JobView) error { return RenderJobStatus(b, v) }},
		{"job-why-initializing.golden", initializing(), func(b *bytes.Buffer, v JobView) error { return RenderJobWhy(b, v) }},
		{"job-status-deadline.golden", deadlineExceeded(), func(b *bytes.Buffer, v JobView) error { return RenderJobStatus(b, v) }},
		{"job-why-deadline.golden", deadlineExceeded(), func(b *bytes.Buffer, v JobView) error { return RenderJobWhy(b, v) }},
	} {
		t.Run(tc.golden, func(t *testing.T) {
			var b bytes.Buffer
			if err := tc.render(&b, JobView{Job: tc.job, Now: now}); err != nil {
				t.Fatal(err)
			}
			checkGolden(t, tc.golden, b.Bytes())
		})
	}
}

// Every deployment status and failure reason is explained in its own words.
func TestJobWhy(t *testing.T) {
	with := func(change func(*rayv1.RayJob)) *rayv1.RayJob {
		job := succeeded()
		change(job)
		return job
	}
	failed := func(reason rayv1.JobFailedReason, mode rayv1.JobSubmissionMode) *rayv1.RayJob {
		return with(func(j *rayv1.RayJob) {
			j.Spec.SubmissionMode = mode
			j.Status.JobDeploymentStatus, j.Status.Reason = rayv1.JobDeploymentStatusFailed, reason
		})
	}
	status := func(s rayv1.JobDeploymentStatus) *rayv1.RayJob {
		return with(func(j *rayv1.RayJob) { j.Status.JobDeploymentStatus = s })
	}
	for _, tc := range []struct {
		name string
		job  *rayv1.RayJob
		want string
	}{
		{"new", status(rayv1.JobDeploymentStatusNew), "has not started"},
		{"initializing K8sJobMode", status(rayv1.JobDeploymentStatusInitializing), "RayCluster rayjob-sample-4hw2t and waits until it is ready; then the submitter Job runs ray job submit"},
		{"initializing SidecarMode", with(func(j *rayv1.RayJob) {
			j.Spec.SubmissionMode, j.Status.JobDeploymentStatus = rayv1.SidecarMode, rayv1.JobDeploymentStatusInitializing
		}), "the submitter container in its head pod"},
		{"waiting", status(rayv1.JobDeploymentStatusWaiting), `kubectl patch rayjob rayjob-sample --type=merge -p '{"spec":{"jobId":"<id>"}}'`},
		{"waiting: the dashboard to submit to", status(rayv1.JobDeploymentStatusWaiting),
			"ray job submit --address http://rayjob-sample-4hw2t-head-svc.default.svc.cluster.local:8265 --submission-id <id> -- <entrypoint>"},
		{"running without a status from Ray yet", with(func(j *rayv1.RayJob) {
			j.Status.JobDeploymentStatus, j.Status.JobStatus = rayv1.JobDeploymentStatusRunning, rayv1.JobStatusNew
		}), "Ray job rayjob-sample-x7k2p has no status from the Jobs API yet"},
		{"running", with(func(j *rayv1.RayJob) {
			j.Status.JobDeploymentStatus, j.Status.JobStatus = rayv1.JobDeploymentStatusRunning, rayv1.JobStatusRunning
		}), "Ray job rayjob-sample-x7k2p is RUNNING on RayCluster rayjob-sample-4hw2t"},
		{"complete", succeeded(), "Ray job rayjob-sample-x7k2p succeeded"},
		{"stopped", with(func(j *rayv1.RayJob) { j.Status.JobStatus = rayv1.JobStatusStopped }), "was stopped"},
		{"AppFailed", failed(rayv1.AppFailed, rayv1.K8sJobMode), "Failed (AppFailed): the Ray job failed"},
		{"SubmissionFailed K8sJobMode", failed(rayv1.SubmissionFailed, rayv1.K8sJobMode), "the submitter Job failed: kubectl logs job/rayjob-sample"},
		{"SubmissionFailed HTTPMode", failed(rayv1.SubmissionFailed, rayv1.HTTPMode), "the Ray Jobs API refused the submission"},
		{"SubmissionFailed SidecarMode", failed(rayv1.SubmissionFailed, rayv1.SidecarMode), "submitter container in the head pod exited"},
		{"DeadlineExceeded", failed(rayv1.DeadlineExceeded, rayv1.K8sJobMode), "longer than activeDeadlineSeconds (600)"},
		{"PreRunningDeadlineExceeded", failed(rayv1.PreRunningDeadlineExceeded, rayv1.K8sJobMode), "did not reach Running within preRunningDeadlineSeconds"},
		{"JobStatusCheckTimeoutExceeded", failed(rayv1.JobStatusCheckTimeoutExceeded, rayv1.K8sJobMode), "RAYJOB_STATUS_CHECK_TIMEOUT_SECONDS"},
		{"grace period", failed(rayv1.JobDeploymentStatusTransitionGracePeriodExceeded, rayv1.K8sJobMode), "grace period"},
		{"ValidationFailed", status(rayv1.JobDeploymentStatusValidationFailed), "breaks an admission rule"},
		{"Suspending", status(rayv1.JobDeploymentStatusSuspending), "spec.suspend is true"},
		{"Suspended", status(rayv1.JobDeploymentStatusSuspended), "until spec.suspend is false"},
		{"Retrying", with(func(j *rayv1.RayJob) {
			j.Status.JobDeploymentStatus, j.Status.Failed, j.Spec.BackoffLimit = rayv1.JobDeploymentStatusRetrying, ptr.To[int32](1), ptr.To[int32](2)
		}), "attempt 1 failed and backoffLimit 2 allows another"},
		{"unknown", status("Exploded"), `"Exploded" is not one raygate writes`},
		{"managed by MultiKueue", with(func(j *rayv1.RayJob) {
			j.Spec.ManagedBy = ptr.To("kueue.x-k8s.io/multikueue")
			j.Status = rayv1.RayJobStatus{}
		}), "spec.managedBy is kueue.x-k8s.io/multikueue"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := RenderJobWhy(&b, JobView{Job: tc.job, Now: now}); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(b.String(), tc.want) {
				t.Errorf("why lacks %q:\n%s", tc.want, b.String())
			}
		})
	}
}

func TestParseTarget(t *testing.T) {
	for _, tc := range []struct {
		args    []string
		want    Target
		wantErr string
	}{
		{args: []string{"fruit"}, want: Target{Kind: rayv1.RayServiceKind, Name: "fruit"}},
		{args: []string{"rayjob", "sample"}, want: Target{Kind: rayv1.RayJobKind, Name: "sample"}},
		{args: []string{"RayJobs", "sample"}, want: Target{Kind: rayv1.RayJobKind, Name: "sample"}},
		{args: []string{"rayjob/sample"}, want: Target{Kind: rayv1.RayJobKind, Name: "sample"}},
		{args: []string{"rayjobs.ray.io/sample"}, want: Target{Kind: rayv1.RayJobKind, Name: "sample"}},
		{args: []string{"rayservice", "fruit"}, want: Target{Kind: rayv1.RayServiceKind, Name: "fruit"}},
		{args: []string{"rayservices.ray.io/fruit"}, want: Target{Kind: rayv1.RayServiceKind, Name: "fruit"}},
		{args: []string{"raycluster", "c"}, want: Target{Kind: rayv1.RayClusterKind, Name: "c"}},
		{args: []string{"rayclusters.ray.io/c"}, want: Target{Kind: rayv1.RayClusterKind, Name: "c"}},
		{args: []string{"pod", "c"}, wantErr: `not "pod"`},
		{args: []string{"rayjob/"}, wantErr: "no name"},
		{args: []string{"rayjob", ""}, wantErr: "no name"},
		{args: nil, wantErr: "got 0 arguments"},
	} {
		got, err := ParseTarget(tc.args)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("ParseTarget(%q) error %v, want one with %q", tc.args, err, tc.wantErr)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("ParseTarget(%q) = %+v, %v; want %+v", tc.args, got, err, tc.want)
		}
	}
}
