package raygatectl

import (
	"fmt"
	"io"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/validation"
)

// JobView is what status and why read of a RayJob.
type JobView struct {
	Job *rayv1.RayJob
	// Now is when the view is rendered, for ages and the deadlines still ahead.
	Now time.Time
}

// submissionMode is the job's mode as stored (K8sJobMode when unset, as defaulted).
func submissionMode(job *rayv1.RayJob) rayv1.JobSubmissionMode {
	if job.Spec.SubmissionMode == "" {
		return rayv1.K8sJobMode
	}
	return job.Spec.SubmissionMode
}

// RenderJobStatus writes a RayJob's status: the Ray job's and the deployment's statuses,
// the reason and message, its cluster, submission id, times and attempts.
func RenderJobStatus(w io.Writer, v JobView) error {
	job := v.Job
	st := &job.Status
	var b strings.Builder
	fmt.Fprintf(&b, "RayJob %s/%s (%s, generation %d, observed %d)\n", job.Namespace, job.Name, submissionMode(job), job.Generation, st.ObservedGeneration)
	fmt.Fprintf(&b, "Job status:        %s\n", orDash(string(st.JobStatus)))
	fmt.Fprintf(&b, "Deployment status: %s\n", orDash(string(st.JobDeploymentStatus)))
	fmt.Fprintf(&b, "Reason:            %s\n", orDash(string(st.Reason)))
	fmt.Fprintf(&b, "Message:           %s\n", orDash(oneLine(st.Message)))
	fmt.Fprintf(&b, "Cluster:           %s\n", clusterLine(job))
	fmt.Fprintf(&b, "Dashboard:         %s\n", orDash(st.DashboardURL))
	fmt.Fprintf(&b, "Submission ID:     %s\n", orDash(st.JobId))
	fmt.Fprintf(&b, "Started:           %s\n", timeLine(st.StartTime, v.Now))
	fmt.Fprintf(&b, "Ended:             %s\n", endLine(st.StartTime, st.EndTime))
	if info := st.RayJobStatusInfo; info.StartTime != nil {
		fmt.Fprintf(&b, "Ray job:           %s\n", rayTimesLine(info))
	}
	fmt.Fprintf(&b, "Attempts:          %d succeeded, %d failed (backoffLimit %d)\n", ptr.Deref(st.Succeeded, 0), ptr.Deref(st.Failed, 0), ptr.Deref(job.Spec.BackoffLimit, 0))
	fmt.Fprintf(&b, "Clean-up:          %s\n", cleanupLine(job))
	_, err := io.WriteString(w, b.String())
	return err
}

// clusterLine names the job's RayCluster with its state and workers as the job's status
// last recorded them.
func clusterLine(job *rayv1.RayJob) string {
	st := &job.Status
	if st.RayClusterName == "" {
		return "-"
	}
	line := st.RayClusterName
	if len(job.Spec.ClusterSelector) > 0 {
		line += " (existing, from clusterSelector)"
	}
	rc := &st.RayClusterStatus
	if rc.State != "" {
		line += fmt.Sprintf(", %s", rc.State)
	}
	return line + fmt.Sprintf(", %d/%d workers ready", rc.ReadyWorkerReplicas, rc.DesiredWorkerReplicas)
}

// cleanupLine is what is deleted once the job finished, by the rule in force.
func cleanupLine(job *rayv1.RayJob) string {
	spec := &job.Spec
	switch {
	case len(spec.ClusterSelector) > 0:
		return "none (the cluster is not the job's)"
	case spec.DeletionStrategy != nil:
		return "by spec.deletionStrategy"
	case spec.ShutdownAfterJobFinishes:
		return fmt.Sprintf("the RayCluster, %ds after the job ends (shutdownAfterJobFinishes)", spec.TTLSecondsAfterFinished)
	default:
		return "none (the RayCluster is kept)"
	}
}

func timeLine(t *metav1.Time, now time.Time) string {
	if t == nil {
		return "-"
	}
	s := t.UTC().Format(time.RFC3339)
	if !now.IsZero() && now.After(t.Time) {
		s += fmt.Sprintf(" (%s ago)", now.Sub(t.Time).Round(time.Second))
	}
	return s
}

func endLine(start, end *metav1.Time) string {
	if end == nil {
		return "-"
	}
	s := end.UTC().Format(time.RFC3339)
	if start != nil && !end.Before(start) {
		s += fmt.Sprintf(" (after %s)", end.Sub(start.Time).Round(time.Second))
	}
	return s
}

