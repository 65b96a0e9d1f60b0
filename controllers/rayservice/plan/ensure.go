package plan

import (
	"fmt"
	"maps"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/raygate/raygate/internal/rayspec"
)

// The ensure functions compare an object raygate wants with the one observed and ask for
// the write that makes them match, if any. changed: a write was asked for. ok: false when
// the object is not controlled (by UID) by the owner raygate gives it; raygate then leaves
// it alone and reports it (OwnershipConflict), and nothing moves until it is gone.

// ensureService sets the fields raygate owns, leaving what the API server filled in
// (clusterIP, nodePorts, ...) alone.
func ensureService(in inputs, want *corev1.Service, act *Effects, out *Outcome) (changed, ok bool) {
	cur := in.obs.Services[want.Name]
	if cur == nil {
		if why := unsafeService(want); why != "" {
			out.conflict(fmt.Sprintf("Service %s would be %s; raygate does not create it", want.Name, why))
			return false, false
		}
		act.do(CreateObject{Object: want})
		return true, true
	}
	if !ownedBySameController(cur, want) {
		out.conflict(Foreign("Service", cur, want))
		return false, false
	}
	if why := unsafeService(want); why != "" {
		// Admission and the controller's own validation refuse such overrides; a Service
		// that could point outside the cluster's pods is never written, whatever the spec.
		out.conflict(fmt.Sprintf("Service %s would be %s; raygate does not write it", want.Name, why))
		return false, false
	}
	labels, annotations := merge(cur.Labels, want.Labels), merge(cur.Annotations, want.Annotations)
	ports := mergeDefaultedPorts(cur.Spec.Ports, want.Spec.Ports)
	if maps.Equal(labels, cur.Labels) && maps.Equal(annotations, cur.Annotations) && maps.Equal(want.Spec.Selector, cur.Spec.Selector) &&
		want.Spec.Type == cur.Spec.Type && equality.Semantic.DeepEqual(ports, cur.Spec.Ports) {
		return false, true
	}
	next := cur.DeepCopy()
	next.Labels, next.Annotations, next.Spec.Selector, next.Spec.Type, next.Spec.Ports = labels, annotations, want.Spec.Selector, want.Spec.Type, ports
	act.do(UpdateObject{Object: next})
	return true, true
}

func ensureGateway(in inputs, want *gwv1.Gateway, act *Effects, out *Outcome) (changed, ok bool) {
	cur := in.obs.Gateway
	if cur == nil {
		act.do(CreateObject{Object: want})
		return true, true
	}
	if !ownedBySameController(cur, want) {
		out.conflict(Foreign("Gateway", cur, want))
		return false, false
	}
	if equality.Semantic.DeepDerivative(want.Spec, cur.Spec) && len(want.Spec.Listeners) == len(cur.Spec.Listeners) && hasLabels(cur.Labels, want.Labels) {
		return false, true
	}
	next := cur.DeepCopy()
	next.Spec = want.Spec
	next.Labels = merge(cur.Labels, want.Labels)
	act.do(UpdateObject{Object: next})
	return true, true
}

// ensureRoute also returns, on an update, the weights the route had before.
func ensureRoute(in inputs, want *gwv1.HTTPRoute, act *Effects, out *Outcome) (changed bool, before map[string]int32, ok bool) {
	cur := in.obs.Route
	if cur == nil {
		act.do(CreateObject{Object: want})
		return true, nil, true
	}
	if !ownedBySameController(cur, want) {
		out.conflict(Foreign("HTTPRoute", cur, want))
		return false, nil, false
	}
	if routeSpecMatches(want, cur) && hasLabels(cur.Labels, want.Labels) {
		return false, nil, true
	}
	next := cur.DeepCopy()
	next.Spec = want.Spec
	next.Labels = merge(cur.Labels, want.Labels)
	act.do(UpdateObject{Object: next})
	return true, rayspec.RouteWeights(cur), true
}

// Foreign describes an object with a wanted name that the wanted owner does not control.
func Foreign(kind string, cur, want metav1.Object) string {
	owner := "it has no controller"
	if ref := metav1.GetControllerOf(cur); ref != nil {
		owner = "it is controlled by " + ref.Kind + " " + ref.Name
	}
	wantOwner := "this RayService"
	if ref := metav1.GetControllerOf(want); ref != nil && ref.Kind != "RayService" {
		wantOwner = ref.Kind + " " + ref.Name
	}
	return fmt.Sprintf("%s %s exists and is not controlled by %s (%s)", kind, cur.GetName(), wantOwner, owner)
}

// hasLabels: every wanted label is set (objects made by an older raygate lack the label the
// cache selects on, and get it).
func hasLabels(cur, want map[string]string) bool {
	for k, v := range want {
		if cur[k] != v {
			return false
		}
	}
	return true
}

// unsafeService says why a Service could send traffic outside the cluster's pods ("": it
// cannot): type ExternalName, an externalName, or external IPs (every node intercepts
// traffic to those addresses).
func unsafeService(s *corev1.Service) string {
	switch {
	case s.Spec.Type == corev1.ServiceTypeExternalName:
		return "of type ExternalName"
	case s.Spec.ExternalName != "":
		return "given an externalName"
	case len(s.Spec.ExternalIPs) > 0:
		return "given externalIPs"
	}
	return ""
}

// routeSpecMatches: every field raygate sets has its value (the API server's defaults
// aside), and no backend, rule or parent is missing or extra — DeepDerivative alone lets a
// shorter list match, which would keep a removed backend.
func routeSpecMatches(want, cur *gwv1.HTTPRoute) bool {
	if !equality.Semantic.DeepDerivative(want.Spec, cur.Spec) || len(want.Spec.ParentRefs) != len(cur.Spec.ParentRefs) || len(want.Spec.Rules) != len(cur.Spec.Rules) {
		return false
	}
	for i := range want.Spec.Rules {
		if len(want.Spec.Rules[i].BackendRefs) != len(cur.Spec.Rules[i].BackendRefs) || len(want.Spec.Rules[i].Matches) != len(cur.Spec.Rules[i].Matches) {
			return false
		}
	}
	return true
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
