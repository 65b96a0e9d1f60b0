package raypod

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
)

// KubeRay copies every cluster annotation but the class one to the Ingress; raygate copies
// only what the admin lists, and never the unsafe ones even when listed.
func TestCopiesAnnotation(t *testing.T) {
	policy := IngressPolicy{Annotations: []string{
		"nginx.ingress.kubernetes.io/*", "alb.ingress.kubernetes.io/scheme", "haproxy.org/*", "ray.io/*",
	}}
	cases := []struct {
		key  string
		want bool
	}{
		{"nginx.ingress.kubernetes.io/rewrite-target", true},
		{"nginx.ingress.kubernetes.io/use-regex", true},
		{"alb.ingress.kubernetes.io/scheme", true},
		// Listed, but unsafe: configuration snippets, authentication, configuration,
		// mirroring and aliases.
		{"nginx.ingress.kubernetes.io/configuration-snippet", false},
		{"nginx.ingress.kubernetes.io/server-snippet", false},
		{"nginx.ingress.kubernetes.io/auth-url", false},
		{"nginx.ingress.kubernetes.io/auth-tls-secret", false},
		{"nginx.ingress.kubernetes.io/auth-snippet", false},
		{"nginx.ingress.kubernetes.io/Auth-Signin", false},
		{"nginx.ingress.kubernetes.io/mirror-target", false},
		{"nginx.ingress.kubernetes.io/server-alias", false},
		{"haproxy.org/backend-config-snippet", false},
		{"haproxy.org/timeout-client", true},
		// Not listed.
		{"alb.ingress.kubernetes.io/group.name", false},
		{"team.example.com/owner", false},
		{"cert-manager.io/cluster-issuer", false},
		// Never, listed or not.
		{"ray.io/ft-enabled", false},
		{IngressClassAnnotationKey, false},
		{lastAppliedAnnotation, false},
		{CopiedAnnotationsKey, false},
	}
	for _, tc := range cases {
		if got := policy.CopiesAnnotation(tc.key); got != tc.want {
			t.Errorf("CopiesAnnotation(%q) = %v, want %v", tc.key, got, tc.want)
		}
	}
	if (IngressPolicy{}).CopiesAnnotation("nginx.ingress.kubernetes.io/rewrite-target") {
		t.Error("the zero policy copies an annotation")
	}
}

func TestIngressControllerAnnotation(t *testing.T) {
	for key, want := range map[string]bool{
		"nginx.ingress.kubernetes.io/auth-url":      true,
		"traefik.ingress.kubernetes.io/router.tls":  true,
		"haproxy.org/backend-config-snippet":        true,
		"projectcontour.io/websocket-routes":        true,
		"team.example.com/auth-owner":               false,
		"configuration":                             false,
		"kubectl.kubernetes.io/last-applied-config": false,
	} {
		if got := IngressControllerAnnotation(key); got != want {
			t.Errorf("IngressControllerAnnotation(%q) = %v, want %v", key, got, want)
		}
	}
}

func TestAllowsClassAndHost(t *testing.T) {
	p := IngressPolicy{
		Classes: []string{"team-a/nginx", "*/internal", "team-b/*"},
		Hosts:   []string{"team-a/ray.example.com", "*/{namespace}.apps.example.com", "team-b/*"},
	}
	classes := []struct {
		ns, class string
		want      bool
	}{
		{"team-a", "nginx", true},
		{"team-a", "internal", true},
		{"team-a", "public", false},
		{"team-a", "", false}, // the default class needs "<ns>/*"
		{"team-c", "nginx", false},
		{"team-c", "internal", true},
		{"team-b", "public", true},
		{"team-b", "", true},
	}
	for _, tc := range classes {
		if got := p.AllowsClass(tc.ns, tc.class); got != tc.want {
			t.Errorf("AllowsClass(%q, %q) = %v, want %v", tc.ns, tc.class, got, tc.want)
		}
	}
	hosts := []struct {
		ns, host string
		want     bool
	}{
		{"team-a", "ray.example.com", true},
		{"team-a", "dash.ray.example.com", true},
		{"team-a", "*.ray.example.com", true},
		{"team-a", "evilray.example.com", false},
		{"team-a", "example.com", false},
		{"team-a", "*.example.com", false},
		{"team-a", "", false}, // a rule without a host serves every host
		{"team-a", "x.team-a.apps.example.com", true},
		{"team-a", "team-a.apps.example.com", true},
		{"team-a", "x.team-c.apps.example.com", false},
		{"team-c", "x.team-c.apps.example.com", true},
		{"team-c", "ray.example.com", false},
		{"team-b", "anything.example.org", true},
		{"team-b", "", true},
	}
	for _, tc := range hosts {
		if got := p.AllowsHost(tc.ns, tc.host); got != tc.want {
			t.Errorf("AllowsHost(%q, %q) = %v, want %v", tc.ns, tc.host, got, tc.want)
		}
	}
	if (IngressPolicy{}).AllowsClass("team-a", "nginx") || (IngressPolicy{}).AllowsHost("team-a", "ray.example.com") {
		t.Error("the zero policy allows an Ingress")
	}
}

