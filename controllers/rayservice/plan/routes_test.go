package plan

import (
	"maps"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/validation"
)

var infraShared = types.NamespacedName{Namespace: "infra", Name: "shared"}

func TestAttachedHTTPRoute(t *testing.T) {
	svc := testService()
	bs := []backend{{Cluster: "svc-aaaaa", Port: 8000, Weight: 70}, {Cluster: "svc-bbbbb", Port: 8000, Weight: 30}}
	if own := attachedHTTPRoute(svc, defaultAttachment, bs); !equality.Semantic.DeepEqual(own, httpRoute(svc, bs)) {
		t.Errorf("without annotations the route changed:\n%s", cmp.Diff(httpRoute(svc, bs), own))
	}
	rt := attachedHTTPRoute(svc, validation.RouteAttachment{Gateway: &infraShared, Hostnames: []string{"api.example.com", "*.apps.example.com"}, PathPrefix: "/v1"}, bs)
	want := gwv1.ParentReference{Group: ptr.To(gwv1.Group(gwv1.GroupName)), Kind: ptr.To(gwv1.Kind("Gateway")), Namespace: ptr.To(gwv1.Namespace("infra")), Name: "shared"}
	if diff := cmp.Diff([]gwv1.ParentReference{want}, rt.Spec.ParentRefs); diff != "" {
		t.Errorf("parentRefs (-want +got):\n%s", diff)
	}
	if got := rt.Spec.Hostnames; len(got) != 2 || got[0] != "api.example.com" || got[1] != "*.apps.example.com" {
		t.Errorf("hostnames %v", got)
	}
	if got := *rt.Spec.Rules[0].Matches[0].Path.Value; got != "/v1" {
		t.Errorf("path prefix %q", got)
	}
	if rt.Namespace != svc.Namespace || !metav1.IsControlledBy(rt, svc) {
		t.Errorf("the route lives with and belongs to the RayService: %s %v", rt.Namespace, rt.OwnerReferences)
	}
}

func TestGRPCRoute(t *testing.T) {
	svc := testService()
	at := validation.RouteAttachment{Gateway: &infraShared, Hostnames: []string{"grpc.example.com"}, PathPrefix: "/"}
	rt := grpcRoute(svc, at, []backend{{Cluster: "svc-aaaaa", Port: 9000, Weight: 70}, {Cluster: "svc-bbbbb", Port: 9001, Weight: 30}})
	if rt.Name != "svc-grpcroute" || rt.Spec.ParentRefs[0].Name != "shared" || *rt.Spec.ParentRefs[0].Namespace != "infra" || rt.Spec.Hostnames[0] != "grpc.example.com" {
		t.Errorf("route %s parents %v hostnames %v", rt.Name, rt.Spec.ParentRefs, rt.Spec.Hostnames)
	}
	if got := GRPCRouteWeights(rt); !cmp.Equal(got, map[string]int32{"svc-aaaaa": 70, "svc-bbbbb": 30}) {
		t.Errorf("weights %v", got)
	}
	if p := *rt.Spec.Rules[0].BackendRefs[1].Port; p != 9001 || rt.Spec.Rules[0].BackendRefs[1].Name != "svc-bbbbb-serve-svc" {
		t.Errorf("backend %v", rt.Spec.Rules[0].BackendRefs[1])
	}
}

func TestParentState(t *testing.T) {
	cond := func(t gwv1.RouteConditionType, s metav1.ConditionStatus, reason string, gen int64) metav1.Condition {
		return metav1.Condition{Type: string(t), Status: s, Reason: reason, Message: "msg\x1b[31m", ObservedGeneration: gen}
	}
	sharedRef := gwv1.ParentReference{Name: "shared", Namespace: ptr.To(gwv1.Namespace("infra"))}
	for _, tc := range []struct {
		name    string
		parents []gwv1.RouteParentStatus
		want    routeParentState
		note    string
	}{
		{name: "no status", want: routeParentState{}, note: "not accepted by Gateway infra/shared yet"},
		{name: "status for a same-named Gateway in the route's namespace is not ours", parents: []gwv1.RouteParentStatus{{ParentRef: gwv1.ParentReference{Name: "shared"},
			Conditions: []metav1.Condition{cond(gwv1.RouteConditionAccepted, metav1.ConditionTrue, "Accepted", 2)}}}, note: "no status for that parent"},
		{name: "accepted", parents: []gwv1.RouteParentStatus{{ParentRef: sharedRef, Conditions: []metav1.Condition{
			cond(gwv1.RouteConditionAccepted, metav1.ConditionTrue, "Accepted", 2), cond(gwv1.RouteConditionResolvedRefs, metav1.ConditionTrue, "ResolvedRefs", 2)}}},
			want: routeParentState{Accepted: true}},
		{name: "accepted for an older generation", parents: []gwv1.RouteParentStatus{{ParentRef: sharedRef, Conditions: []metav1.Condition{
			cond(gwv1.RouteConditionAccepted, metav1.ConditionTrue, "Accepted", 1)}}}, note: "not yet for 2"},
		{name: "refused by listeners", parents: []gwv1.RouteParentStatus{{ParentRef: sharedRef, Conditions: []metav1.Condition{
			cond(gwv1.RouteConditionAccepted, metav1.ConditionFalse, "NotAllowedByListeners", 2)}}},
			want: routeParentState{Refused: true, Reason: "NotAllowedByListeners"}, note: "Gateway infra/shared does not accept HTTPRoute svc-httproute (NotAllowedByListeners: msg"},
		{name: "backends not resolved", parents: []gwv1.RouteParentStatus{{ParentRef: sharedRef, Conditions: []metav1.Condition{
			cond(gwv1.RouteConditionAccepted, metav1.ConditionTrue, "Accepted", 2), cond(gwv1.RouteConditionResolvedRefs, metav1.ConditionFalse, "BackendNotFound", 2)}}},
			want: routeParentState{}, note: "ResolvedRefs is False (BackendNotFound"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := parentState("HTTPRoute", "svc-httproute", "team", 2, tc.parents, infraShared)
			if got.Unresolved != (tc.name == "backends not resolved") {
				t.Errorf("Unresolved = %v", got.Unresolved)
			}
			if got.Accepted != tc.want.Accepted || got.Refused != tc.want.Refused || got.Reason != tc.want.Reason || !strings.Contains(got.Note, tc.note) {
				t.Errorf("parentState = %+v, want %+v with note containing %q", got, tc.want, tc.note)
			}
			if strings.Contains(got.Note, "\x1b") {
				t.Errorf("the Gateway's message is quoted unsanitized: %q", got.Note)
			}
		})
	}
}