// rayTimesLine is when Ray ran the job, as its Jobs API reported.
func rayTimesLine(info rayv1.RayJobStatusInfo) string {
	s := "started " + info.StartTime.UTC().Format(time.RFC3339)
	if info.EndTime != nil {
		s += ", ended " + info.EndTime.UTC().Format(time.RFC3339)
		if !info.EndTime.Before(info.StartTime) {
			s += fmt.Sprintf(" (ran %s)", info.EndTime.Sub(info.StartTime.Time).Round(time.Second))
		}
	}
	return s
}

// oneLine keeps a multi-line message on its status line.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// RenderJobWhy writes why a RayJob is where it is: its deployment status and reason
// explained, what it waits for, and the deadlines still ahead of it.
func RenderJobWhy(w io.Writer, v JobView) error {
	job := v.Job
	st := &job.Status
	var b strings.Builder
	for _, line := range jobWhy(job) {
		fmt.Fprintln(&b, line)
	}
	if st.Message != "" {
		fmt.Fprintf(&b, "Message: %s\n", st.Message)
	}
	for _, line := range deadlines(job, v.Now) {
		fmt.Fprintln(&b, line)
	}
	if rayv1.IsJobDeploymentTerminal(st.JobDeploymentStatus) {
		fmt.Fprintf(&b, "Clean-up: %s.\n", cleanupLine(job))
	}
	if st.ObservedGeneration != job.Generation && !validation.ManagedByOther(job.Spec.ManagedBy) {
		fmt.Fprintf(&b, "The controller has not seen generation %d yet (status is of generation %d).\n", job.Generation, st.ObservedGeneration)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// jobWhy explains the stored deployment status and reason.
func jobWhy(job *rayv1.RayJob) []string {
	st := &job.Status
	cluster := orDash(st.RayClusterName)
	if validation.ManagedByOther(job.Spec.ManagedBy) {
		return []string{fmt.Sprintf("spec.managedBy is %s: that controller runs this RayJob, raygate leaves it alone.", *job.Spec.ManagedBy)}
	}
	switch st.JobDeploymentStatus {
	case rayv1.JobDeploymentStatusNew:
		return []string{"raygate has not started the RayJob yet (no status)."}
	case rayv1.JobDeploymentStatusInitializing:
		return []string{fmt.Sprintf("Initializing: raygate brings up RayCluster %s and waits until it is ready%s.", cluster, initializingNext(job))}
	case rayv1.JobDeploymentStatusWaiting:
		return []string{
			"Waiting (InteractiveMode): raygate waits for you to submit the job to the cluster and name it in spec.jobId:",
			fmt.Sprintf("  ray job submit --address %s --submission-id <id> -- <entrypoint>", dashboardAddress(st.DashboardURL)),
			fmt.Sprintf("  kubectl patch rayjob %s --type=merge -p '{\"spec\":{\"jobId\":\"<id>\"}}'", job.Name),
		}
	case rayv1.JobDeploymentStatusRunning:
		state := "is " + string(st.JobStatus)
		if st.JobStatus == rayv1.JobStatusNew {
			state = "has no status from the Jobs API yet"
		}
		return []string{fmt.Sprintf("Running: Ray job %s %s on RayCluster %s; raygate reads its status from the Jobs API until it ends.", orDash(st.JobId), state, cluster)}
	case rayv1.JobDeploymentStatusComplete:
		if st.JobStatus == rayv1.JobStatusStopped {
			return []string{fmt.Sprintf("Complete: Ray job %s was stopped (ray job stop) before it ended.", orDash(st.JobId))}
		}
		return []string{fmt.Sprintf("Complete: Ray job %s succeeded.", orDash(st.JobId))}
	case rayv1.JobDeploymentStatusFailed:
		return []string{"Failed (" + orDash(string(st.Reason)) + "): " + failedWhy(job)}
	case rayv1.JobDeploymentStatusValidationFailed:
		return []string{"ValidationFailed: the stored RayJob breaks an admission rule (it was stored while the webhook was down, or a newer rule applies); nothing is created, changed or deleted for it until the spec is fixed."}
	case rayv1.JobDeploymentStatusSuspending:
		return []string{fmt.Sprintf("Suspending: spec.suspend is true; the attempt's RayCluster %s and submitter are being deleted.", cluster)}
	case rayv1.JobDeploymentStatusSuspended:
		return []string{"Suspended: nothing runs until spec.suspend is false (Kueue sets it when it admits the job)."}
	case rayv1.JobDeploymentStatusRetrying:
		return []string{fmt.Sprintf("Retrying: attempt %d failed and backoffLimit %d allows another; its RayCluster and submitter are deleted, then a new attempt starts on a new cluster.",
			ptr.Deref(st.Failed, 0), ptr.Deref(job.Spec.BackoffLimit, 0))}
	default:
		return []string{fmt.Sprintf("Deployment status %q is not one raygate writes.", st.JobDeploymentStatus)}
	}
}

// dashboardAddress is the dashboard URL `ray job submit --address` takes (status.dashboardURL
// is host:port, as KubeRay writes it).
func dashboardAddress(url string) string {
	switch {
	case url == "":
		return "http://<dashboard>"
	case strings.Contains(url, "://"):
		return url
	}
	return "http://" + url
}

// initializingNext is what comes once the cluster is ready, by submission mode.
func initializingNext(job *rayv1.RayJob) string {
	switch submissionMode(job) {
	case rayv1.K8sJobMode:
		return "; then the submitter Job runs ray job submit"
	case rayv1.HTTPMode:
		return "; then raygate submits the job through the Jobs API"
	case rayv1.SidecarMode:
		return "; the submitter container in its head pod submits the job"
	case rayv1.InteractiveMode:
		return "; then you submit the job and name it in spec.jobId"
	}
	return ""
}

// failedWhy explains a Failed RayJob's reason.
func failedWhy(job *rayv1.RayJob) string {
	switch job.Status.Reason {
	case rayv1.AppFailed:
		return "the Ray job failed (Ray reported FAILED, or its cluster was lost); see the job's logs: ray job logs " + orDash(job.Status.JobId)
	case rayv1.SubmissionFailed:
		switch submissionMode(job) {
		case rayv1.HTTPMode:
			return "the Ray Jobs API refused the submission."
		case rayv1.SidecarMode:
			return "the submitter container in the head pod exited with an error."
		}
		return "the submitter Job failed: kubectl logs job/" + job.Name
	case rayv1.DeadlineExceeded:
		return fmt.Sprintf("the job ran longer than activeDeadlineSeconds (%d) from its start; the Ray job was asked to stop.", ptr.Deref(job.Spec.ActiveDeadlineSeconds, 0))
	case rayv1.PreRunningDeadlineExceeded:
		return fmt.Sprintf("the job did not reach Running within preRunningDeadlineSeconds (%d) of its start: the cluster was not ready or the submission did not start in time.", ptr.Deref(job.Spec.PreRunningDeadlineSeconds, 0))
	case rayv1.JobStatusCheckTimeoutExceeded:
		return "reading the job's status from the Ray dashboard failed for longer than RAYJOB_STATUS_CHECK_TIMEOUT_SECONDS."
	case rayv1.JobDeploymentStatusTransitionGracePeriodExceeded:
		return "the Ray job and its submitter did not both end within the grace period (RAYJOB_DEPLOYMENT_STATUS_TRANSITION_GRACE_PERIOD_SECONDS)."
	case rayv1.ValidationFailed:
		return "the stored RayJob broke an admission rule."
	}
	return "see the message."
}

// deadlines are the limits still ahead of a job that has not finished.
func deadlines(job *rayv1.RayJob, now time.Time) []string {
	st := &job.Status
	if st.StartTime == nil || st.EndTime != nil || rayv1.IsJobDeploymentTerminal(st.JobDeploymentStatus) {
		return nil
	}
	var out []string
	due := func(what string, reason rayv1.JobFailedReason, secs int32) {
		at := st.StartTime.Add(time.Duration(secs) * time.Second)
		when := at.UTC().Format(time.RFC3339)
		if !now.IsZero() && at.After(now) {
			when += fmt.Sprintf(" (in %s)", at.Sub(now).Round(time.Second))
		}
		out = append(out, fmt.Sprintf("%s: fails with %s at %s.", what, reason, when))
	}
	if d := job.Spec.PreRunningDeadlineSeconds; d != nil && (st.JobDeploymentStatus == rayv1.JobDeploymentStatusInitializing || st.JobDeploymentStatus == rayv1.JobDeploymentStatusWaiting) {
		due("preRunningDeadlineSeconds", rayv1.PreRunningDeadlineExceeded, *d)
	}
	if d := job.Spec.ActiveDeadlineSeconds; d != nil {
		due("activeDeadlineSeconds", rayv1.DeadlineExceeded, *d)
	}
	return out
}
