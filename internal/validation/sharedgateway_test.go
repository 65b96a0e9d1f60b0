package validation

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
)

func TestParseRouteAttachment(t *testing.T) {
	gwPath := "metadata.annotations[raygate.ray.io/gateway]"
	hostPath := "metadata.annotations[raygate.ray.io/hostnames]"
	pathPath := "metadata.annotations[raygate.ray.io/path-prefix]"
	for _, tc := range []struct {
		name      string
		ann       map[string]string
		want      RouteAttachment
		errPaths  []string
		errDetail string
	}{
		{name: "none: own Gateway, any host, /", want: RouteAttachment{PathPrefix: "/"}},
		{name: "all three", ann: map[string]string{rayv1.SharedGatewayKey: "infra/shared", rayv1.RouteHostnamesKey: "api.example.com, *.apps.example.com", rayv1.RoutePathPrefixKey: "/v1"},
			want: RouteAttachment{Gateway: &types.NamespacedName{Namespace: "infra", Name: "shared"}, Hostnames: []string{"api.example.com", "*.apps.example.com"}, PathPrefix: "/v1"}},
		{name: "gateway without namespace", ann: map[string]string{rayv1.SharedGatewayKey: "shared"}, want: RouteAttachment{PathPrefix: "/"}, errPaths: []string{gwPath}, errDetail: "must be <namespace>/<name>"},
		{name: "gateway with two slashes", ann: map[string]string{rayv1.SharedGatewayKey: "a/b/c"}, want: RouteAttachment{PathPrefix: "/"}, errPaths: []string{gwPath}},
		{name: "gateway namespace not a label", ann: map[string]string{rayv1.SharedGatewayKey: "Infra/shared"}, want: RouteAttachment{PathPrefix: "/"}, errPaths: []string{gwPath}, errDetail: "namespace:"},
		{name: "empty gateway", ann: map[string]string{rayv1.SharedGatewayKey: ""}, want: RouteAttachment{PathPrefix: "/"}, errPaths: []string{gwPath}},
		{name: "hostname: IP", ann: map[string]string{rayv1.RouteHostnamesKey: "10.1.2.3"}, want: RouteAttachment{PathPrefix: "/"}, errPaths: []string{hostPath}, errDetail: "IP address"},
		{name: "hostname: wildcard in the middle", ann: map[string]string{rayv1.RouteHostnamesKey: "a.*.example.com"}, want: RouteAttachment{PathPrefix: "/"}, errPaths: []string{hostPath}},
		{name: "hostname: upper case and port", ann: map[string]string{rayv1.RouteHostnamesKey: "API.example.com,a.example.com:80,ok.example.com"},
			want: RouteAttachment{PathPrefix: "/", Hostnames: []string{"ok.example.com"}}, errPaths: []string{hostPath, hostPath}},
		{name: "hostname: stray comma and duplicate", ann: map[string]string{rayv1.RouteHostnamesKey: "a.example.com,,a.example.com"},
			want: RouteAttachment{PathPrefix: "/", Hostnames: []string{"a.example.com"}}, errPaths: []string{hostPath, hostPath}},
		{name: "hostname: more than 16", ann: map[string]string{rayv1.RouteHostnamesKey: strings.Repeat("a.example.com,", 16) + "b.example.com"},
			want: RouteAttachment{PathPrefix: "/"}, errPaths: []string{hostPath}},
		{name: "path: relative", ann: map[string]string{rayv1.RoutePathPrefixKey: "v1"}, want: RouteAttachment{PathPrefix: "/"}, errPaths: []string{pathPath}, errDetail: "must start with /"},
		{name: "path: dot segments", ann: map[string]string{rayv1.RoutePathPrefixKey: "/a/../b"}, want: RouteAttachment{PathPrefix: "/"}, errPaths: []string{pathPath}},
		{name: "path: encoded slash", ann: map[string]string{rayv1.RoutePathPrefixKey: "/a%2Fb"}, want: RouteAttachment{PathPrefix: "/"}, errPaths: []string{pathPath}},
		{name: "path: double slash", ann: map[string]string{rayv1.RoutePathPrefixKey: "/a//b"}, want: RouteAttachment{PathPrefix: "/"}, errPaths: []string{pathPath}},
		{name: "path: too long", ann: map[string]string{rayv1.RoutePathPrefixKey: "/" + strings.Repeat("a", 1024)}, want: RouteAttachment{PathPrefix: "/"}, errPaths: []string{pathPath}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, errs := ParseRouteAttachment(tc.ann)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("attachment (-want +got):\n%s", diff)
			}
			var paths []string
			for _, e := range errs {
				paths = append(paths, e.Field)
				if e.Type != field.ErrorTypeInvalid && e.Type != field.ErrorTypeTooMany {
					t.Errorf("error type %s", e.Type)
				}
			}
			if !cmp.Equal(tc.errPaths, paths) {
				t.Errorf("error paths %v, want %v (%v)", paths, tc.errPaths, errs.ToAggregate())
			}
			if tc.errDetail != "" && !strings.Contains(errs.ToAggregate().Error(), tc.errDetail) {
				t.Errorf("errors %v do not say %q", errs.ToAggregate(), tc.errDetail)
			}
		})
	}
}

