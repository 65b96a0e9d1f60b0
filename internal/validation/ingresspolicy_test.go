package validation

import (
	"fmt"
	"testing"

	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/raypod"
)

// The dashboard Ingress is created with raygate's rights: its class, hosts and the Ingress
// controller annotations meant for it are refused at admission unless the admin allows them.
func TestIngressPolicy(t *testing.T) {
	policy := Policy{Ingress: raypod.IngressPolicy{
		Classes:     []string{"ns/nginx", "*/internal"},
		Hosts:       []string{"*/{namespace}.apps.example.com", "ns/ray.example.com"},
		Annotations: []string{"nginx.ingress.kubernetes.io/*"},
	}}
	enabled := func(class, host string, annotations map[string]string) func(*rayv1.RayCluster) {
		return func(rc *rayv1.RayCluster) {
			rc.Annotations = annotations
			if class != "" {
				if rc.Annotations == nil {
					rc.Annotations = map[string]string{}
				}
				rc.Annotations[raypod.IngressClassAnnotationKey] = class
			}
			rc.Spec.HeadGroupSpec.EnableIngress = ptr.To(true)
			if host != "" {
				rc.Spec.HeadGroupSpec.IngressOptions = &rayv1.IngressOptions{Host: ptr.To(host)}
			}
		}
	}
	classPath := annotationsPath.Key(raypod.IngressClassAnnotationKey)
	hostPath := p("spec.headGroupSpec.ingressOptions.host")
	cases := map[string]struct {
		policy   Policy
		mutate   func(*rayv1.RayCluster)
		want     field.ErrorList
		warnings []string
	}{
		"allowed class and host": {policy: policy, mutate: enabled("nginx", "dash.ray.example.com", nil)},
		"a class allowed everywhere, a host under the namespace's domain": {policy: policy,
			mutate: enabled("internal", "ray.ns.apps.example.com", nil)},
		"the zero policy: off": {mutate: enabled("nginx", "ray.example.com", nil),
			want: field.ErrorList{field.Forbidden(p("spec.headGroupSpec.enableIngress"), "")}},
		"without enableIngress nothing is checked": {policy: policy, mutate: func(rc *rayv1.RayCluster) {
			rc.Annotations = map[string]string{"nginx.ingress.kubernetes.io/auth-url": "http://127.0.0.1/", raypod.IngressClassAnnotationKey: "public"}
		}},
		"a foreign class and host": {policy: policy, mutate: enabled("public", "bank.example.com", nil),
			want: field.ErrorList{field.Forbidden(classPath, ""), field.Forbidden(hostPath, "")}},
		"another namespace's domain": {policy: policy, mutate: enabled("internal", "ray.team-b.apps.example.com", nil),
			want: field.ErrorList{field.Forbidden(hostPath, "")}},
		"no class (the default class) and no host (every host)": {policy: policy, mutate: enabled("", "", nil),
			want: field.ErrorList{field.Required(classPath, ""), field.Required(hostPath, "")}},
		"a foreign TLS host": {policy: policy, mutate: func(rc *rayv1.RayCluster) {
			enabled("nginx", "ray.example.com", nil)(rc)
			rc.Spec.HeadGroupSpec.IngressOptions.TLS = []networkingv1.IngressTLS{{Hosts: []string{"ray.example.com", "bank.example.com"}}}
		}, want: field.ErrorList{field.Forbidden(p("spec.headGroupSpec.ingressOptions.tls[0].hosts[1]"), "")}},
		"snippet and auth annotations are refused, listed or not": {policy: policy, mutate: enabled("nginx", "ray.example.com", map[string]string{
			"nginx.ingress.kubernetes.io/configuration-snippet": "more_set_headers \"x: y\";",
			"nginx.ingress.kubernetes.io/auth-url":              "http://127.0.0.1/",
			"haproxy.org/backend-config-snippet":                "http-request deny",
			"nginx.ingress.kubernetes.io/rewrite-target":        "/$1",
		}), want: field.ErrorList{
			field.Forbidden(annotationsPath.Key("haproxy.org/backend-config-snippet"), ""),
			field.Forbidden(annotationsPath.Key("nginx.ingress.kubernetes.io/auth-url"), ""),
			field.Forbidden(annotationsPath.Key("nginx.ingress.kubernetes.io/configuration-snippet"), ""),
		}},
		"an Ingress controller annotation not listed: a warning": {policy: policy, mutate: enabled("nginx", "ray.example.com", map[string]string{
			"alb.ingress.kubernetes.io/scheme": "internet-facing",
			"team.example.com/auth-owner":      "alice", // not meant for an Ingress
		}), warnings: []string{fmt.Sprintf(WarnIngressAnnotationNotCopied, "metadata.annotations[alb.ingress.kubernetes.io/scheme]", ingressAnnotationsSetting)}},
		"OpenShift Routes: no class, no host needed where the namespace is allowed": {policy: routes(policy), mutate: enabled("", "", nil)},
		"OpenShift Routes: a namespace the admin lists no class for is refused": {
			policy: routes(Policy{Ingress: raypod.IngressPolicy{Classes: []string{"other/*"}}}), mutate: enabled("", "", nil),
			want: field.ErrorList{field.Forbidden(p("spec.headGroupSpec.enableIngress"), "")}},
		"OpenShift Routes: unsafe annotations are still refused": {policy: routes(policy), mutate: enabled("", "", map[string]string{
			"haproxy.org/backend-config-snippet": "http-request deny",
		}), want: field.ErrorList{field.Forbidden(annotationsPath.Key("haproxy.org/backend-config-snippet"), "")}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			errs, warnings := Validator{Gates: gateOff, Policy: tc.policy}.RayCluster(cluster(tc.mutate))
			diffErrors(t, tc.want, errs)
			diffWarnings(t, tc.warnings, warnings)
		})
	}
}

