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
	desired := raypod.HeadIngress(withIngress())
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
	}))
	annotated := raypod.HeadIngress(withIngress(func(rc *rayv1.RayCluster) {
		rc.Annotations = map[string]string{"nginx.ingress.kubernetes.io/rewrite-target": "/$1"}
	}))
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
