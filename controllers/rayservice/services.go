package rayservice

import (
	"context"
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/rayspec"
)

// servingCluster is the cluster the head and serve Services should select:
//
//   - before any cluster served: the first cluster, once its applications run;
//   - NewCluster (and None): the pending cluster as soon as its applications run — this is
//     the blue/green switch, promotion follows;
//   - incremental: the active cluster until all capacity and traffic moved to the pending
//     one (the HTTPRoute carries the split meanwhile).
func servingCluster(p *pass) string {
	switch {
	case p.active == nil && p.pending != nil && p.appsReady[p.pending.Name]:
		return p.pending.Name
	case p.active == nil:
		return ""
	case p.pending == nil || p.rollingBack:
		return p.active.Name
	case !p.incremental() && p.appsReady[p.pending.Name]:
		return p.pending.Name
	case p.incremental() && p.routeSettled && nextStep(splitOf(&p.svc.Status), p.pacing, towardPending, p.now).Kind == stepComplete:
		return p.pending.Name
	}
	return p.active.Name
}

// reconcileServices points the head and serve Services at the serving cluster and labels
// head pods that may take serve traffic.
func (r *Reconciler) reconcileServices(ctx context.Context, p *pass) error {
	for _, rc := range []*rayv1.RayCluster{p.active, p.pending} {
		if rc == nil {
			continue
		}
		if err := r.labelHead(ctx, p, rc); err != nil {
			return err
		}
	}
	p.servingCluster = servingCluster(p)
	if p.servingCluster == "" {
		return nil
	}
	serving := p.active
	if p.pending != nil && p.pending.Name == p.servingCluster {
		serving = p.pending
	}
	if err := r.applyService(ctx, p, headService(p.svc, serving)); err != nil {
		return err
	}
	return r.applyService(ctx, p, serveService(p.svc, serving))
}

// labelHead adds the head pod to its cluster's serve endpoints (ray.io/serve=true) once
// the cluster's applications run, unless excludeHeadPodFromServeSvc; the RayCluster
// controller creates RayService head pods with ray.io/serve=false.
func (r *Reconciler) labelHead(ctx context.Context, p *pass, rc *rayv1.RayCluster) error {
	for i := range p.pods[rc.Name] {
		pod := &p.pods[rc.Name][i]
		if pod.Labels[rayv1.NodeTypeLabelKey] != string(rayv1.HeadNode) || pod.DeletionTimestamp != nil {
			continue
		}
		cur := pod.Labels[rayv1.ServeLabelKey]
		want := cur
		switch {
		case p.spec.ExcludeHeadPodFromServeSvc:
			want = "false"
		case p.appsReady[rc.Name]:
			want = "true"
		}
		if want == cur {
			continue
		}
		patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"labels": map[string]string{rayv1.ServeLabelKey: want}}})
		if err := r.client.Patch(ctx, pod, client.RawPatch(types.MergePatchType, patch)); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("labelling head pod %s: %w", pod.Name, err)
		}
		if pod.Labels == nil {
			pod.Labels = map[string]string{}
		}
		pod.Labels[rayv1.ServeLabelKey] = want
	}
	return nil
}

// applyService creates a Service or updates the fields raygate owns, leaving what the API
// server filled in (clusterIP, nodePorts, ...) alone.
func (r *Reconciler) applyService(ctx context.Context, p *pass, want *corev1.Service) error {
	var cur corev1.Service
	err := r.client.Get(ctx, client.ObjectKeyFromObject(want), &cur)
	if apierrors.IsNotFound(err) {
		if err := r.client.Create(ctx, want); err != nil {
			r.warn(p, nil, EventFailedService, "CreateService", "creating Service %s: %v", want.Name, err)
			return fmt.Errorf("creating Service %s: %w", want.Name, err)
		}
		return nil
	}
	if err != nil {
		return err
	}
	if !ownedBySameController(&cur, want) {
		r.warn(p, nil, EventFailedService, "UpdateService", "Service %s exists and is not managed by this RayService; rename or delete it", want.Name)
		return fmt.Errorf("service %s is not controlled by %s", want.Name, p.svc.Name)
	}
	next := cur.DeepCopy()
	next.Labels = merge(cur.Labels, want.Labels)
	next.Annotations = merge(cur.Annotations, want.Annotations)
	next.Spec.Selector = want.Spec.Selector
	next.Spec.Type = want.Spec.Type
	next.Spec.Ports = mergeDefaultedPorts(cur.Spec.Ports, want.Spec.Ports)
	if equality.Semantic.DeepEqual(&cur, next) {
		return nil
	}
	if err := r.client.Update(ctx, next); err != nil {
		return fmt.Errorf("updating Service %s: %w", want.Name, err)
	}
	return nil
}

// mergeDefaultedPorts keeps the API server's nodePort for ports that did not change.
func mergeDefaultedPorts(cur, want []corev1.ServicePort) []corev1.ServicePort {
	byName := map[string]corev1.ServicePort{}
	for _, p := range cur {
		byName[p.Name] = p
	}
	out := make([]corev1.ServicePort, len(want))
	for i, p := range want {
		if c, ok := byName[p.Name]; ok && p.NodePort == 0 && c.Port == p.Port {
			p.NodePort = c.NodePort
		}
		out[i] = p
	}
	return out
}

func ownedBySameController(cur, want metav1.Object) bool {
	a, b := metav1.GetControllerOf(cur), metav1.GetControllerOf(want)
	return a != nil && b != nil && a.UID == b.UID
}

func (r *Reconciler) deleteService(ctx context.Context, ns, name string) error {
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	if err := r.client.Delete(ctx, svc); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting Service %s: %w", name, err)
	}
	return nil
}

// serveEndpoints counts the ready pods the serve Service selects (envtest has no endpoints
// controller, and a ready pod is what an EndpointSlice would list).
func serveEndpoints(p *pass) int32 {
	var n int32
	sel := serveSelector(p.servingCluster)
	for i := range p.pods[p.servingCluster] {
		pod := &p.pods[p.servingCluster][i]
		if rayspec.Serving(pod) && matches(pod.Labels, sel) {
			n++
		}
	}
	return n
}

func matches(labels, sel map[string]string) bool {
	for k, v := range sel {
		if labels[k] != v {
			return false
		}
	}
	return true
}
