package rayservice

import (
	"context"
	"fmt"
	"math"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/controllers/rayservice/plan"
	"github.com/raygate/raygate/internal/dashboard"
	"github.com/raygate/raygate/internal/rayspec"
)

// Dashboard I/O never runs in a reconcile: observe reads what the dashboard pool last heard
// from each head and asks it to read again when that is old; submissions are handed to the
// pool; when a request ends, the pool's word puts the RayService back in the queue.

// targetOf is the dashboard of the cluster's ready head pod: a pod the cluster controls
// (the caller passes only those), at the pod's IP and the cluster's dashboard port; and,
// unless the head is kept out of the serve endpoints, its Serve proxy, whose health decides
// whether the head is in them, at the pod's IP and the Ray container's serve port.
func (r *Reconciler) targetOf(ctx context.Context, svc *rayv1.RayService, rc *rayv1.RayCluster, pods []corev1.Pod) (dashboard.Target, error) {
	var heads []*corev1.Pod
	for i := range pods {
		p := &pods[i]
		if p.Labels[rayv1.NodeTypeLabelKey] == string(rayv1.HeadNode) && p.DeletionTimestamp == nil && rayspec.Serving(p) {
			heads = append(heads, p)
		}
	}
	if len(heads) != 1 {
		return dashboard.Target{}, fmt.Errorf("RayCluster %s has %d ready head pods; raygate calls a dashboard only when there is one", rc.Name, len(heads))
	}
	head := heads[0]
	h := dashboard.Head{
		Cluster: types.NamespacedName{Namespace: rc.Namespace, Name: rc.Name},
		Pod:     head.UID, Restarts: rayRestarts(head), PodName: head.Name,
		PodIP: head.Status.PodIP, HostNetwork: head.Spec.HostNetwork, Port: dashboardPort(&rc.Spec), ServePort: servePortOf(head),
	}
	url, err := r.Resolver.DashboardURL(ctx, h)
	if err != nil {
		return dashboard.Target{}, fmt.Errorf("locating the dashboard of %s: %w", rc.Name, err)
	}
	token, err := r.dashboardToken(ctx, rc)
	if err != nil {
		return dashboard.Target{}, err
	}
	t := dashboard.Target{Head: h, URL: url, Owner: types.NamespacedName{Namespace: svc.Namespace, Name: svc.Name}, Token: token}
	if !svc.Spec.ExcludeHeadPodFromServeSvc {
		if t.ProxyURL, err = dashboard.ProxyURL(ctx, r.Resolver, h); err != nil {
			return dashboard.Target{}, fmt.Errorf("locating the Serve proxy of %s: %w", rc.Name, err)
		}
	}
	return t, nil
}

// servePortOf is where the head pod's Serve proxy listens: the Ray container's port named
// serve, else Ray's default.
func servePortOf(p *corev1.Pod) int32 {
	if len(p.Spec.Containers) > rayv1.RayContainerIndex {
		return rayspec.ContainerServePort(&p.Spec.Containers[rayv1.RayContainerIndex])
	}
	return rayspec.DefaultServePort
}

// rayRestarts is how often the head's Ray container restarted: a restarted Ray forgets the
// serve config it was given, as a new pod does.
func rayRestarts(p *corev1.Pod) int32 {
	var n int32
	for _, c := range p.Status.ContainerStatuses {
		n = max(n, c.RestartCount)
	}
	return n
}

// dashboardPort is where the head's dashboard listens: rayStartParams dashboard-port, else
// Ray's default.
func dashboardPort(spec *rayv1.RayClusterSpec) int32 {
	return rayspec.PortParam(spec.HeadGroupSpec.RayStartParams, "dashboard-port", rayspec.DefaultDashboardPort)
}

