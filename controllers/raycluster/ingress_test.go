package raycluster

import (
	"testing"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/owned/ownerref"
	"github.com/raygate/raygate/internal/raypod"
)

func TestDecideIngress(t *testing.T) {
	withIngress := func(mutate ...func(*rayv1.RayCluster)) *rayv1.RayCluster {
		return cluster(append([]func(*rayv1.RayCluster){func(rc *rayv1.RayCluster) {
			rc.Spec.HeadGroupSpec.EnableIngress = ptr.To(true)
		}}, mutate...)...)
	}
	policy := raypod.IngressPolicy{Annotations: []string{"nginx.ingress.kubernetes.io/*"}}
	desired := raypod.HeadIngress(withIngress(), policy)
	stored := func(ing *networkingv1.Ingress, mutate ...func(*networkingv1.Ingress)) *networkingv1.Ingress {
		out := ing.DeepCopy()
		out.ResourceVersion, out.UID = "7", "uid"
		for _, m := range mutate {
			m(out)
		}
		return out
	}
	newHost := raypod.HeadIngress(withIngress(func(rc *rayv1.RayCluster) {
		rc.Spec.HeadGroupSpec.IngressOptions = &rayv1.IngressOptions{Host: ptr.To("ray.example.com")}
	}), policy)
	annotated := raypod.HeadIngress(withIngress(func(rc *rayv1.RayCluster) {
		rc.Annotations = map[string]string{"nginx.ingress.kubernetes.io/rewrite-target": "/$1"}
	}), policy)
	cases := []struct {
		name              string
		desired, existing *networkingv1.Ingress
		controlled        bool
		want              ownerref.Op
	}{
		{"not wanted, not there", nil, nil, false, ownerref.Keep},
		{"wanted, missing", desired, nil, false, ownerref.Create},
		{"as created", desired, stored(desired), true, ownerref.Keep},
		{"the API server's default class is kept", desired, stored(desired, func(i *networkingv1.Ingress) {
			i.Spec.IngressClassName = ptr.To("default-class")
		}), true, ownerref.Keep},
		{"an Ingress controller's annotation and status are kept", desired, stored(desired, func(i *networkingv1.Ingress) {
			i.Annotations["controller.example.com/seen"] = "yes"
			i.Status.LoadBalancer.Ingress = []networkingv1.IngressLoadBalancerIngress{{IP: "127.0.0.9"}}
		}), true, ownerref.Keep},
		{"ingressOptions changed", newHost, stored(desired), true, ownerref.Update},
		{"a cluster annotation added", annotated, stored(desired), true, ownerref.Update},
		{"a cluster annotation removed", desired, stored(annotated), true, ownerref.Update},
		{"edited by hand: put back", desired, stored(desired, func(i *networkingv1.Ingress) {
			i.Spec.Rules[0].HTTP.Paths[0].Backend.Service.Port.Number = 80
		}), true, ownerref.Update},
		{"enableIngress turned off", nil, stored(desired), true, ownerref.Delete},
		{"someone else's Ingress of that name", desired, stored(desired, func(i *networkingv1.Ingress) {
			i.OwnerReferences = nil
		}), false, ownerref.Report},
		{"someone else's Ingress, not wanted: left alone", nil, stored(desired, func(i *networkingv1.Ingress) {
			i.OwnerReferences = []metav1.OwnerReference{}
		}), false, ownerref.Keep},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := decideIngress(tc.desired, tc.existing, tc.controlled)
			if c.op != tc.want {
				t.Fatalf("change = %v, want %v", c.op, tc.want)
			}
			if c.op != ownerref.Update {
				return
			}
			updated := c.object.(*networkingv1.Ingress)
			if decideAgain := decideIngress(tc.desired, updated, true); decideAgain.op != ownerref.Keep {
				t.Errorf("after the update the next pass does %v, want nothing", decideAgain.op)
			}
			if updated.ResourceVersion != tc.existing.ResourceVersion {
				t.Error("the update must carry the stored resourceVersion")
			}
			for k, v := range tc.desired.Annotations {
				if updated.Annotations[k] != v {
					t.Errorf("annotation %s = %q, want %q", k, updated.Annotations[k], v)
				}
			}
			for k := range tc.existing.Annotations {
				if _, ok := tc.desired.Annotations[k]; !ok {
					if _, kept := updated.Annotations[k]; kept {
						t.Errorf("annotation %s copied from the cluster earlier is still there", k)
					}
				}
			}
		})
	}
}

