package rayservice

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/rayspec"
)

// serving is the cluster the head and serve Services select once this pass is carried out.
type serving struct {
	View *clusterView // nil: none yet
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
func planServices(in inputs, r roles, serve serveStates, traffic trafficState, out *planned) serving {
	labels := map[string]string{} // pod name → its ray.io/serve label after this pass
	for _, s := range []slot{r.Active, r.Pending} {
		if s.View != nil {
			labelHead(in, s, serve, labels, out)
		}
	}
	v := servingCluster(in, r, serve, traffic)
	if v == nil {
		return serving{}
	}
	ensureService(in, headService(in.want.Service, v.Cluster), out)
	if _, ok := ensureService(in, serveService(in.want.Service, v.Cluster), out); !ok {
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
//   - incremental: the active cluster until all capacity and traffic moved to the pending
//     one (the HTTPRoute carries the split meanwhile) and its applications still run.
func servingCluster(in inputs, r roles, serve serveStates, traffic trafficState) *clusterView {
	switch {
	case r.Active.View == nil && serve.ready(r.Pending):
		return r.Pending.View
	case r.Active.View == nil:
		return nil
	case r.Pending.View == nil || r.Rollback != "":
		return r.Active.View
	case !in.want.incremental() && serve.ready(r.Pending):
		return r.Pending.View
	case in.want.incremental() && traffic.Settled && serve.ready(r.Pending) &&
		nextStep(r.split(), in.want.Pacing, towardPending, in.now).Kind == stepComplete:
		return r.Pending.View
	}
	return r.Active.View
}

// labelHead adds the head pod to its cluster's serve endpoints (ray.io/serve=true) once
// the cluster's applications run, unless excludeHeadPodFromServeSvc; the RayCluster
// controller creates RayService head pods with ray.io/serve=false.
func labelHead(in inputs, s slot, serve serveStates, labels map[string]string, out *planned) {
	for i := range s.View.Pods {
		pod := &s.View.Pods[i]
		if pod.Labels[rayv1.NodeTypeLabelKey] != string(rayv1.HeadNode) || pod.DeletionTimestamp != nil {
			continue
		}
		cur := pod.Labels[rayv1.ServeLabelKey]
		want := cur
		switch {
		case in.want.Service.Spec.ExcludeHeadPodFromServeSvc:
			want = "false"
		case serve.ready(s):
			want = "true"
		}
		if want != cur {
			out.do(labelPod{Pod: &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID}}, Value: want})
			labels[pod.Name] = want
		}
	}
}

// serveEndpoints counts the ready pods the serve Service selects (a ready pod is what an
// EndpointSlice would list), with the labels this pass sets.
func serveEndpoints(v *clusterView, labels map[string]string) int32 {
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
