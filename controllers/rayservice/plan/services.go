package plan

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/rayspec"
)

// serving is the cluster the head and serve Services select once this pass is carried out.
type serving struct {
	View *ClusterView // nil: none yet
	// Endpoints counts the ready pods the serve Service selects, with this pass's labels.
	Endpoints int32
}

func (s serving) name() string {
	if s.View == nil {
		return ""
	}
	return s.View.Cluster.Name
}

// planServices labels the head pods that may take serve traffic and points the head and
// serve Services at the serving cluster.
func planServices(in inputs, r roles, serve serveStates, traffic trafficState, act *Effects, out *Outcome) serving {
	labels := map[string]string{} // pod name → its ray.io/serve label after this pass
	for _, s := range []slot{r.Active, r.Pending} {
		if s.View != nil {
			labelHead(in, s, serve, labels, act, out)
		}
	}
	v := servingCluster(in, r, serve, traffic)
	if v == nil {
		return serving{}
	}
	ensureService(in, headService(in.want.Service, v.Cluster), act, out)
	if _, ok := ensureService(in, serveService(in.want.Service, v.Cluster), act, out); !ok {
		// The serve Service raygate would point at the cluster is someone else's: nothing
		// reaches the cluster through it.
		return serving{View: v}
	}
	return serving{View: v, Endpoints: serveEndpoints(v, labels)}
}

// servingCluster is the cluster the head and serve Services should select:
//
//   - before any cluster served: the first cluster, once its applications run;
//   - NewCluster (and None): the pending cluster as soon as its applications run — this is
//     the blue/green switch, promotion follows;
//   - incremental (and its rollback): the cluster the HTTPRoute sends all traffic to, never
//     one at target capacity 0 (serveServiceSide).
func servingCluster(in inputs, r roles, serve serveStates, _ trafficState) *ClusterView {
	switch {
	case r.Active.View == nil && serve.ready(r.Pending):
		return r.Pending.View
	case r.Active.View == nil:
		return nil
	case r.Pending.View == nil:
		return r.Active.View
	case r.Control.frozen():
		// Paused, or an action not yet recorded: the Service stays where it is, like
		// everything else (moving it back could send it to a cluster without capacity).
		if selectedByServeService(in, r.Pending.name()) {
			return r.Pending.View
		}
		return r.Active.View
	case in.want.incremental() && in.obs.GatewayAPI:
		cur := sideActive
		if selectedByServeService(in, r.Pending.name()) {
			cur = sidePending
		}
		if serveServiceSide(cur, r.split(), serve.ready(r.Active), serve.ready(r.Pending)) == sidePending {
			return r.Pending.View
		}
		return r.Active.View
	case r.Rollback == "" && serve.ready(r.Pending):
		return r.Pending.View
	}
	return r.Active.View
}

// labelHead keeps the head pod's ray.io/serve label (its place in the cluster's serve
// endpoints; the RayCluster controller creates RayService head pods with "false") in line
// with headServeLabel. While the head's Serve proxy is checked, the pass comes back to
// check it again, soon when it failed.
func labelHead(in inputs, s slot, serve serveStates, labels map[string]string, act *Effects, out *Outcome) {
	proxy := s.View.Serve.Proxy
	if proxy != nil {
		out.Wake.due(in.now.Add(ProxyRecheck))
		out.Wake.Poll = out.Wake.Poll || !proxy.Healthy
	}
	for i := range s.View.Pods {
		pod := &s.View.Pods[i]
		if pod.Labels[rayv1.NodeTypeLabelKey] != string(rayv1.HeadNode) || pod.DeletionTimestamp != nil {
			continue
		}
		cur := pod.Labels[rayv1.ServeLabelKey]
		want, why := headServeLabel(cur, in.want.Service.Spec.ExcludeHeadPodFromServeSvc, serve.ready(s), proxy)
		if want != cur {
			done := NormalEvent(s.cluster(), EventUpdatedHeadPodServeLabel, "Label", "set %s=%s on head pod %s of RayCluster %s: %s",
				rayv1.ServeLabelKey, want, pod.Name, s.name(), why)
			act.do(LabelPod{Pod: &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID}}, Value: want, Done: &done})
			labels[pod.Name] = want
		}
	}
}

// proxyRecheck is how often the Serve proxy of a head that may serve is checked, as KubeRay
// checks it on every pass: a head whose proxy fails leaves the serve endpoints within about
// this long.
const ProxyRecheck = 10 * time.Second

// headServeLabel is the head pod's ray.io/serve label after this pass, and why it changes:
//
//   - "false" with excludeHeadPodFromServeSvc, whatever the proxy says;
//   - "false" when the last check of the head's Serve proxy failed (KubeRay checks it on
//     every pass and takes the head out of the serve endpoints when it fails);
//   - "true" once the cluster's applications run and the proxy (when checked) is healthy;
//   - otherwise unchanged: applications that stop running do not take the head out (the
//     status says they fail), and a proxy not checked yet says nothing.
func headServeLabel(cur string, exclude, appsRun bool, proxy *ProxyHealth) (label, why string) {
	switch {
	case exclude:
		return "false", "spec.excludeHeadPodFromServeSvc is set"
	case proxy != nil && !proxy.Healthy:
		return "false", "its Serve proxy health check failed: " + orDefault(proxy.Err, "unhealthy")
	case appsRun && proxy != nil:
		return "true", "its Serve proxy is healthy and the Serve applications run"
	case appsRun:
		return "true", "the Serve applications run"
	}
	return cur, ""
}

// serveEndpoints counts the ready pods the serve Service selects (a ready pod is what an
// EndpointSlice would list), with the labels this pass sets.
func serveEndpoints(v *ClusterView, labels map[string]string) int32 {
	var n int32
	sel := serveSelector(v.Cluster.Name)
	for i := range v.Pods {
		pod := &v.Pods[i]
		if !rayspec.Serving(pod) {
			continue
		}
		matched := true
		for k, want := range sel {
			got := pod.Labels[k]
			if l, ok := labels[pod.Name]; ok && k == rayv1.ServeLabelKey {
				got = l
			}
			matched = matched && got == want
		}
		if matched {
			n++
		}
	}
	return n
}
