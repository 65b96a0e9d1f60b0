package raypod

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/ptr"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
)

func TestHeadRouteGolden(t *testing.T) {
	rc := cluster(func(rc *rayv1.RayCluster) {
		rc.Annotations = map[string]string{
			IngressClassAnnotationKey:                  "openshift-default",
			"haproxy.router.openshift.io/timeout":      "5m",
			lastAppliedAnnotation:                      `{"kind":"RayCluster"}`,
			rayv1.OverwriteContainerCmdKey:             "false",
			"raygate.ray.io/anything":                  "x",
			"example.ray.io.example.com/keep":          "kept",
			"haproxy.router.openshift.io/ip_allowlist": "192.0.2.0/24",
		}
		rc.Spec.HeadGroupSpec.EnableIngress = ptr.To(true)
	})
	golden(t, "route-default", HeadRoute(rc, routePolicy).Object)
}

// routePolicy lists the annotations the golden Route carries.
var routePolicy = IngressPolicy{Classes: []string{"*/*"}, Annotations: []string{"haproxy.router.openshift.io/*", "example.ray.io.example.com/keep", "drop-me"}, RouteInstead: true}

func TestHeadRoute(t *testing.T) {
	t.Run("only the annotations the admin lists, never unsafe ones", func(t *testing.T) {
		rc := cluster(func(rc *rayv1.RayCluster) {
			rc.Annotations = map[string]string{
				"haproxy.router.openshift.io/timeout":           "5m",
				"haproxy.router.openshift.io/hsts_header":       "max-age=1",
				"haproxy.router.openshift.io/rewrite-target":    "/",
				"haproxy.router.openshift.io/haproxy-config-x":  "evil",
				"router.openshift.io/cookie_name":               "unlisted",
				"nginx.ingress.kubernetes.io/auth-url":          "http://evil",
				"example.ray.io.example.com/not-the-listed-one": "x",
			}
		})
		got := HeadRoute(rc, routePolicy).GetAnnotations()
		for _, k := range []string{"haproxy.router.openshift.io/timeout", "haproxy.router.openshift.io/hsts_header", "haproxy.router.openshift.io/rewrite-target"} {
			if _, ok := got[k]; !ok {
				t.Errorf("listed annotation %s not copied: %v", k, got)
			}
		}
		for _, k := range []string{"haproxy.router.openshift.io/haproxy-config-x", "router.openshift.io/cookie_name", "nginx.ingress.kubernetes.io/auth-url", "example.ray.io.example.com/not-the-listed-one"} {
			if _, ok := got[k]; ok {
				t.Errorf("annotation %s copied: %v", k, got)
			}
		}
		if none := HeadRoute(rc, IngressPolicy{Classes: []string{"*/*"}}).GetAnnotations(); len(none) != 1 {
			t.Errorf("with no annotation listed only the bookkeeping key is set: %v", none)
		}
	})
	t.Run("the dashboard port the head Service names", func(t *testing.T) {
		rc := cluster(func(rc *rayv1.RayCluster) {
			c := &rc.Spec.HeadGroupSpec.Template.Spec.Containers[0]
			c.Ports = append(c.Ports, corev1.ContainerPort{Name: "dashboard", ContainerPort: 9265})
		})
		port, _, _ := unstructured.NestedInt64(HeadRoute(rc, routePolicy).Object, "spec", "port", "targetPort")
		if port != 9265 {
			t.Errorf("targetPort = %d, want 9265", port)
		}
	})
	t.Run("ingressOptions do not apply to a Route: no host, no path, no TLS", func(t *testing.T) {
		prefix := rayv1.IngressPathTypePrefix
		rc := cluster(func(rc *rayv1.RayCluster) {
			rc.Spec.HeadGroupSpec.IngressOptions = &rayv1.IngressOptions{Host: ptr.To("ray.example.com"), Path: ptr.To("/x"), PathType: &prefix}
		})
		spec, _, _ := unstructured.NestedMap(HeadRoute(rc, routePolicy).Object, "spec")
		for _, f := range []string{"host", "path", "tls", "subdomain"} {
			if _, ok := spec[f]; ok {
				t.Errorf("spec.%s is set: %v", f, spec[f])
			}
		}
	})
}