func TestAllowsSharedGateway(t *testing.T) {
	ref := types.NamespacedName{Namespace: "infra", Name: "shared"}
	for _, tc := range []struct {
		list []string
		want bool
	}{
		{nil, false},
		{[]string{"infra/shared"}, true},
		{[]string{"infra/*"}, true},
		{[]string{"infra/other"}, false},
		{[]string{"other/*", "infra/shared"}, true},
		{[]string{"*/shared"}, false},
	} {
		if got := (Policy{AllowedSharedGateways: tc.list}).AllowsSharedGateway(ref); got != tc.want {
			t.Errorf("%v allows %s = %v, want %v", tc.list, ref, got, tc.want)
		}
	}
}

func TestValidSharedGatewayEntry(t *testing.T) {
	for e, bad := range map[string]bool{"infra/shared": false, "infra/*": false, "infra": true, "/x": true, "infra/": true, "In fra/x": true, "infra/Bad_Name": true} {
		if got := ValidSharedGatewayEntry(e) != ""; got != bad {
			t.Errorf("ValidSharedGatewayEntry(%q) bad = %v, want %v", e, got, bad)
		}
	}
}

func TestRouteAttachmentAdmission(t *testing.T) {
	on := Policy{AllowedSharedGateways: []string{"infra/*"}}
	shared := func(gw string) func(*rayv1.RayService) {
		return func(s *rayv1.RayService) { s.Annotations = map[string]string{rayv1.SharedGatewayKey: gw} }
	}
	for _, tc := range []struct {
		name     string
		policy   Policy
		svc      *rayv1.RayService
		want     field.ErrorList
		detail   string
		warnings []string
	}{
		{name: "feature off refuses with the path", svc: incremental(shared("infra/shared")),
			want: field.ErrorList{field.Forbidden(p("metadata.annotations[raygate.ray.io/gateway]"), "")}, detail: "shared Gateways are off on this cluster"},
		{name: "not in the allow-list", policy: on, svc: incremental(shared("other/shared")),
			want: field.ErrorList{field.Forbidden(p("metadata.annotations[raygate.ray.io/gateway]"), "")}, detail: "Gateway other/shared is not allowed here; allowed: infra/*"},
		{name: "allowed", policy: on, svc: incremental(shared("infra/shared"))},
		{name: "hostnames alone need no policy", svc: incremental(func(s *rayv1.RayService) {
			s.Annotations = map[string]string{rayv1.RouteHostnamesKey: "api.example.com"}
		})},
		{name: "ignored by NewCluster: warning", policy: on, svc: service(shared("infra/shared")),
			warnings: []string{"metadata.annotations: raygate.ray.io/gateway, raygate.ray.io/hostnames and raygate.ray.io/path-prefix are used only with upgradeStrategy.type NewClusterWithIncrementalUpgrade; they are ignored"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			errs, warnings := Validator{Gates: gateOn, Policy: tc.policy}.RayService(tc.svc)
			diffErrors(t, tc.want, errs)
			if tc.detail != "" && (len(errs) == 0 || !strings.Contains(errs[0].Detail, tc.detail)) {
				t.Errorf("errors %v do not say %q", errs.ToAggregate(), tc.detail)
			}
			diffWarnings(t, tc.warnings, warnings)
		})
	}
}

