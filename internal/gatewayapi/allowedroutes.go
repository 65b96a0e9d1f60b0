// Package gatewayapi holds pure decisions about Gateway API objects that raygate does not
// own: whether a Gateway's listeners admit a route, and how hostnames intersect. Admission
// uses them to warn before a route is written; the controller reads the verdict of the real
// Gateway implementation from the route's parent status instead.
package gatewayapi

import (
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// Route kinds raygate writes.
const (
	KindHTTPRoute = "HTTPRoute"
	KindGRPCRoute = "GRPCRoute"
)

// Route is what a Gateway's listeners are asked to admit.
type Route struct {
	Kind      string
	Namespace string
	// NamespaceLabels are the labels of the route's namespace; LabelsKnown is false when
	// they could not be read (a Selector listener cannot then be decided).
	NamespaceLabels map[string]string
	LabelsKnown     bool
	// Hostnames the route matches (empty: any).
	Hostnames []string
}

// Verdict is whether some listener of a Gateway admits a route.
type Verdict struct {
	// Allowed: at least one listener admits the route.
	Allowed bool
	// Undecided: the answer needs facts that were not available (namespace labels).
	Undecided bool
	// Reason is the Gateway API route condition reason when not allowed
	// (NotAllowedByListeners, NoMatchingListenerHostname).
	Reason string
	// Message says why, listener by listener.
	Message string
}

// Admits decides, as a Gateway API implementation does, whether a listener of gw lets the
// route attach: the listener's protocol carries the route's kind, allowedRoutes.kinds (or
// the protocol's default kinds) include it, allowedRoutes.namespaces (From Same by default,
// All, or Selector on the route namespace's labels) include the route's namespace, and the
// listener's hostname intersects the route's hostnames.
func Admits(gw *gwv1.Gateway, rt Route) Verdict {
	if gw == nil || len(gw.Spec.Listeners) == 0 {
		return Verdict{Reason: string(gwv1.RouteReasonNotAllowedByListeners), Message: "the Gateway has no listeners"}
	}
	var why []string
	undecided, hostOnly := false, false
	for i := range gw.Spec.Listeners {
		l := &gw.Spec.Listeners[i]
		ok, note := kindAllowed(l, rt.Kind)
		if ok {
			var known bool
			ok, known, note = namespaceAllowed(l, gw.Namespace, rt)
			undecided = undecided || !known
		}
		if ok && !HostnamesIntersect(l.Hostname, rt.Hostnames) {
			ok, hostOnly = false, true
			note = fmt.Sprintf("its hostname %s matches none of %s", string(*l.Hostname), strings.Join(rt.Hostnames, ", "))
		}
		if ok {
			return Verdict{Allowed: true}
		}
		why = append(why, fmt.Sprintf("listener %s: %s", l.Name, note))
	}
	v := Verdict{Reason: string(gwv1.RouteReasonNotAllowedByListeners), Message: strings.Join(why, "; ")}
	if hostOnly {
		v.Reason = string(gwv1.RouteReasonNoMatchingListenerHostname)
	}
	v.Undecided = undecided
	return v
}

// defaultKinds are the route kinds a listener admits when allowedRoutes.kinds is empty.
func defaultKinds(p gwv1.ProtocolType) []string {
	switch p {
	case gwv1.HTTPProtocolType, gwv1.HTTPSProtocolType:
		return []string{KindHTTPRoute, KindGRPCRoute}
	case gwv1.TLSProtocolType:
		return []string{"TLSRoute"}
	case gwv1.TCPProtocolType:
		return []string{"TCPRoute"}
	case gwv1.UDPProtocolType:
		return []string{"UDPRoute"}
	}
	return nil
}

func kindAllowed(l *gwv1.Listener, kind string) (bool, string) {
	if l.Protocol != gwv1.HTTPProtocolType && l.Protocol != gwv1.HTTPSProtocolType {
		return false, fmt.Sprintf("protocol %s does not carry %s", l.Protocol, kind)
	}
	var kinds []string
	if l.AllowedRoutes != nil && len(l.AllowedRoutes.Kinds) > 0 {
		for _, k := range l.AllowedRoutes.Kinds {
			if k.Group == nil || *k.Group == gwv1.GroupName {
				kinds = append(kinds, string(k.Kind))
			}
		}
	} else {
		kinds = defaultKinds(l.Protocol)
	}
	for _, k := range kinds {
		if k == kind {
			return true, ""
		}
	}
	return false, fmt.Sprintf("allowedRoutes.kinds (%s) does not include %s", strings.Join(kinds, ", "), kind)
}

// namespaceAllowed: known is false when a Selector needs labels that are unknown.
func namespaceAllowed(l *gwv1.Listener, gwNamespace string, rt Route) (ok, known bool, note string) {
	from := gwv1.NamespacesFromSame
	var sel *metav1.LabelSelector
	if l.AllowedRoutes != nil && l.AllowedRoutes.Namespaces != nil {
		if l.AllowedRoutes.Namespaces.From != nil {
			from = *l.AllowedRoutes.Namespaces.From
		}
		sel = l.AllowedRoutes.Namespaces.Selector
	}
	switch from {
	case gwv1.NamespacesFromAll:
		return true, true, ""
	case gwv1.NamespacesFromSame:
		if rt.Namespace == gwNamespace {
			return true, true, ""
		}
		return false, true, fmt.Sprintf("allowedRoutes.namespaces.from is Same: only routes in namespace %s may attach", gwNamespace)
	case gwv1.NamespacesFromSelector:
		if sel == nil {
			return false, true, "allowedRoutes.namespaces.from is Selector without a selector"
		}
		s, err := metav1.LabelSelectorAsSelector(sel)
		if err != nil {
			return false, true, "allowedRoutes.namespaces.selector is invalid: " + err.Error()
		}
		if !rt.LabelsKnown {
			return false, false, "allowedRoutes.namespaces.selector could not be checked: the labels of namespace " + rt.Namespace + " are unknown"
		}
		if s.Matches(labels.Set(rt.NamespaceLabels)) {
			return true, true, ""
		}
		return false, true, fmt.Sprintf("namespace %s does not match allowedRoutes.namespaces.selector %s", rt.Namespace, s.String())
	}
	return false, true, fmt.Sprintf("allowedRoutes.namespaces.from %s is not one raygate knows", from)
}

// HostnamesIntersect reports whether a listener's hostname (nil: any) matches at least one
// of a route's hostnames (empty: any), wildcards on either side as the Gateway API defines
// them: "*.example.com" matches "a.example.com" and "a.b.example.com", not "example.com".
func HostnamesIntersect(listener *gwv1.Hostname, route []string) bool {
	if listener == nil || *listener == "" || len(route) == 0 {
		return true
	}
	for _, h := range route {
		if hostMatches(string(*listener), h) || hostMatches(h, string(*listener)) {
			return true
		}
	}
	return false
}

// hostMatches: pattern (possibly "*.suffix") covers host (possibly a wildcard itself).
func hostMatches(pattern, host string) bool {
	if pattern == host {
		return true
	}
	suffix, ok := strings.CutPrefix(pattern, "*")
	if !ok {
		return false
	}
	// host must have at least one more label than the suffix: "*.a" covers "x.a" and
	// "*.x.a", not "a".
	h := strings.TrimPrefix(host, "*")
	return strings.HasSuffix(h, suffix) && len(h) > len(suffix)
}