func TestIngressRefusals(t *testing.T) {
	policy := IngressPolicy{Classes: []string{"team-a/nginx"}, Hosts: []string{"team-a/example.com"}}
	ingress := func(mutate func(*networkingv1.Ingress)) *networkingv1.Ingress {
		ing := &networkingv1.Ingress{
			ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Annotations: map[string]string{CopiedAnnotationsKey: ""}},
			Spec: networkingv1.IngressSpec{
				IngressClassName: ptr.To("nginx"),
				Rules:            []networkingv1.IngressRule{{Host: "ray.example.com"}},
			},
		}
		if mutate != nil {
			mutate(ing)
		}
		return ing
	}
	cases := []struct {
		name   string
		policy IngressPolicy
		ing    *networkingv1.Ingress
		want   []string
	}{
		{"allowed", policy, ingress(nil), nil},
		{"off", IngressPolicy{}, ingress(nil), []string{"dashboard Ingresses are off on this cluster (--allowed-ingress-classes is empty)"}},
		{"another namespace", policy, ingress(func(i *networkingv1.Ingress) { i.Namespace = "team-b" }), []string{
			"IngressClass nginx is not allowed in namespace team-b", "host ray.example.com is not allowed in namespace team-b"}},
		{"default class, no host, a foreign TLS host", policy, ingress(func(i *networkingv1.Ingress) {
			i.Spec.IngressClassName = nil
			i.Spec.Rules[0].Host = ""
			i.Spec.TLS = []networkingv1.IngressTLS{{Hosts: []string{"bank.example.org"}}}
		}), []string{
			"IngressClass the default class is not allowed in namespace team-a",
			"host (any: a rule without a host) is not allowed in namespace team-a",
			"host bank.example.org is not allowed in namespace team-a",
		}},
		{"an unsafe annotation recorded as copied", policy, ingress(func(i *networkingv1.Ingress) {
			i.Annotations = map[string]string{CopiedAnnotationsKey: "nginx.ingress.kubernetes.io/server-snippet", "nginx.ingress.kubernetes.io/server-snippet": "x"}
		}), []string{"annotation nginx.ingress.kubernetes.io/server-snippet is never copied to an Ingress"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if d := cmp.Diff(tc.want, tc.policy.Refusals(tc.ing)); d != "" {
				t.Errorf("refusals (-want +got):\n%s", d)
			}
		})
	}
}

// HeadIngress's result passes Refusals exactly when the cluster's class and hosts are allowed.
func TestHeadIngressUnderPolicy(t *testing.T) {
	policy := IngressPolicy{Classes: []string{"team-a/nginx"}, Hosts: []string{"team-a/example.com"},
		Annotations: []string{"nginx.ingress.kubernetes.io/*"}}
	rc := cluster(func(rc *rayv1.RayCluster) {
		rc.Annotations = map[string]string{IngressClassAnnotationKey: "nginx", "nginx.ingress.kubernetes.io/auth-url": "http://127.0.0.1/steal"}
		rc.Spec.HeadGroupSpec.EnableIngress = ptr.To(true)
		rc.Spec.HeadGroupSpec.IngressOptions = &rayv1.IngressOptions{Host: ptr.To("ray.example.com")}
	})
	ing := HeadIngress(rc, policy)
	if r := policy.Refusals(ing); len(r) > 0 {
		t.Errorf("refusals = %v", r)
	}
	if _, ok := ing.Annotations["nginx.ingress.kubernetes.io/auth-url"]; ok {
		t.Error("auth-url copied")
	}
}

func TestValidIngressEntries(t *testing.T) {
	cases := []struct {
		check func(string) string
		entry string
		ok    bool
	}{
		{ValidIngressClassEntry, "team-a/nginx", true},
		{ValidIngressClassEntry, "*/nginx", true},
		{ValidIngressClassEntry, "team-a/*", true},
		{ValidIngressClassEntry, "nginx", false},
		{ValidIngressClassEntry, "Team/nginx", false},
		{ValidIngressClassEntry, "team-a/Nginx", false},
		{ValidIngressHostEntry, "*/{namespace}.apps.example.com", true},
		{ValidIngressHostEntry, "team-a/ray.example.com", true},
		{ValidIngressHostEntry, "team-a/*", true},
		{ValidIngressHostEntry, "team-a/*.example.com", false},
		{ValidIngressHostEntry, "example.com", false},
		{ValidIngressHostEntry, "team-a/", false},
		{ValidIngressAnnotationEntry, "nginx.ingress.kubernetes.io/rewrite-target", true},
		{ValidIngressAnnotationEntry, "alb.ingress.kubernetes.io/*", true},
		{ValidIngressAnnotationEntry, "nginx.ingress.kubernetes.io/configuration-snippet", false},
		{ValidIngressAnnotationEntry, "nginx*", false},
		{ValidIngressAnnotationEntry, "bad key!", false},
	}
	for _, tc := range cases {
		if why := tc.check(tc.entry); (why == "") != tc.ok {
			t.Errorf("%q: %q, want ok=%v", tc.entry, why, tc.ok)
		}
	}
}