func TestHeadRouteName(t *testing.T) {
	long := strings.Repeat("a", 40)
	for _, tc := range []struct {
		cluster, namespace, want string
	}{
		{"demo", "team-a", "demo-head-route"},
		// KubeRay's budget: 51 characters for the name and the namespace together.
		{long, "team-a", long[:40] + "-head"},
		{long, "ns", long + "-head-rou"},
		{long, "ns-four", long + "-hea"},
		// A cut ending in a dash loses it.
		{long, "ns-foursix", long},
		// A namespace leaving no room still gives a valid name.
		{"demo", strings.Repeat("n", 63), "d"},
	} {
		got := HeadRouteName(tc.cluster, tc.namespace)
		if got != tc.want {
			t.Errorf("HeadRouteName(%q, %q) = %q, want %q", tc.cluster, tc.namespace, got, tc.want)
		}
		if errs := validation.IsDNS1123Subdomain(got); len(errs) > 0 {
			t.Errorf("HeadRouteName(%q, %q) = %q: %v", tc.cluster, tc.namespace, got, errs)
		}
	}
}

func TestWithRouteFields(t *testing.T) {
	rc := cluster(func(rc *rayv1.RayCluster) {
		rc.Annotations = map[string]string{"haproxy.router.openshift.io/timeout": "5m", "drop-me": "x"}
	})
	desired := HeadRoute(rc, routePolicy)
	asServed := func(mutate func(map[string]any)) *unstructured.Unstructured {
		u := desired.DeepCopy()
		// What the router and others add: a host, TLS, a label and an annotation of their own.
		spec := u.Object["spec"].(map[string]any)
		spec["host"] = "demo-head-route-team-a.apps.example.com"
		spec["tls"] = map[string]any{"termination": "edge"}
		u.SetLabels(map[string]string{"router": "internal", rayv1.ClusterLabelKey: "demo", rayv1.IdentifierLabelKey: "demo-head",
			rayv1.KubernetesApplicationNameLabelKey: rayv1.ApplicationName, rayv1.KubernetesCreatedByLabelKey: rayv1.ComponentName})
		a := u.GetAnnotations()
		a["openshift.io/host.generated"] = "true"
		u.SetAnnotations(a)
		if mutate != nil {
			mutate(u.Object)
		}
		return u
	}

	if got := WithRouteFields(asServed(nil), desired); got != nil {
		t.Errorf("a Route as raygate made it, with what others added, is updated:\n%v", got.Object)
	}

	changed := asServed(func(o map[string]any) {
		spec := o["spec"].(map[string]any)
		spec["to"] = map[string]any{"kind": "Service", "name": "elsewhere", "weight": int64(1)}
		delete(spec, "wildcardPolicy")
	})
	got := WithRouteFields(changed, desired)
	if got == nil {
		t.Fatal("a Route pointing elsewhere is not corrected")
	}
	if d := cmp.Diff(desired.Object["spec"].(map[string]any)["to"], got.Object["spec"].(map[string]any)["to"]); d != "" {
		t.Errorf("spec.to (-want +got):\n%s", d)
	}
	if h, _, _ := unstructured.NestedString(got.Object, "spec", "host"); h != "demo-head-route-team-a.apps.example.com" {
		t.Errorf("the router's host is not kept: %q", h)
	}
	if tm, _, _ := unstructured.NestedString(got.Object, "spec", "tls", "termination"); tm != "edge" {
		t.Errorf("the TLS others added is not kept: %q", tm)
	}
	if w, _, _ := unstructured.NestedString(got.Object, "spec", "wildcardPolicy"); w != "None" {
		t.Errorf("wildcardPolicy = %q", w)
	}

	// An annotation removed from the cluster leaves the Route; others' annotations stay.
	delete(rc.Annotations, "drop-me")
	got = WithRouteFields(asServed(nil), HeadRoute(rc, routePolicy))
	if got == nil {
		t.Fatal("an annotation removed from the cluster stays on the Route")
	}
	if _, ok := got.GetAnnotations()["drop-me"]; ok {
		t.Error("drop-me is still there")
	}
	if got.GetAnnotations()["openshift.io/host.generated"] != "true" || got.GetLabels()["router"] != "internal" {
		t.Errorf("what others added is lost: %v %v", got.GetAnnotations(), got.GetLabels())
	}
	if got.GetAnnotations()[CopiedAnnotationsKey] != "haproxy.router.openshift.io/timeout" {
		t.Errorf("copied = %q", got.GetAnnotations()[CopiedAnnotationsKey])
	}
}
