package raypod

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
)

func TestHeadIngressGolden(t *testing.T) {
	rc := cluster(func(rc *rayv1.RayCluster) {
		rc.Annotations = map[string]string{
			IngressClassAnnotationKey:                    "nginx",
			"nginx.ingress.kubernetes.io/rewrite-target": "/$1",
			lastAppliedAnnotation:                        `{"kind":"RayCluster"}`,
			rayv1.OverwriteContainerCmdKey:               "false",
			"raygate.ray.io/anything":                    "x",
			"example.ray.io.example.com/keep":            "kept",
			// Listed by the policy's prefix, but never copied.
			"nginx.ingress.kubernetes.io/configuration-snippet": "return 200;",
			"nginx.ingress.kubernetes.io/auth-tls-secret":       "kube-system/admin-tls",
			// Not listed.
			"team.example.com/owner": "alice",
		}
		rc.Spec.HeadGroupSpec.EnableIngress = ptr.To(true)
	})
	policy := IngressPolicy{Annotations: []string{"nginx.ingress.kubernetes.io/*", "example.ray.io.example.com/keep", "raygate.ray.io/*"}}
	golden(t, "ingress-default", HeadIngress(rc, policy))
}

func TestHeadIngress(t *testing.T) {
	prefix := rayv1.IngressPathTypePrefix
	cases := []struct {
		name   string
		mutate func(*rayv1.RayCluster)
		check  func(*testing.T, *networkingv1.Ingress)
	}{
		{"no class annotation: no ingressClassName (the cluster's default class applies)", nil, func(t *testing.T, ing *networkingv1.Ingress) {
			if ing.Spec.IngressClassName != nil {
				t.Errorf("ingressClassName = %q, want unset", *ing.Spec.IngressClassName)
			}
			if d := cmp.Diff(map[string]string{CopiedAnnotationsKey: ""}, ing.Annotations); d != "" {
				t.Errorf("annotations (-want +got):\n%s", d)
			}
		}},
		{"KubeRay's name, labels and owner", nil, func(t *testing.T, ing *networkingv1.Ingress) {
			if ing.Name != "demo-head-ingress" || ing.Namespace != "team-a" {
				t.Errorf("name = %s/%s", ing.Namespace, ing.Name)
			}
			want := map[string]string{
				rayv1.ClusterLabelKey: "demo", rayv1.IdentifierLabelKey: "demo-head",
				rayv1.KubernetesApplicationNameLabelKey: rayv1.ApplicationName, rayv1.KubernetesCreatedByLabelKey: rayv1.ComponentName,
			}
			if d := cmp.Diff(want, ing.Labels); d != "" {
				t.Errorf("labels (-want +got):\n%s", d)
			}
			ref := metav1.GetControllerOf(ing)
			if ref == nil || ref.Kind != rayv1.RayClusterKind || ref.Name != "demo" || ref.UID == "" {
				t.Errorf("controller = %+v", ref)
			}
		}},
		{"default rule: any host, /<cluster>/(.*) exactly, to the head Service's dashboard port", nil, func(t *testing.T, ing *networkingv1.Ingress) {
			r := ing.Spec.Rules[0]
			p := r.HTTP.Paths[0]
			if r.Host != "" || p.Path != "/demo/(.*)" || *p.PathType != networkingv1.PathTypeExact {
				t.Errorf("rule = %q %q %s", r.Host, p.Path, *p.PathType)
			}
			if p.Backend.Service.Name != "demo-head-svc" || p.Backend.Service.Port.Number != 8265 {
				t.Errorf("backend = %+v", p.Backend.Service)
			}
		}},
		{"ingressOptions set host, path, pathType and TLS", func(rc *rayv1.RayCluster) {
			rc.Spec.HeadGroupSpec.IngressOptions = &rayv1.IngressOptions{
				Host: ptr.To("ray.example.com"), Path: ptr.To("/"), PathType: &prefix,
				TLS: []networkingv1.IngressTLS{{Hosts: []string{"ray.example.com"}, SecretName: "ray-tls"}},
			}
		}, func(t *testing.T, ing *networkingv1.Ingress) {
			r := ing.Spec.Rules[0]
			p := r.HTTP.Paths[0]
			if r.Host != "ray.example.com" || p.Path != "/" || *p.PathType != networkingv1.PathTypePrefix {
				t.Errorf("rule = %q %q %s", r.Host, p.Path, *p.PathType)
			}
			want := []networkingv1.IngressTLS{{Hosts: []string{"ray.example.com"}, SecretName: "ray-tls"}}
			if d := cmp.Diff(want, ing.Spec.TLS); d != "" {
				t.Errorf("tls (-want +got):\n%s", d)
			}
		}},
		{"ingressOptions with only a host keep the default path", func(rc *rayv1.RayCluster) {
			rc.Spec.HeadGroupSpec.IngressOptions = &rayv1.IngressOptions{Host: ptr.To("ray.example.com")}
		}, func(t *testing.T, ing *networkingv1.Ingress) {
			if p := ing.Spec.Rules[0].HTTP.Paths[0]; p.Path != "/demo/(.*)" || *p.PathType != networkingv1.PathTypeExact {
				t.Errorf("path = %q %s", p.Path, *p.PathType)
			}
		}},
		{"dashboard-port in rayStartParams moves the backend port", func(rc *rayv1.RayCluster) {
			rc.Spec.HeadGroupSpec.RayStartParams["dashboard-port"] = "9265"
		}, func(t *testing.T, ing *networkingv1.Ingress) {
			if n := ing.Spec.Rules[0].HTTP.Paths[0].Backend.Service.Port.Number; n != 9265 {
				t.Errorf("port = %d, want 9265", n)
			}
		}},
		{"a headService override's name and dashboard port are followed", func(rc *rayv1.RayCluster) {
			rc.Spec.HeadGroupSpec.HeadService = &corev1.Service{
				ObjectMeta: metav1.ObjectMeta{Name: "dash"},
				Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "dashboard", Port: 80}}},
			}
		}, func(t *testing.T, ing *networkingv1.Ingress) {
			if s := ing.Spec.Rules[0].HTTP.Paths[0].Backend.Service; s.Name != "dash" || s.Port.Number != 80 {
				t.Errorf("backend = %+v", s)
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rc := cluster(func(rc *rayv1.RayCluster) {
				rc.Spec.HeadGroupSpec.EnableIngress = ptr.To(true)
				if rc.Spec.HeadGroupSpec.RayStartParams == nil {
					rc.Spec.HeadGroupSpec.RayStartParams = map[string]string{}
				}
				if tc.mutate != nil {
					tc.mutate(rc)
				}
			})
			tc.check(t, HeadIngress(rc, IngressPolicy{}))
		})
	}
}

func TestWantsIngress(t *testing.T) {
	for _, v := range []*bool{nil, ptr.To(false), ptr.To(true)} {
		rc := cluster(func(rc *rayv1.RayCluster) { rc.Spec.HeadGroupSpec.EnableIngress = v })
		if got, want := WantsIngress(rc), v != nil && *v; got != want {
			t.Errorf("enableIngress %v: WantsIngress = %v", v, got)
		}
	}
}