func TestRouteAcceptance(t *testing.T) {
	ok := routeParentState{Accepted: true}
	refused := routeParentState{Refused: true, Reason: "NotAllowedByListeners", Note: "Gateway infra/shared does not accept GRPCRoute"}
	waiting := routeParentState{Note: "HTTPRoute: not reported"}
	for _, tc := range []struct {
		name   string
		states []routeParentState
		want   string
		msg    string
	}{
		{"all accepted", []routeParentState{ok, ok}, "True/Accepted", "the Gateway accepts the routes"},
		{"one refused wins over waiting", []routeParentState{waiting, refused}, "False/NotAllowedByListeners", "does not accept GRPCRoute; no traffic moves until it does"},
		{"waiting", []routeParentState{ok, waiting}, "Unknown/Pending", "HTTPRoute: not reported"},
	} {
		c := routeAcceptance(tc.states...)
		if got := string(c.Status) + "/" + c.Reason; got != tc.want || !strings.Contains(c.Message, tc.msg) {
			t.Errorf("%s: %s %q, want %s containing %q", tc.name, got, c.Message, tc.want, tc.msg)
		}
	}
}

// sharedService is an incremental RayService attached to infra/shared whose head exposes
// Serve's gRPC port.
func sharedService() *rayv1.RayService {
	svc := incrementalService(50, 25, 5)
	svc.Annotations = map[string]string{rayv1.SharedGatewayKey: "infra/shared", rayv1.RouteHostnamesKey: "api.example.com"}
	head := &svc.Spec.RayClusterSpec.HeadGroupSpec.Template.Spec.Containers[0]
	head.Ports = append(head.Ports, corev1.ContainerPort{Name: "serve-grpc", ContainerPort: 9000})
	return svc
}

// noGatewayWrites fails on any planned write of a Gateway.
func noGatewayWrites(t *testing.T, p *reconciled) {
	t.Helper()
	for _, a := range append(append([]Action{}, p.out.ClusterActions...), p.out.Actions...) {
		switch a := a.(type) {
		case CreateObject:
			if _, ok := a.Object.(*gwv1.Gateway); ok {
				t.Fatalf("pass %d creates a Gateway with a shared Gateway configured", p.index)
			}
		case UpdateObject:
			if _, ok := a.Object.(*gwv1.Gateway); ok {
				t.Fatalf("pass %d updates a Gateway with a shared Gateway configured", p.index)
			}
		}
	}
}

