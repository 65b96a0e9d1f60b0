package plan

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/rayspec"
	"github.com/raygate/raygate/internal/untrusted"
	"github.com/raygate/raygate/internal/validation"
)

// A RayService's routes attach to raygate's own `<service>-gateway` or, with the
// raygate.ray.io/gateway annotation, to a Gateway someone else owns, which raygate never
// writes (it is not even read: the routes' parent status is the Gateway's answer). Both
// routes, the HTTPRoute and, for Serve's gRPC port, the GRPCRoute, are built from the same
// backends in the same pass, so they carry the same weights at every step.

// defaultAttachment is the route attachment without annotations.
var defaultAttachment = validation.RouteAttachment{PathPrefix: validation.DefaultPathPrefix}

// parentOf is the Gateway the routes attach to.
func parentOf(svc *rayv1.RayService, at validation.RouteAttachment) types.NamespacedName {
	if at.Gateway != nil {
		return *at.Gateway
	}
	return types.NamespacedName{Namespace: svc.Namespace, Name: rayspec.GatewayName(svc.Name)}
}

// parentRef refers to the Gateway; raygate's own one without a namespace, as before shared
// Gateways existed, so a route written by an older raygate is not rewritten.
func parentRef(svc *rayv1.RayService, at validation.RouteAttachment) gwv1.ParentReference {
	p := parentOf(svc, at)
	ref := gwv1.ParentReference{Group: ptr.To(gwv1.Group(gwv1.GroupName)), Kind: ptr.To(gwv1.Kind("Gateway")), Name: gwv1.ObjectName(p.Name)}
	if at.Gateway != nil {
		ref.Namespace = ptr.To(gwv1.Namespace(p.Namespace))
	}
	return ref
}

func hostnames(at validation.RouteAttachment) []gwv1.Hostname {
	if len(at.Hostnames) == 0 {
		return nil
	}
	out := make([]gwv1.Hostname, len(at.Hostnames))
	for i, h := range at.Hostnames {
		out[i] = gwv1.Hostname(h)
	}
	return out
}

// attachedHTTPRoute is httpRoute with the annotations' parent, hostnames and path prefix.
func attachedHTTPRoute(svc *rayv1.RayService, at validation.RouteAttachment, backends []backend) *gwv1.HTTPRoute {
	rt := httpRoute(svc, backends)
	rt.Spec.ParentRefs = []gwv1.ParentReference{parentRef(svc, at)}
	rt.Spec.Hostnames = hostnames(at)
	if at.PathPrefix != "" {
		rt.Spec.Rules[0].Matches[0].Path.Value = ptr.To(at.PathPrefix)
	}
	return rt
}

// grpcBackend is a cluster's serve-grpc port (ok false: its head does not expose one).
func grpcPort(rc *rayv1.RayCluster) (int32, bool) {
	for _, p := range rayspec.ServePorts(rayspec.HeadRayContainer(&rc.Spec)) {
		if p.Name == rayspec.ServeGRPCPortName {
			return p.Port, true
		}
	}
	return 0, false
}

// grpcBackends are the HTTP backends on each cluster's serve-grpc port, same weights; ok is
// false when a cluster with a backend exposes no gRPC port (no GRPCRoute can carry it).
func grpcBackends(r roles, http []backend) ([]backend, bool) {
	out := make([]backend, 0, len(http))
	for _, b := range http {
		var rc *rayv1.RayCluster
		for _, s := range []slot{r.Active, r.Pending} {
			if s.name() == b.Cluster {
				rc = s.cluster()
			}
		}
		if rc == nil {
			return nil, false
		}
		port, ok := grpcPort(rc)
		if !ok {
			return nil, false
		}
		out = append(out, backend{Cluster: b.Cluster, Port: port, Weight: b.Weight})
	}
	return out, len(out) > 0
}

// grpcRoute is `<service>-grpcroute`: the same parent and hostnames as the HTTPRoute, one
// rule matching every gRPC method, and the same weighted backends on the serve-grpc port.
func grpcRoute(svc *rayv1.RayService, at validation.RouteAttachment, backends []backend) *gwv1.GRPCRoute {
	refs := refsTo(backends, func(r gwv1.BackendRef) gwv1.GRPCBackendRef { return gwv1.GRPCBackendRef{BackendRef: r} })
	return &gwv1.GRPCRoute{
		ObjectMeta: ownedMeta(svc, rayspec.GRPCRouteName(svc.Name)),
		Spec: gwv1.GRPCRouteSpec{
			CommonRouteSpec: gwv1.CommonRouteSpec{ParentRefs: []gwv1.ParentReference{parentRef(svc, at)}},
			Hostnames:       hostnames(at),
			Rules:           []gwv1.GRPCRouteRule{{BackendRefs: refs}},
		},
	}
}