// The controller never creates or keeps an Ingress the admin's policy refuses, and never
// copies an unsafe annotation: what admission refuses, for a cluster stored before the
// policy changed or admitted while the webhook was down.
func TestPlanIngressUnderPolicy(t *testing.T) {
	policy := raypod.IngressPolicy{
		Classes:     []string{"team-a/nginx"},
		Hosts:       []string{"team-a/team-a.example.com"},
		Annotations: []string{"nginx.ingress.kubernetes.io/*"},
	}
	asked := func(class, host string) *rayv1.RayCluster {
		return cluster(func(rc *rayv1.RayCluster) {
			rc.Namespace = "team-a"
			rc.Annotations = map[string]string{
				"nginx.ingress.kubernetes.io/rewrite-target":        "/$1",
				"nginx.ingress.kubernetes.io/configuration-snippet": "proxy_pass http://127.0.0.1:10250;",
				"nginx.ingress.kubernetes.io/auth-url":              "http://127.0.0.1/steal",
			}
			if class != "" {
				rc.Annotations[raypod.IngressClassAnnotationKey] = class
			}
			rc.Spec.HeadGroupSpec.EnableIngress = ptr.To(true)
			rc.Spec.HeadGroupSpec.IngressOptions = &rayv1.IngressOptions{Host: ptr.To(host)}
		})
	}
	allowed := asked("nginx", "ray.team-a.example.com")
	stored := raypod.HeadIngress(allowed, policy)
	stored.ResourceVersion, stored.UID = "7", "uid"
	cases := []struct {
		name         string
		rc           *rayv1.RayCluster
		existing     *networkingv1.Ingress
		want         ownerref.Op
		wantRefusals int
	}{
		{"allowed: created", allowed, nil, ownerref.Create, 0},
		{"allowed: kept", allowed, stored, ownerref.Keep, 0},
		{"a foreign class: not created", asked("public", "ray.team-a.example.com"), nil, ownerref.Keep, 1},
		{"the default class: not created", asked("", "ray.team-a.example.com"), nil, ownerref.Keep, 1},
		{"a foreign host: not created", asked("nginx", "bank.example.com"), nil, ownerref.Keep, 1},
		{"no host (every host): not created", asked("nginx", ""), nil, ownerref.Keep, 1},
		{"refused after it was created: deleted", asked("nginx", "bank.example.com"), stored, ownerref.Delete, 1},
		{"the policy turned off: deleted", allowed, stored, ownerref.Delete, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := policy
			if tc.name == "the policy turned off: deleted" {
				p = raypod.IngressPolicy{}
			}
			var existing *networkingv1.Ingress
			if tc.existing != nil {
				existing = tc.existing.DeepCopy()
				existing.Namespace, existing.OwnerReferences = tc.rc.Namespace, []metav1.OwnerReference{*metav1.NewControllerRef(tc.rc, rayv1.GroupVersion.WithKind(rayv1.RayClusterKind))}
			}
			c, refusals := planIngress(&observation{object: tc.rc, cluster: tc.rc}, existing, p)
			if c.op != tc.want || len(refusals) != tc.wantRefusals {
				t.Fatalf("change = %v with refusals %q, want %v with %d", c.op, refusals, tc.want, tc.wantRefusals)
			}
			if c.op == ownerref.Create {
				ing := c.object.(*networkingv1.Ingress)
				for k := range ing.Annotations {
					if raypod.UnsafeIngressAnnotation(k) {
						t.Errorf("unsafe annotation %s copied", k)
					}
				}
				if ing.Annotations["nginx.ingress.kubernetes.io/rewrite-target"] != "/$1" {
					t.Errorf("the listed annotation is missing: %v", ing.Annotations)
				}
			}
		})
	}
}