// routes is the policy where OpenShift Routes expose dashboards.
func routes(p Policy) Policy {
	p.Ingress.RouteInstead = true
	return p
}

// The exact text kubectl prints, which names the setting to change.
func TestIngressPolicyMessages(t *testing.T) {
	policy := Policy{Ingress: raypod.IngressPolicy{Classes: []string{"ns/nginx"}, Hosts: []string{"ns/ray.example.com"}}}
	rc := cluster(func(rc *rayv1.RayCluster) {
		rc.Annotations = map[string]string{raypod.IngressClassAnnotationKey: "public"}
		rc.Spec.HeadGroupSpec.EnableIngress = ptr.To(true)
		rc.Spec.HeadGroupSpec.IngressOptions = &rayv1.IngressOptions{Host: ptr.To("bank.example.com")}
	})
	errs, _ := Validator{Gates: gateOff, Policy: policy}.RayCluster(rc)
	want := []string{
		`metadata.annotations[kubernetes.io/ingress.class]: Forbidden: IngressClass "public" is not allowed in namespace ns; allowed: nginx (the manager's --allowed-ingress-classes, Helm value policy.allowedIngressClasses)`,
		`spec.headGroupSpec.ingressOptions.host: Forbidden: host "bank.example.com" is not allowed in namespace ns; allowed: ray.example.com and names under them (the manager's --allowed-ingress-hosts, Helm value policy.allowedIngressHosts)`,
	}
	if len(errs) != len(want) {
		t.Fatalf("errors = %v", errs)
	}
	for i, e := range errs {
		if e.Error() != want[i] {
			t.Errorf("error %d:\n got %s\nwant %s", i, e.Error(), want[i])
		}
	}
}

// On a RayService and a RayJob the annotations are the object's (they are copied to the
// cluster it creates) and the paths are under its cluster spec.
func TestIngressPolicyOnRayServiceAndRayJob(t *testing.T) {
	v := Validator{Gates: gateOff, Policy: Policy{Ingress: raypod.IngressPolicy{Classes: []string{"*/nginx"}, Hosts: []string{"*/example.com"}}}}
	svc := service(func(s *rayv1.RayService) {
		s.Annotations = map[string]string{raypod.IngressClassAnnotationKey: "nginx", "nginx.ingress.kubernetes.io/server-snippet": "x"}
		s.Spec.RayClusterSpec.HeadGroupSpec.EnableIngress = ptr.To(true)
		s.Spec.RayClusterSpec.HeadGroupSpec.IngressOptions = &rayv1.IngressOptions{Host: ptr.To("bank.example.org")}
	})
	errs, _ := v.RayService(svc)
	diffErrors(t, field.ErrorList{
		field.Forbidden(annotationsPath.Key("nginx.ingress.kubernetes.io/server-snippet"), ""),
		field.Forbidden(p("spec.rayClusterConfig.headGroupSpec.ingressOptions.host"), ""),
	}, errs)
}

// Ratcheting: a cluster stored before the policy can still be scaled; turning enableIngress
// on again (or changing the host) is checked.
func TestIngressPolicyRatchets(t *testing.T) {
	v := Validator{Gates: gateOff, Policy: Policy{Ingress: raypod.IngressPolicy{Classes: []string{"*/nginx"}, Hosts: []string{"*/example.com"}}}}
	old := cluster(func(rc *rayv1.RayCluster) {
		rc.Annotations = map[string]string{raypod.IngressClassAnnotationKey: "public"}
		rc.Spec.HeadGroupSpec.EnableIngress = ptr.To(true)
		rc.Spec.HeadGroupSpec.IngressOptions = &rayv1.IngressOptions{Host: ptr.To("bank.example.org")}
	})
	scaled := old.DeepCopy()
	scaled.Spec.WorkerGroupSpecs[0].Replicas = ptr.To(int32(2))
	if errs, _ := v.RayClusterUpdate(old, scaled); len(errs) != 0 {
		t.Errorf("scaling a stored cluster: %v", errs)
	}
	moved := old.DeepCopy()
	moved.Spec.HeadGroupSpec.IngressOptions.Host = ptr.To("other.example.org")
	errs, _ := v.RayClusterUpdate(old, moved)
	diffErrors(t, field.ErrorList{field.Forbidden(p("spec.headGroupSpec.ingressOptions.host"), "")}, errs)
}
