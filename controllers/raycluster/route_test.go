package raycluster

import (
	"reflect"
	"strings"
	"testing"

	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/capabilities"
	"github.com/raygate/raygate/internal/owned/ownerref"
	"github.com/raygate/raygate/internal/raypod"
)

func TestExposure(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
		want dashboardExposure
	}{
		{"no Route API: Ingresses", Config{}, dashboardExposure{}},
		{"the switch without the Route API: Ingresses", Config{IngressOnOpenShift: true}, dashboardExposure{}},
		{"the Route API: Routes", Config{Capabilities: capabilities.Capabilities{Route: true}}, dashboardExposure{routesServed: true, useRoutes: true}},
		{"the Route API and USE_INGRESS_ON_OPENSHIFT=true: Ingresses, stale Routes removed",
			Config{Capabilities: capabilities.Capabilities{Route: true}, IngressOnOpenShift: true}, dashboardExposure{routesServed: true}},
	} {
		if got := tc.cfg.exposure(); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: exposure = %+v, want %+v", tc.name, got, tc.want)
		}
	}
}

func TestPlanRoute(t *testing.T) {
	enabled := cluster(func(rc *rayv1.RayCluster) { rc.Spec.HeadGroupSpec.EnableIngress = ptr.To(true) })
	disabled := cluster()
	allowAll := raypod.IngressPolicy{Classes: []string{"*/*"}, RouteInstead: true}
	desired := raypod.HeadRoute(enabled, allowAll)
	stored := func(mutate ...func(*unstructured.Unstructured)) *unstructured.Unstructured {
		u := desired.DeepCopy()
		u.SetResourceVersion("7")
		u.SetUID("route-uid")
		for _, m := range mutate {
			m(u)
		}
		return u
	}
	routes := dashboardExposure{routesServed: true, useRoutes: true, policy: allowAll}
	ingresses := dashboardExposure{routesServed: true, policy: allowAll}
	otherNamespaceOnly := dashboardExposure{routesServed: true, useRoutes: true, policy: raypod.IngressPolicy{Classes: []string{"elsewhere/*"}, RouteInstead: true}}
	for _, tc := range []struct {
		name     string
		rc       *rayv1.RayCluster
		e        dashboardExposure
		existing *unstructured.Unstructured
		want     ownerref.Op
		why      string
	}{
		{"wanted, missing", enabled, routes, nil, ownerref.Create, ""},
		{"as created", enabled, routes, stored(), ownerref.Keep, ""},
		{"the router's host is kept", enabled, routes, stored(func(u *unstructured.Unstructured) {
			_ = unstructured.SetNestedField(u.Object, "demo-head-route-team-a.apps.example.com", "spec", "host")
		}), ownerref.Keep, ""},
		{"pointed elsewhere by hand: put back", enabled, routes, stored(func(u *unstructured.Unstructured) {
			_ = unstructured.SetNestedField(u.Object, "other-svc", "spec", "to", "name")
		}), ownerref.Update, ""},
		{"enableIngress turned off", disabled, routes, stored(), ownerref.Delete, whyIngressOff},
		{"not wanted, not there", disabled, routes, nil, ownerref.Keep, ""},
		{"the admin allows no exposure in the namespace: none made", enabled, otherNamespaceOnly, nil, ownerref.Keep, ""},
		{"the admin allows no exposure in the namespace: the Route goes", enabled, otherNamespaceOnly, stored(), ownerref.Delete, whyRouteNotAllowed},
		{"USE_INGRESS_ON_OPENSHIFT=true: the Route goes", enabled, ingresses, stored(), ownerref.Delete, whyIngressInstead},
		{"USE_INGRESS_ON_OPENSHIFT=true: none made", enabled, ingresses, nil, ownerref.Keep, ""},
		{"someone else's Route of that name", enabled, routes, stored(func(u *unstructured.Unstructured) { u.SetOwnerReferences(nil) }),
			ownerref.Report, ""},
		{"someone else's Route, not wanted: left alone", disabled, routes, stored(func(u *unstructured.Unstructured) { u.SetOwnerReferences(nil) }),
			ownerref.Keep, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := planRoute(&observation{object: tc.rc, cluster: tc.rc}, tc.e, tc.existing)
			if c.op != tc.want || c.why != tc.why {
				t.Fatalf("change = %v (%q), want %v (%q)", c.op, c.why, tc.want, tc.why)
			}
			if c.op != ownerref.Update {
				return
			}
			updated := c.object.(*unstructured.Unstructured)
			if again := planRoute(&observation{object: tc.rc, cluster: tc.rc}, tc.e, updated); again.op != ownerref.Keep {
				t.Errorf("after the update the next pass does %v, want nothing", again.op)
			}
			if updated.GetResourceVersion() != tc.existing.GetResourceVersion() {
				t.Error("the update must carry the stored resourceVersion")
			}
		})
	}
}

func TestRouteRefused(t *testing.T) {
	enabled := cluster(func(rc *rayv1.RayCluster) { rc.Spec.HeadGroupSpec.EnableIngress = ptr.To(true) })
	allowAll := raypod.IngressPolicy{Classes: []string{"*/*"}, RouteInstead: true}
	otherNamespaceOnly := raypod.IngressPolicy{Classes: []string{"elsewhere/*"}, RouteInstead: true}
	for _, tc := range []struct {
		name string
		rc   *rayv1.RayCluster
		e    dashboardExposure
		want bool
	}{
		{"allowed", enabled, dashboardExposure{routesServed: true, useRoutes: true, policy: allowAll}, false},
		{"the namespace not covered", enabled, dashboardExposure{routesServed: true, useRoutes: true, policy: otherNamespaceOnly}, true},
		{"no Route asked for", cluster(), dashboardExposure{routesServed: true, useRoutes: true, policy: otherNamespaceOnly}, false},
		{"Ingresses expose dashboards: their own check applies", enabled, dashboardExposure{routesServed: true, policy: otherNamespaceOnly}, false},
	} {
		if got := routeRefused(&observation{object: tc.rc, cluster: tc.rc}, tc.e); got != tc.want {
			t.Errorf("%s: routeRefused = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestIngressOptionsNote(t *testing.T) {
	prefix := rayv1.IngressPathTypePrefix
	for _, tc := range []struct {
		name string
		o    *rayv1.IngressOptions
		want string
	}{
		{"none", nil, ""},
		{"empty", &rayv1.IngressOptions{}, ""},
		{"host", &rayv1.IngressOptions{Host: ptr.To("ray.example.com")}, "(host set)"},
		{"everything", &rayv1.IngressOptions{Host: ptr.To("h"), PathType: &prefix, TLS: []networkingv1.IngressTLS{{SecretName: "s"}}}, "(host, path, tls set)"},
	} {
		rc := cluster(func(rc *rayv1.RayCluster) { rc.Spec.HeadGroupSpec.IngressOptions = tc.o })
		got := ingressOptionsNote(rc)
		if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("%s: note = %q, want one with %q", tc.name, got, tc.want)
		}
	}
}
