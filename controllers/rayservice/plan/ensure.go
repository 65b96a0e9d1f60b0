package plan

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/raygate/raygate/internal/owned/ownerref"
	"github.com/raygate/raygate/internal/raypod"
	"github.com/raygate/raygate/internal/rayspec"
)

// The ensure functions compare an object raygate wants with the one observed and ask for
// the write that makes them match, if any (ownerref.Decide). changed: a write was asked for.
// ok: false when the object is not controlled (by UID) by the owner raygate gives it;
// raygate then leaves it alone and reports it (OwnershipConflict), and nothing moves until
// it is gone.

// ownedObject is a pointer to an object the RayService (or one of its clusters) owns.
type ownedObject interface {
	comparable
	Object
}

// ensure asks for the write that brings cur (nil: none) to want.
func ensure[T ownedObject](cur, want T, merge ownerref.Merge[T], act *Effects, out *Outcome) (changed, ok bool) {
	var none T
	c := ownerref.Decide(want, cur, cur != none && ownerref.SameController(cur, want), merge)
	switch c.Op {
	case ownerref.Create:
		act.do(CreateObject{Object: c.Object})
	case ownerref.Update:
		act.do(UpdateObject{Object: c.Object})
	case ownerref.Report:
		out.conflict(foreign(cur, want))
		return false, false
	default:
		return false, true
	}
	return true, true
}

// foreign describes an object with a wanted name that want's owner does not control.
func foreign(cur, want Object) string {
	return ownerref.NewConflict(KindOf(cur), cur, ownerref.WantedOwner(want, RayServiceKind)).String()
}

// ensureService sets the fields raygate owns, leaving what the API server filled in
// (clusterIP, nodePorts, ...) alone.
func ensureService(in inputs, want *corev1.Service, act *Effects, out *Outcome) (changed, ok bool) {
	cur := in.obs.Services[want.Name]
	if why := unsafeService(want); why != "" && (cur == nil || ownerref.SameController(cur, want)) {
		// Admission and the controller's own validation refuse such overrides; a Service
		// that could point outside the cluster's pods is never written, whatever the spec.
		verb := "create"
		if cur != nil {
			verb = "write"
		}
		out.conflict(fmt.Sprintf("Service %s would be %s; raygate does not %s it", want.Name, why, verb))
		return false, false
	}
	return ensure(cur, want, mergeService, act, out)
}

// mergeService is raypod.MergeService keeping the stored Service's cluster IP mode: as
// under KubeRay, a RayService's Services are never recreated (a head Service made with a
// cluster IP keeps it; a new one is headless).
func mergeService(cur, want *corev1.Service) (*corev1.Service, bool) {
	if want.Spec.ClusterIP != "" {
		w := *want
		w.Spec.ClusterIP = ""
		want = &w
	}
	return raypod.MergeService(cur, want)
}

func ensureGateway(in inputs, want *gwv1.Gateway, act *Effects, out *Outcome) (changed, ok bool) {
	return ensure(in.obs.Gateway, want, mergeGateway, act, out)
}

func mergeGateway(cur, want *gwv1.Gateway) (*gwv1.Gateway, bool) {
	matches := equality.Semantic.DeepDerivative(want.Spec, cur.Spec) && len(want.Spec.Listeners) == len(cur.Spec.Listeners)
	return withSpecAndLabels(cur, want, matches, func(next, want *gwv1.Gateway) { next.Spec = want.Spec })
}

// ensureRoute also returns, on an update, the weights the route had before.
func ensureRoute(in inputs, want *gwv1.HTTPRoute, act *Effects, out *Outcome) (changed bool, before map[string]int32, ok bool) {
	cur := in.obs.Route
	changed, ok = ensure(cur, want, mergeRoute, act, out)
	if changed && cur != nil {
		before = rayspec.RouteWeights(cur)
	}
	return changed, before, ok
}

func mergeRoute(cur, want *gwv1.HTTPRoute) (*gwv1.HTTPRoute, bool) {
	return withSpecAndLabels(cur, want, routeSpecMatches(want, cur), func(next, want *gwv1.HTTPRoute) { next.Spec = want.Spec })
}

// withSpecAndLabels is a copy of cur with want's spec (setSpec) and labels, others' labels
// kept, or nil when the spec matches and cur has the labels (objects made by an older
// raygate lack the label the cache selects on, and get it). It is never recreated.
func withSpecAndLabels[T ownedObject](cur, want T, specMatches bool, setSpec func(next, want T)) (T, bool) {
	var none T
	if specMatches && ownerref.HasEntries(cur.GetLabels(), want.GetLabels()) {
		return none, false
	}
	next := cur.DeepCopyObject().(T)
	setSpec(next, want)
	next.SetLabels(merge(cur.GetLabels(), want.GetLabels()))
	return next, false
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
