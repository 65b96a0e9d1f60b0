package rayservice

import (
	"errors"
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
// the object belongs to someone else; raygate then leaves it alone, warns, and fails the
// pass so it is retried.

// ensureService sets the fields raygate owns, leaving what the API server filled in
// (clusterIP, nodePorts, ...) alone.
func ensureService(in inputs, want *corev1.Service, out *planned) (changed, ok bool) {
	cur := in.obs.Services[want.Name]
	if cur == nil {
		out.do(createObject{Object: want})
		return true, true
	}
	if !ownedBySameController(cur, want) {
		conflict(out, warningEvent(nil, EventFailedService, "UpdateService",
			"Service %s exists and is not managed by this RayService; rename or delete it", want.Name),
			fmt.Errorf("service %s is not controlled by %s", want.Name, in.want.Service.Name))
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
	out.do(updateObject{Object: next})
	return true, true
}

func ensureGateway(in inputs, want *gwv1.Gateway, out *planned) (changed, ok bool) {
	cur := in.obs.Gateway
	if cur == nil {
		out.do(createObject{Object: want})
		return true, true
	}
	if !ownedBySameController(cur, want) {
		conflict(out, warningEvent(nil, EventFailedGateway, "UpdateGateway", "Gateway %s exists and is not managed by this RayService", want.Name),
			fmt.Errorf("gateway %s is not controlled by %s", want.Name, in.want.Service.Name))
		return false, false
	}
	if equality.Semantic.DeepDerivative(want.Spec, cur.Spec) && len(want.Spec.Listeners) == len(cur.Spec.Listeners) {
		return false, true
	}
	next := cur.DeepCopy()
	next.Spec = want.Spec
	next.Labels = merge(cur.Labels, want.Labels)
	out.do(updateObject{Object: next})
	return true, true
}

// ensureRoute also returns, on an update, the weights the route had before.
func ensureRoute(in inputs, want *gwv1.HTTPRoute, out *planned) (changed bool, before map[string]int32, ok bool) {
	cur := in.obs.Route
	if cur == nil {
		out.do(createObject{Object: want})
		return true, nil, true
	}
	if !ownedBySameController(cur, want) {
		conflict(out, warningEvent(nil, EventFailedGateway, "UpdateHTTPRoute", "HTTPRoute %s exists and is not managed by this RayService", want.Name),
			fmt.Errorf("httproute %s is not controlled by %s", want.Name, in.want.Service.Name))
		return false, nil, false
	}
	if routeSpecMatches(want, cur) {
		return false, nil, true
	}
	next := cur.DeepCopy()
	next.Spec = want.Spec
	next.Labels = merge(cur.Labels, want.Labels)
	out.do(updateObject{Object: next})
	return true, rayspec.RouteWeights(cur), true
}

func conflict(out *planned, warning event, err error) {
	out.tell(warning)
	out.Err = errors.Join(out.Err, err)
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
