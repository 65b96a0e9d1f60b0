package gatewayapi

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
)

func gatewayWith(ls ...gwv1.Listener) *gwv1.Gateway {
	return &gwv1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: "infra", Name: "shared"}, Spec: gwv1.GatewaySpec{Listeners: ls}}
}

func listener(name string, p gwv1.ProtocolType, ar *gwv1.AllowedRoutes) gwv1.Listener {
	return gwv1.Listener{Name: gwv1.SectionName(name), Protocol: p, Port: 80, AllowedRoutes: ar}
}

func from(f gwv1.FromNamespaces) *gwv1.AllowedRoutes {
	return &gwv1.AllowedRoutes{Namespaces: &gwv1.RouteNamespaces{From: ptr.To(f)}}
}

func TestAdmits(t *testing.T) {
	team := Route{Kind: KindHTTPRoute, Namespace: "team-a", NamespaceLabels: map[string]string{"gateway": "shared"}, LabelsKnown: true}
	selector := &gwv1.AllowedRoutes{Namespaces: &gwv1.RouteNamespaces{From: ptr.To(gwv1.NamespacesFromSelector),
		Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"gateway": "shared"}}}}
	withHost := func(l gwv1.Listener, h string) gwv1.Listener { l.Hostname = ptr.To(gwv1.Hostname(h)); return l }
	for _, tc := range []struct {
		name      string
		gw        *gwv1.Gateway
		rt        Route
		allowed   bool
		undecided bool
		reason    string
		msg       string
	}{
		{"no allowedRoutes means Same: other namespace refused", gatewayWith(listener("http", gwv1.HTTPProtocolType, nil)), team, false, false,
			"NotAllowedByListeners", "listener http: allowedRoutes.namespaces.from is Same: only routes in namespace infra may attach"},
		{"Same, same namespace", gatewayWith(listener("http", gwv1.HTTPProtocolType, nil)), Route{Kind: KindHTTPRoute, Namespace: "infra"}, true, false, "", ""},
		{"All", gatewayWith(listener("http", gwv1.HTTPProtocolType, from(gwv1.NamespacesFromAll))), team, true, false, "", ""},
		{"Selector matches", gatewayWith(listener("http", gwv1.HTTPProtocolType, selector)), team, true, false, "", ""},
		{"Selector does not match", gatewayWith(listener("http", gwv1.HTTPProtocolType, selector)),
			Route{Kind: KindHTTPRoute, Namespace: "team-b", LabelsKnown: true}, false, false, "NotAllowedByListeners", "does not match allowedRoutes.namespaces.selector gateway=shared"},
		{"Selector with unknown labels is undecided", gatewayWith(listener("http", gwv1.HTTPProtocolType, selector)),
			Route{Kind: KindHTTPRoute, Namespace: "team-b"}, false, true, "NotAllowedByListeners", "are unknown"},
		{"Selector without selector", gatewayWith(listener("http", gwv1.HTTPProtocolType, from(gwv1.NamespacesFromSelector))), team, false, false, "NotAllowedByListeners", "without a selector"},
		{"kinds exclude HTTPRoute", gatewayWith(listener("http", gwv1.HTTPProtocolType, &gwv1.AllowedRoutes{
			Namespaces: &gwv1.RouteNamespaces{From: ptr.To(gwv1.NamespacesFromAll)}, Kinds: []gwv1.RouteGroupKind{{Kind: "GRPCRoute"}}})),
			team, false, false, "NotAllowedByListeners", "allowedRoutes.kinds (GRPCRoute) does not include HTTPRoute"},
		{"GRPCRoute by default on HTTP", gatewayWith(listener("http", gwv1.HTTPProtocolType, from(gwv1.NamespacesFromAll))),
			Route{Kind: KindGRPCRoute, Namespace: "team-a"}, true, false, "", ""},
		{"TCP listener carries no HTTPRoute", gatewayWith(listener("tcp", gwv1.TCPProtocolType, from(gwv1.NamespacesFromAll))), team, false, false,
			"NotAllowedByListeners", "protocol TCP does not carry HTTPRoute"},
		{"second listener admits", gatewayWith(listener("internal", gwv1.HTTPProtocolType, nil), listener("public", gwv1.HTTPSProtocolType, from(gwv1.NamespacesFromAll))), team, true, false, "", ""},
		{"hostname mismatch", gatewayWith(withHost(listener("http", gwv1.HTTPProtocolType, from(gwv1.NamespacesFromAll)), "*.example.com")),
			Route{Kind: KindHTTPRoute, Namespace: "team-a", Hostnames: []string{"api.other.org"}}, false, false, "NoMatchingListenerHostname", "matches none of api.other.org"},
		{"hostname wildcard match", gatewayWith(withHost(listener("http", gwv1.HTTPProtocolType, from(gwv1.NamespacesFromAll)), "*.example.com")),
			Route{Kind: KindHTTPRoute, Namespace: "team-a", Hostnames: []string{"api.example.com"}}, true, false, "", ""},
		{"no listeners", gatewayWith(), team, false, false, "NotAllowedByListeners", "no listeners"},
		{"nil gateway", nil, team, false, false, "NotAllowedByListeners", "no listeners"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := Admits(tc.gw, tc.rt)
			if v.Allowed != tc.allowed || v.Undecided != tc.undecided || v.Reason != tc.reason || !strings.Contains(v.Message, tc.msg) {
				t.Errorf("Admits = %+v; want allowed=%v undecided=%v reason=%q message containing %q", v, tc.allowed, tc.undecided, tc.reason, tc.msg)
			}
		})
	}
}

func TestHostnamesIntersect(t *testing.T) {
	h := func(s string) *gwv1.Hostname { return ptr.To(gwv1.Hostname(s)) }
	for _, tc := range []struct {
		listener *gwv1.Hostname
		route    []string
		want     bool
	}{
		{nil, []string{"a.example.com"}, true},
		{h("a.example.com"), nil, true},
		{h("a.example.com"), []string{"a.example.com"}, true},
		{h("*.example.com"), []string{"a.example.com"}, true},
		{h("*.example.com"), []string{"a.b.example.com"}, true},
		{h("*.example.com"), []string{"example.com"}, false},
		{h("a.example.com"), []string{"*.example.com"}, true},
		{h("*.example.com"), []string{"*.b.example.com"}, true},
		{h("*.example.com"), []string{"*.other.com", "x.other.com"}, false},
		{h("foo.com"), []string{"bar.com", "foo.com"}, true},
	} {
		if got := HostnamesIntersect(tc.listener, tc.route); got != tc.want {
			l := "<nil>"
			if tc.listener != nil {
				l = string(*tc.listener)
			}
			t.Errorf("HostnamesIntersect(%s, %v) = %v, want %v", l, tc.route, got, tc.want)
		}
	}
}
