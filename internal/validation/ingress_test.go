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

// openIngress allows every class and host, so the syntax rules are what is tested.
var openIngress = Policy{Ingress: raypod.IngressPolicy{Classes: []string{"*/*"}, Hosts: []string{"*/*"}}}

func TestIngress(t *testing.T) {
	enabled := func(o *rayv1.IngressOptions) func(*rayv1.RayCluster) {
		return func(rc *rayv1.RayCluster) {
			rc.Spec.HeadGroupSpec.EnableIngress = ptr.To(true)
			rc.Spec.HeadGroupSpec.IngressOptions = o
		}
	}
	pathType := func(t rayv1.IngressPathType) *rayv1.IngressPathType { return &t }
	cases := map[string]struct {
		mutate   func(*rayv1.RayCluster)
		want     field.ErrorList
		warnings []string
	}{
		"enableIngress alone, KubeRay's form": {mutate: enabled(nil)},
		"with a class annotation": {mutate: func(rc *rayv1.RayCluster) {
			enabled(nil)(rc)
			rc.Annotations = map[string]string{"kubernetes.io/ingress.class": "nginx"}
		}},
		"full ingressOptions": {mutate: enabled(&rayv1.IngressOptions{
			Host: ptr.To("ray.example.com"), Path: ptr.To("/ray"), PathType: pathType(rayv1.IngressPathTypePrefix),
			TLS: []networkingv1.IngressTLS{{Hosts: []string{"ray.example.com", "*.ray.example.com"}, SecretName: "ray-tls"}},
		})},
		"KubeRay's rewrite pattern as an exact path": {mutate: enabled(&rayv1.IngressOptions{Path: ptr.To("/rc/(.*)")})},
		"anything goes with ImplementationSpecific": {mutate: enabled(&rayv1.IngressOptions{
			Path: ptr.To("/a//b"), PathType: pathType(rayv1.IngressPathTypeImplementationSpecific)})},
		"ingressOptions without enableIngress: a warning": {
			mutate: func(rc *rayv1.RayCluster) {
				rc.Spec.HeadGroupSpec.IngressOptions = &rayv1.IngressOptions{Host: ptr.To("ray.example.com")}
			},
			warnings: []string{fmt.Sprintf(WarnIngressOptionsUnused, "spec.headGroupSpec.ingressOptions")},
		},
		"bad host, path, TLS host and secret": {
			mutate: enabled(&rayv1.IngressOptions{
				Host: ptr.To("Ray_Example"), Path: ptr.To("/a/../b"),
				TLS: []networkingv1.IngressTLS{{Hosts: []string{"ok.example.com", "10.0.0.1"}, SecretName: "Bad Secret"}},
			}),
			want: field.ErrorList{
				field.Invalid(p("spec.headGroupSpec.ingressOptions.host"), nil, ""),
				field.Invalid(p("spec.headGroupSpec.ingressOptions.path"), nil, ""),
				field.Invalid(p("spec.headGroupSpec.ingressOptions.tls[0].hosts[1]"), nil, ""),
				field.Invalid(p("spec.headGroupSpec.ingressOptions.tls[0].secretName"), nil, ""),
			},
		},
		"a relative path": {
			mutate: enabled(&rayv1.IngressOptions{Path: ptr.To("dashboard"), PathType: pathType(rayv1.IngressPathTypeImplementationSpecific)}),
			want:   field.ErrorList{field.Invalid(p("spec.headGroupSpec.ingressOptions.path"), nil, "")},
		},
		"a path ending in /. with Prefix": {
			mutate: enabled(&rayv1.IngressOptions{Path: ptr.To("/ray/."), PathType: pathType(rayv1.IngressPathTypePrefix)}),
			want:   field.ErrorList{field.Invalid(p("spec.headGroupSpec.ingressOptions.path"), nil, "")},
		},
		"an IP address as the host": {
			mutate: enabled(&rayv1.IngressOptions{Host: ptr.To("127.0.0.1")}),
			want:   field.ErrorList{field.Invalid(p("spec.headGroupSpec.ingressOptions.host"), nil, "")},
		},
		"an invalid class annotation": {
			mutate: func(rc *rayv1.RayCluster) {
				enabled(nil)(rc)
				rc.Annotations = map[string]string{"kubernetes.io/ingress.class": "Not A Class"}
			},
			want: field.ErrorList{field.Invalid(field.NewPath("metadata", "annotations").Key("kubernetes.io/ingress.class"), nil, "")},
		},
		"the class annotation is not checked without enableIngress": {mutate: func(rc *rayv1.RayCluster) {
			rc.Annotations = map[string]string{"kubernetes.io/ingress.class": ""}
		}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			errs, warnings := Validator{Gates: gateOff, Policy: openIngress}.RayCluster(cluster(tc.mutate))
			diffErrors(t, tc.want, errs)
			diffWarnings(t, tc.warnings, warnings)
		})
	}
}

// On a RayService the rules apply under rayClusterConfig.
func TestIngressOnRayService(t *testing.T) {
	svc := service(func(s *rayv1.RayService) {
		s.Spec.RayClusterSpec.HeadGroupSpec.EnableIngress = ptr.To(true)
		s.Spec.RayClusterSpec.HeadGroupSpec.IngressOptions = &rayv1.IngressOptions{Host: ptr.To("-bad-")}
	})
	errs, _ := Validator{Gates: gateOff, Policy: openIngress}.RayService(svc)
	diffErrors(t, field.ErrorList{field.Invalid(p("spec.rayClusterConfig.headGroupSpec.ingressOptions.host"), nil, "")}, errs)
}

// A stored cluster is never frozen by these rules: the controller creates the Ingress and
// reports the API server's answer.
func TestIngressRulesAreAdmissionOnly(t *testing.T) {
	rc := cluster(func(rc *rayv1.RayCluster) {
		rc.Spec.HeadGroupSpec.EnableIngress = ptr.To(true)
		rc.Spec.HeadGroupSpec.IngressOptions = &rayv1.IngressOptions{Host: ptr.To("Bad_Host")}
	})
	if errs := (Validator{Gates: gateOff}).StoredRayCluster(rc); len(errs) != 0 {
		t.Errorf("stored validation: %v", errs)
	}
}