func TestPlanSharedGatewayUpgradeWithGRPC(t *testing.T) {
	w := newWorld(sharedService())
	w.grpcAPI = true
	c := newChecker()
	for range 300 {
		p, err := w.step()
		if err != nil {
			t.Fatal(err)
		}
		noGatewayWrites(t, p)
		if b := c.check(p); len(b) > 0 {
			t.Fatal(b)
		}
		if converged(w) && w.route != nil && w.grpcRoute != nil && condition(w.svc.Status, ConditionRouteAccepted) == "True/Accepted" {
			break
		}
	}
	if w.gateway != nil {
		t.Fatal("a Gateway was created")
	}
	if w.route == nil || w.grpcRoute == nil {
		t.Fatalf("routes: HTTPRoute %v, GRPCRoute %v", w.route != nil, w.grpcRoute != nil)
	}
	if got := condition(w.svc.Status, ConditionRouteAccepted); got != "True/Accepted" {
		t.Fatalf("RouteAccepted %s", got)
	}
	if ns := w.grpcRoute.Spec.ParentRefs[0].Namespace; ns == nil || *ns != "infra" || w.route.Spec.Hostnames[0] != "api.example.com" {
		t.Errorf("GRPCRoute parent %v, HTTPRoute hostnames %v", w.grpcRoute.Spec.ParentRefs, w.route.Spec.Hostnames)
	}

	w.updateSpec(func(s *rayv1.RayService) { setTestImage(s, "rayproject/ray:2.53.0") })
	old := w.svc.Status.ActiveServiceStatus.RayClusterName
	var steps []map[string]int32
	checked(t, w, c, "the promotion", func(p *reconciled) bool {
		noGatewayWrites(t, p)
		// Each step writes the routes; the condition keeps the Gateway's last answer
		// instead of flapping to Unknown until it answers again.
		if got := condition(p.out.Status, ConditionRouteAccepted); got != "True/Accepted" {
			t.Fatalf("pass %d: RouteAccepted %s during the upgrade", p.index, got)
		}
		if p.after.grpc != nil && (len(steps) == 0 || !maps.Equal(p.after.grpc, steps[len(steps)-1])) {
			steps = append(steps, p.after.grpc)
		}
		return p.out.Status.ActiveServiceStatus.RayClusterName != old && p.out.Status.ActiveServiceStatus.RayClusterName != ""
	})
	if len(steps) < 4 {
		t.Errorf("the GRPCRoute moved in %d steps, want the HTTPRoute's 25%% steps: %v", len(steps), steps)
	}
	if w.gateway != nil {
		t.Fatal("a Gateway was created during the upgrade")
	}
}

func TestPlanSharedGatewayRefusedMovesNoTraffic(t *testing.T) {
	w := newWorld(sharedService())
	w.grpcAPI = true
	settle(t, w)
	w.routeRefusal = string(gwv1.RouteReasonNotAllowedByListeners)
	w.updateSpec(func(s *rayv1.RayService) { setTestImage(s, "rayproject/ray:2.53.0") })
	c := newChecker()
	refusedEvents := 0
	for range 200 {
		p, err := w.step()
		if err != nil {
			t.Fatal(err)
		}
		if b := c.check(p); len(b) > 0 {
			t.Fatal(b)
		}
		refusedEvents += len(eventsOf(p.out, EventRouteNotAccepted))
		if pendingTraffic(w.svc.Status) > 0 {
			t.Fatalf("pass %d moved %d%% of the traffic through a route the Gateway does not accept", p.index, pendingTraffic(w.svc.Status))
		}
	}
	cnd := findCondition(w.svc.Status.Conditions, ConditionRouteAccepted)
	if cnd == nil || cnd.Status != metav1.ConditionFalse || cnd.Reason != "NotAllowedByListeners" || !strings.Contains(cnd.Message, "Gateway infra/shared does not accept") {
		t.Fatalf("RouteAccepted %+v", cnd)
	}
	if refusedEvents != 1 {
		t.Errorf("%d RouteNotAccepted events, want one", refusedEvents)
	}
	if msg := findCondition(w.svc.Status.Conditions, rayv1.UpgradeInProgress).Message; !strings.Contains(msg, "does not accept") {
		t.Errorf("UpgradeInProgress does not say what it waits for: %s", msg)
	}

	// The Gateway's owner admits the namespace: the upgrade goes on.
	w.routeRefusal = ""
	w.acceptAt = w.now
	checked(t, w, c, "traffic moves once accepted", func(p *reconciled) bool { return pendingTraffic(p.out.Status) > 0 })
	if got := condition(w.svc.Status, ConditionRouteAccepted); got != "True/Accepted" {
		t.Errorf("RouteAccepted %s after the Gateway accepted", got)
	}
}

func TestRestrictSharedGateway(t *testing.T) {
	want := Admit(sharedService(), allGates, validation.Limits{}, "v1")
	if want.Invalid != "" || want.Route.Gateway == nil || *want.Route.Gateway != infraShared {
		t.Fatalf("admit: invalid %q, route %+v", want.Invalid, want.Route)
	}
	if got := RestrictSharedGateway(want, []string{"infra/*"}); got.Invalid != "" {
		t.Errorf("allowed: %s", got.Invalid)
	}
	got := RestrictSharedGateway(want, nil)
	if !strings.Contains(got.Invalid, "metadata.annotations[raygate.ray.io/gateway]: Forbidden: Gateway infra/shared is not in the manager's --allowed-shared-gateways") {
		t.Errorf("not allowed: %q", got.Invalid)
	}
	bad := sharedService()
	bad.Annotations[rayv1.RoutePathPrefixKey] = "v1"
	if got := Admit(bad, allGates, validation.Limits{}, "v1"); !strings.Contains(got.Invalid, "raygate.ray.io/path-prefix") {
		t.Errorf("a malformed annotation is not rejected: %q", got.Invalid)
	}
}
