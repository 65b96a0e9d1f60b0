package plan

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// gatewayReady reports whether the Gateway's controller accepted and programmed its current
// generation; the message says what is missing.
func gatewayReady(gw *gwv1.Gateway) (bool, string) {
	if gw == nil {
		return false, "the Gateway does not exist yet"
	}
	for _, t := range []gwv1.GatewayConditionType{gwv1.GatewayConditionAccepted, gwv1.GatewayConditionProgrammed} {
		if ok, why := conditionCurrent(gw.Status.Conditions, string(t), gw.Generation); !ok {
			return false, fmt.Sprintf("Gateway %s (class %s): %s", gw.Name, gw.Spec.GatewayClassName, why)
		}
	}
	return true, ""
}

// routeReady reports whether the controller of the route's parent Gateway accepted the
// route's current generation (weights included) and resolved its backends.
func routeReady(rt *gwv1.HTTPRoute, gatewayName string) (bool, string) {
	if rt == nil {
		return false, "the HTTPRoute does not exist yet"
	}
	for _, p := range rt.Status.Parents {
		if string(p.ParentRef.Name) != gatewayName {
			continue
		}
		if ok, why := conditionCurrent(p.Conditions, string(gwv1.RouteConditionAccepted), rt.Generation); !ok {
			return false, fmt.Sprintf("HTTPRoute %s: %s", rt.Name, why)
		}
		if c := meta.FindStatusCondition(p.Conditions, string(gwv1.RouteConditionResolvedRefs)); c != nil && c.Status == metav1.ConditionFalse {
			return false, fmt.Sprintf("HTTPRoute %s: ResolvedRefs is False (%s: %s)", rt.Name, c.Reason, c.Message)
		}
		return true, ""
	}
	return false, fmt.Sprintf("HTTPRoute %s: not accepted by Gateway %s yet (no status for that parent)", rt.Name, gatewayName)
}

func conditionCurrent(conds []metav1.Condition, t string, generation int64) (bool, string) {
	c := meta.FindStatusCondition(conds, t)
	switch {
	case c == nil:
		return false, t + " not reported yet"
	case c.Status != metav1.ConditionTrue:
		return false, fmt.Sprintf("%s is %s (%s: %s)", t, c.Status, c.Reason, c.Message)
	case c.ObservedGeneration != 0 && c.ObservedGeneration < generation:
		return false, fmt.Sprintf("%s reported for generation %d, not yet for %d", t, c.ObservedGeneration, generation)
	}
	return true, ""
}