// serveViewOf is what the plan reads of a pool snapshot. Applications read before the head
// accepted a config say nothing about that config: they count as not read.
func serveViewOf(s dashboard.Snapshot) plan.ServeView {
	v := plan.ServeView{}
	if sub := s.Submission; sub != nil {
		v.Submission = &plan.Submission{ID: sub.ID, Outcome: submitOutcome(sub.Outcome), BadRequest: sub.BadRequest, Message: sub.Message}
	}
	if s.Err != "" && !s.ErrAt.Before(s.ReadAt) {
		v.Err = s.Err
	}
	if s.Details != nil && !s.Stale {
		v.Apps, v.ReadAt = appStatuses(s.Details), metav1.NewTime(s.ReadAt)
		v.TargetCapacity = percentOf(s.Details.TargetCapacity)
	}
	if a := s.Accepted; a != nil {
		if hash, tc, ok := plan.ParseSubmissionID(a.ID); ok {
			v.Accepted = &plan.AcceptedConfig{Hash: hash, TargetCapacity: tc}
		}
	}
	if p := s.Proxy; p != nil {
		v.Proxy = &plan.ProxyHealth{Healthy: p.Healthy, Err: p.Err}
	}
	return v
}

// percentOf is a reported target_capacity as the whole percentage raygate sends (nil:
// unset).
func percentOf(tc *float64) *int32 {
	if tc == nil {
		return nil
	}
	v := int32(math.Round(min(max(*tc, 0), 100)))
	return &v
}

// submitOutcome is the plan's word for the pool's answer to a submission.
func submitOutcome(o dashboard.Outcome) plan.SubmitOutcome {
	switch o {
	case dashboard.Accepted:
		return plan.SubmitAccepted
	case dashboard.Refused:
		return plan.SubmitRefused
	case dashboard.Failed:
		return plan.SubmitFailed
	}
	return plan.SubmitNotAnswered
}

// needsRefresh: what the pool knows of a dashboard is old enough to read it again — after
// the deploying poll while applications are not all RUNNING, the last read failed or the
// head's Serve proxy was unhealthy (so the head rejoins the serve endpoints soon after it
// recovers), after the resync once they are (never with a negative resync).
func needsRefresh(s dashboard.Snapshot, now time.Time, poll, resync time.Duration) bool {
	age := now.Sub(s.LastAttempt())
	switch {
	case s.LastAttempt().IsZero():
		return true
	case s.Details == nil || s.Stale || s.Err != "" || !allRunning(s.Details) || (s.Proxy != nil && !s.Proxy.Healthy):
		return age >= poll
	case resync < 0:
		return false
	}
	return age >= resync
}

// readResync is how old the answer of a converged head may get: the resync, or, when the
// read also checks the head's Serve proxy, at most proxyRecheck, as often as the head's place
// in the serve endpoints is reconsidered.
func readResync(resync time.Duration, checksProxy bool) time.Duration {
	if checksProxy && (resync < 0 || resync > plan.ProxyRecheck) {
		return plan.ProxyRecheck
	}
	return resync
}

func allRunning(d *dashboard.ServeDetails) bool {
	for _, a := range d.Applications {
		if a.Status != rayv1.ApplicationStatusRunning {
			return false
		}
	}
	return true
}

// submissionTag travels with a submission through the pool, to announce its outcome.
type submissionTag struct {
	svc     *rayv1.RayService
	cluster *rayv1.RayCluster
	reason  string
	done    plan.Event
}

// newPool builds the dashboard pool; its word goes to the controller's queue once the
// controller started (before, nothing is waiting for it).
func (r *Reconciler) newPool(o dashboard.PoolOptions) *dashboard.Pool {
	o.OnDone = r.dashboardDone
	return dashboard.NewPool(o)
}

// dashboardDone puts the RayService back in the queue, and announces what became of a
// submission.
func (r *Reconciler) dashboardDone(d dashboard.Done) {
	r.queue.Add(d.Target.Owner)
	if d.Submission == nil {
		return
	}
	t, ok := d.Submission.Tag.(submissionTag)
	if !ok {
		return
	}
	switch d.Outcome {
	case dashboard.Accepted:
		if t.done.Reason != "" {
			r.emit(t.svc, t.done)
		}
	case dashboard.Refused, dashboard.Failed:
		r.emit(t.svc, plan.WarningEvent(t.cluster, plan.EventFailedServeConfig, "SubmitServeConfig", "submitting the serve config to %s (%s): %s",
			t.cluster.Name, t.reason, dashboard.Sanitize(d.Err.Error(), 300)))
	}
}