// GRPCRouteWeights reads a GRPCRoute's weight per cluster, like rayspec.RouteWeights.
func GRPCRouteWeights(rt *gwv1.GRPCRoute) map[string]int32 {
	out := map[string]int32{}
	suffix := rayspec.ClusterServeServiceName("")
	for _, r := range rt.Spec.Rules {
		for _, b := range r.BackendRefs {
			out[strings.TrimSuffix(string(b.Name), suffix)] += ptr.Deref(b.Weight, 1)
		}
	}
	return out
}

// ensureGRPCRoute is ensureRoute for the GRPCRoute.
func ensureGRPCRoute(in inputs, want *gwv1.GRPCRoute, act *Effects, out *Outcome) (changed, ok bool) {
	return ensure(in.obs.GRPCRoute, want, mergeGRPCRoute, act, out)
}

func mergeGRPCRoute(cur, want *gwv1.GRPCRoute) (*gwv1.GRPCRoute, bool) {
	return withSpecAndLabels(cur, want, grpcRouteSpecMatches(want, cur), func(next, want *gwv1.GRPCRoute) { next.Spec = want.Spec })
}

// grpcRouteSpecMatches: raygate's fields have their values, and no backend, rule, parent or
// hostname is missing or extra (see routeSpecMatches).
func grpcRouteSpecMatches(want, cur *gwv1.GRPCRoute) bool {
	if !equality.Semantic.DeepDerivative(want.Spec, cur.Spec) || len(want.Spec.ParentRefs) != len(cur.Spec.ParentRefs) ||
		len(want.Spec.Rules) != len(cur.Spec.Rules) || len(want.Spec.Hostnames) != len(cur.Spec.Hostnames) {
		return false
	}
	for i := range want.Spec.Rules {
		if len(want.Spec.Rules[i].BackendRefs) != len(cur.Spec.Rules[i].BackendRefs) {
			return false
		}
	}
	return true
}

// planGRPCRoute keeps the GRPCRoute on the same backends and weights as the HTTPRoute when
// the Gateway API serves GRPCRoutes and every cluster with a backend exposes serve-grpc.
// managed is false when there is none to keep: the route is then not waited on.
func planGRPCRoute(in inputs, r roles, at validation.RouteAttachment, http []backend, act *Effects, out *Outcome) (managed, changed, ok bool, note string) {
	if !in.obs.GRPCRouteAPI {
		return false, false, true, ""
	}
	backends, all := grpcBackends(r, http)
	if !all {
		if in.obs.GRPCRoute != nil && metav1.IsControlledBy(in.obs.GRPCRoute, in.want.Service) {
			// A cluster without gRPC cannot take a share of gRPC traffic: the route is left
			// as it is, and the HTTP upgrade goes on.
			out.note("GRPCRoute " + in.obs.GRPCRoute.Name + " left as it is: a cluster with an HTTPRoute backend exposes no serve-grpc port")
		}
		return false, false, true, ""
	}
	changed, ok = ensureGRPCRoute(in, grpcRoute(in.want.Service, at, backends), act, out)
	return true, changed, ok, ""
}

// routeParentState is what a route's status says about one parent Gateway.
type routeParentState struct {
	// Accepted: Accepted True at the route's generation, and ResolvedRefs not False.
	Accepted bool
	// Refused: Accepted False (Reason says why); neither Accepted nor Refused: no answer
	// for the current generation yet.
	Refused bool
	Reason  string
	Note    string
	// Unresolved: accepted, but a backend is not resolved (ResolvedRefs False).
	Unresolved bool
}

// parentState reads a route's parent status for the Gateway at parent; routeNS is the
// route's namespace (a parentRef without a namespace means it).
func parentState(kind, name, routeNS string, generation int64, parents []gwv1.RouteParentStatus, parent types.NamespacedName) routeParentState {
	for _, p := range parents {
		ns := routeNS
		if p.ParentRef.Namespace != nil {
			ns = string(*p.ParentRef.Namespace)
		}
		if string(p.ParentRef.Name) != parent.Name || ns != parent.Namespace {
			continue
		}
		what := fmt.Sprintf("%s %s", kind, name)
		if c := meta.FindStatusCondition(p.Conditions, string(gwv1.RouteConditionAccepted)); c != nil && c.Status == metav1.ConditionFalse &&
			(c.ObservedGeneration == 0 || c.ObservedGeneration >= generation) {
			// The message is the Gateway controller's, written into a status the route's
			// namespace may be able to write too: quoted sanitized and cut.
			return routeParentState{Refused: true, Reason: untrusted.Text(c.Reason, 64),
				Note: fmt.Sprintf("Gateway %s does not accept %s (%s: %s)", parent, what, untrusted.Text(c.Reason, 64), untrusted.Text(c.Message, 200))}
		}
		if ok, why := conditionCurrent(p.Conditions, string(gwv1.RouteConditionAccepted), generation); !ok {
			return routeParentState{Note: what + ": " + why}
		}
		if c := meta.FindStatusCondition(p.Conditions, string(gwv1.RouteConditionResolvedRefs)); c != nil && c.Status == metav1.ConditionFalse {
			return routeParentState{Unresolved: true,
				Note: fmt.Sprintf("%s: ResolvedRefs is False (%s: %s)", what, untrusted.Text(c.Reason, 64), untrusted.Text(c.Message, 200))}
		}
		return routeParentState{Accepted: true}
	}
	return routeParentState{Note: fmt.Sprintf("%s %s: not accepted by Gateway %s yet (no status for that parent)", kind, name, parent)}
}

