package rayjob

import (
	"context"
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/controllers/rayjob/plan"
	"github.com/raygate/raygate/internal/dashboard"
	"github.com/raygate/raygate/internal/rayspec"
)

// Jobs API I/O never runs in a reconcile: observe reads what the pool last heard about the
// attempt's id, the plan's requests are handed to the pool, and when a request ends the
// pool's word puts the RayJob back in the queue.

// targetOf is the Jobs API of the cluster's head pod: a pod the cluster controls (observe
// passes only those), running, at its IP and the cluster's dashboard port. A cluster
// without one gives a target the pool cannot send to, with the reason: the pool answers its
// requests as failed.
func (r *Reconciler) targetOf(ctx context.Context, job *rayv1.RayJob, rc *rayv1.RayCluster, pod *corev1.Pod) dashboard.JobsTarget {
	t := dashboard.JobsTarget{
		Head:  dashboard.Head{Cluster: types.NamespacedName{Namespace: job.Namespace, Name: job.Status.RayClusterName}},
		Owner: types.NamespacedName{Namespace: job.Namespace, Name: job.Name},
	}
	switch {
	case rc == nil:
		t.Unreachable = "RayCluster " + t.Head.Cluster.Name + " is not found"
		return t
	case pod == nil:
		t.Unreachable = "RayCluster " + rc.Name + " has no head pod"
		return t
	}
	t.Head.Pod, t.Head.Restarts, t.Head.PodIP, t.Head.HostNetwork = pod.UID, rayRestarts(pod), pod.Status.PodIP, pod.Spec.HostNetwork
	t.Head.Port = rayspec.PortParam(rc.Spec.HeadGroupSpec.RayStartParams, "dashboard-port", rayspec.DefaultDashboardPort)
	if pod.DeletionTimestamp != nil || pod.Status.Phase != corev1.PodRunning {
		t.Unreachable = fmt.Sprintf("the head pod %s of RayCluster %s is not running", pod.Name, rc.Name)
		return t
	}
	url, err := r.Resolver.DashboardURL(ctx, t.Head)
	if err != nil {
		t.Unreachable = "locating the dashboard of " + rc.Name + ": " + err.Error()
		return t
	}
	token, err := r.tokens.Token(ctx, r.apiReader, r.Now(), r.TokenAuthentication, rc)
	if err != nil {
		t.Unreachable = err.Error()
		return t
	}
	t.URL, t.Token = url, token
	return t
}

// rayRestarts is how often the head's Ray container (the first) restarted: a restarted Ray
// knows none of the jobs it was given. The submitter sidecar's restarts do not count.
func rayRestarts(p *corev1.Pod) int32 {
	if len(p.Spec.Containers) == 0 {
		return 0
	}
	ray := p.Spec.Containers[rayv1.RayContainerIndex].Name
	for _, c := range p.Status.ContainerStatuses {
		if c.Name == ray {
			return c.RestartCount
		}
	}
	return 0
}

// request hands one of the plan's requests to the pool. A request about a cluster the pass
// did not observe (none is planned) goes to a target the pool cannot send to.
func (r *Reconciler) request(job *rayv1.RayJob, t dashboard.JobsTarget, q plan.Request) {
	switch q := q.(type) {
	case plan.ReadJob:
		r.jobs.Read(r.targetFor(job, t, q.Cluster), q.JobID)
	case plan.SubmitJob:
		t = r.targetFor(job, t, q.Cluster)
		sub, err := jobSubmission(q)
		if err != nil {
			r.jobs.Reject(t, q.JobID, err.Error())
			return
		}
		r.jobs.Submit(t, sub)
	case plan.StopJob:
		r.jobs.Stop(r.targetFor(job, t, q.Cluster), q.JobID)
	}
}

func (r *Reconciler) targetFor(job *rayv1.RayJob, t dashboard.JobsTarget, cluster string) dashboard.JobsTarget {
	if t.Head.Cluster.Name == cluster && t.Head.Cluster.Namespace == job.Namespace {
		return t
	}
	return dashboard.JobsTarget{
		Head:        dashboard.Head{Cluster: types.NamespacedName{Namespace: job.Namespace, Name: cluster}},
		Owner:       types.NamespacedName{Namespace: job.Namespace, Name: job.Name},
		Unreachable: "RayCluster " + cluster + " was not observed",
	}
}

// jobSubmission is the body of an HTTPMode submission: what `ray job submit` sends.
func jobSubmission(q plan.SubmitJob) (dashboard.JobSubmission, error) {
	s := q.Submission
	out := dashboard.JobSubmission{
		Entrypoint: s.Entrypoint, SubmissionID: q.JobID, Metadata: s.Metadata,
		EntrypointNumCPUs: float64(s.NumCPUs), EntrypointNumGPUs: float64(s.NumGPUs),
	}
	if s.RuntimeEnvJSON != "" {
		out.RuntimeEnv = json.RawMessage(s.RuntimeEnvJSON)
	}
	if s.ResourcesJSON != "" {
		if err := json.Unmarshal([]byte(s.ResourcesJSON), &out.EntrypointResources); err != nil {
			return dashboard.JobSubmission{}, fmt.Errorf("spec.entrypointResources is not a JSON object of numbers: %w", err)
		}
	}
	return out, nil
}

// jobsView is what the plan reads of the pool's memory of one cluster and id.
func jobsView(cluster, id string, m dashboard.JobMemory) plan.JobsView {
	v := plan.JobsView{Cluster: cluster, JobID: id}
	if a := m.Read; a != nil {
		read := &plan.JobRead{Sent: a.Sent, At: a.At, Err: a.Err}
		switch a.Outcome {
		case dashboard.JobFound:
			read.Outcome = plan.ReadFound
			read.Info = plan.JobInfo{
				Status: rayv1.JobStatus(a.Info.Status), UnknownStatus: a.Info.UnknownStatus, Message: a.Info.Message,
				StartTimeMs: a.Info.StartTime, EndTimeMs: a.Info.EndTime,
			}
		case dashboard.JobNotFound:
			read.Outcome = plan.ReadNotFound
		default:
			read.Outcome = plan.ReadFailed
		}
		v.Read = read
	}
	if a := m.Submit; a != nil {
		v.Submission = &plan.SubmitAnswer{At: a.At, Outcome: submitOutcome(a.Outcome), Message: a.Message}
	}
	if a := m.Stop; a != nil {
		v.Stop = &plan.StopAnswer{At: a.At, Err: a.Err}
	}
	return v
}

func submitOutcome(o dashboard.JobSubmitOutcome) plan.SubmitOutcome {
	switch o {
	case dashboard.JobSubmitAccepted:
		return plan.SubmitAccepted
	case dashboard.JobSubmitAlreadyExists:
		return plan.SubmitAlreadyExists
	case dashboard.JobSubmitRefused:
		return plan.SubmitRefused
	case dashboard.JobSubmitFailed:
		return plan.SubmitFailed
	}
	return plan.SubmitPending
}

// jobsDone puts the RayJob back in the queue once a request ended.
func (r *Reconciler) jobsDone(d dashboard.JobsDone) {
	r.queue.Add(d.Target.Owner)
}