func TestSharedGatewayUpdate(t *testing.T) {
	on := Policy{AllowedSharedGateways: []string{"infra/*"}}
	old := incremental(func(s *rayv1.RayService) {
		s.Annotations = map[string]string{rayv1.SharedGatewayKey: "infra/a"}
		s.Status.ActiveServiceStatus.RayClusterName = "svc-aaaaa"
		s.Status.PendingServiceStatus.RayClusterName = "svc-bbbbb"
	})
	moved := old.DeepCopy()
	moved.Annotations[rayv1.SharedGatewayKey] = "infra/b"
	errs, _ := Validator{Gates: gateOn, Policy: on}.RayServiceUpdate(old, moved)
	diffErrors(t, field.ErrorList{field.Forbidden(p("metadata.annotations[raygate.ray.io/gateway]"), "")}, errs)

	// No upgrade in flight: the Gateway may change.
	idle := old.DeepCopy()
	idle.Status.PendingServiceStatus.RayClusterName = ""
	moved = idle.DeepCopy()
	moved.Annotations[rayv1.SharedGatewayKey] = "infra/b"
	errs, _ = Validator{Gates: gateOn, Policy: on}.RayServiceUpdate(idle, moved)
	diffErrors(t, nil, errs)

	// Ratchet: an object stored before the admin removed its Gateway from the list can
	// still be updated elsewhere.
	relabelled := idle.DeepCopy()
	relabelled.Labels = map[string]string{"team": "a"}
	errs, _ = Validator{Gates: gateOn}.RayServiceUpdate(idle, relabelled)
	diffErrors(t, nil, errs)
}

func TestSharedGatewayWarnings(t *testing.T) {
	svc := incremental(func(s *rayv1.RayService) {
		s.Namespace = "team-a"
		s.Annotations = map[string]string{rayv1.SharedGatewayKey: "infra/shared"}
	})
	a, ok := SharedGatewayToCheck(svc)
	if !ok {
		t.Fatal("SharedGatewayToCheck: not ok")
	}
	sameOnly := &gwv1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: "infra", Name: "shared"},
		Spec: gwv1.GatewaySpec{Listeners: []gwv1.Listener{{Name: "http", Protocol: gwv1.HTTPProtocolType, Port: 80}}}}
	all := sameOnly.DeepCopy()
	all.Spec.Listeners[0].AllowedRoutes = &gwv1.AllowedRoutes{Namespaces: &gwv1.RouteNamespaces{From: ptr.To(gwv1.NamespacesFromAll)}}
	grpc := svc.DeepCopy()
	grpc.Spec.RayClusterSpec.HeadGroupSpec.Template.Spec.Containers[0].Ports = append(grpc.Spec.RayClusterSpec.HeadGroupSpec.Template.Spec.Containers[0].Ports,
		corev1.ContainerPort{Name: "serve-grpc", ContainerPort: 9000})
	httpOnly := all.DeepCopy()
	httpOnly.Spec.Listeners[0].AllowedRoutes.Kinds = []gwv1.RouteGroupKind{{Kind: "HTTPRoute"}}

	for _, tc := range []struct {
		name  string
		svc   *rayv1.RayService
		state SharedGatewayState
		gw    *gwv1.Gateway
		want  []string
	}{
		{"not found", svc, SharedGatewayNotFound, nil, []string{"Gateway infra/shared does not exist yet"}},
		{"unreadable", svc, SharedGatewayUnreadable, nil, []string{"could not be read"}},
		{"unknown: silent", svc, SharedGatewayUnknown, nil, nil},
		{"Same refuses another namespace", svc, SharedGatewayFound, sameOnly, []string{"would not accept a HTTPRoute from namespace team-a (NotAllowedByListeners: listener http: allowedRoutes.namespaces.from is Same"}},
		{"All admits", svc, SharedGatewayFound, all, nil},
		{"gRPC checked when exposed", grpc, SharedGatewayFound, httpOnly, []string{"would not accept a GRPCRoute"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := SharedGatewayWarnings(tc.svc, a, tc.state, tc.gw, &Namespace{Name: "team-a", LabelsKnown: true})
			if len(got) != len(tc.want) {
				t.Fatalf("warnings %q, want %d containing %q", got, len(tc.want), tc.want)
			}
			for i := range got {
				if !strings.Contains(got[i], tc.want[i]) || !strings.HasPrefix(got[i], "metadata.annotations[raygate.ray.io/gateway]: ") {
					t.Errorf("warning %q does not say %q", got[i], tc.want[i])
				}
			}
		})
	}
}