// lastAnswer is the Gateway's last answer about a route, whatever generation it was for:
// what condition RouteAccepted shows, so it does not flap to Unknown each time a traffic step
// writes the route (the step itself still waits for the answer on the new generation).
func lastAnswer(kind, name, routeNS string, parents []gwv1.RouteParentStatus, parent types.NamespacedName) routeParentState {
	s := parentState(kind, name, routeNS, 0, parents, parent)
	if s.Unresolved {
		return routeParentState{Accepted: true}
	}
	return s
}

// sharedRouteAcceptance is condition RouteAccepted for routes on a shared Gateway.
func sharedRouteAcceptance(in inputs, service string, parent types.NamespacedName, grpc bool) metav1.Condition {
	states := []routeParentState{{Note: "HTTPRoute " + rayspec.HTTPRouteName(service) + " is being created"}}
	if rt := in.obs.Route; rt != nil {
		states[0] = lastAnswer("HTTPRoute", rt.Name, rt.Namespace, rt.Status.Parents, parent)
	}
	if grpc {
		g := routeParentState{Note: "GRPCRoute " + rayspec.GRPCRouteName(service) + " is being created"}
		if rt := in.obs.GRPCRoute; rt != nil {
			g = lastAnswer("GRPCRoute", rt.Name, rt.Namespace, rt.Status.Parents, parent)
		}
		states = append(states, g)
	}
	return routeAcceptance(states...)
}

// Condition RouteAccepted (raygate's): whether the shared Gateway accepts the routes.
const (
	ConditionRouteAccepted = "RouteAccepted"
	// ReasonRoutePending: the Gateway has not answered for the routes' current generation.
	ReasonRoutePending = "Pending"
	// EventRouteNotAccepted and EventRouteAccepted announce the condition's changes.
	EventRouteNotAccepted = "RouteNotAccepted"
	EventRouteAccepted    = "RouteAccepted"
)

// routeAcceptance turns the routes' parent states into the RouteAccepted condition: False
// with the Gateway's reason (NotAllowedByListeners, ...) when it refuses one, Unknown while
// it has not answered, True when it accepts all.
func routeAcceptance(states ...routeParentState) metav1.Condition {
	var notes []string
	status, reason := metav1.ConditionTrue, string(gwv1.RouteReasonAccepted)
	for _, s := range states {
		switch {
		case s.Refused:
			if status != metav1.ConditionFalse {
				status, reason, notes = metav1.ConditionFalse, s.Reason, nil
			}
			notes = append(notes, s.Note)
		case !s.Accepted && status != metav1.ConditionFalse:
			if status == metav1.ConditionTrue {
				status, reason = metav1.ConditionUnknown, ReasonRoutePending
			}
			notes = append(notes, s.Note)
		}
	}
	msg := "the Gateway accepts the routes"
	switch status {
	case metav1.ConditionFalse:
		msg = strings.Join(notes, "; ") + "; no traffic moves until it does"
	case metav1.ConditionUnknown:
		msg = strings.Join(notes, "; ")
	}
	return metav1.Condition{Type: ConditionRouteAccepted, Status: status, Reason: reason, Message: msg}
}

// setRouteAccepted sets RouteAccepted while the routes attach to a shared Gateway (removes
// it otherwise), and announces a refusal, and the end of one, with an event.
func setRouteAccepted(in inputs, st *rayv1.RayServiceStatuses, c *metav1.Condition, now metav1.Time, out *Outcome) {
	if c == nil {
		meta.RemoveStatusCondition(&st.Conditions, ConditionRouteAccepted)
		return
	}
	next := *c
	next.ObservedGeneration, next.LastTransitionTime = in.want.Service.Generation, now
	meta.SetStatusCondition(&st.Conditions, next)
	prev := meta.FindStatusCondition(in.stored.Conditions, ConditionRouteAccepted)
	switch {
	case next.Status == metav1.ConditionFalse && (prev == nil || prev.Status != metav1.ConditionFalse || prev.Message != next.Message):
		out.tell(WarningEvent(nil, EventRouteNotAccepted, "AttachRoute", "%s", next.Message))
	case next.Status == metav1.ConditionTrue && prev != nil && prev.Status == metav1.ConditionFalse:
		out.tell(NormalEvent(nil, EventRouteAccepted, "AttachRoute", "%s", next.Message))
	}
}
