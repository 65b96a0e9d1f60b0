package raycluster

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/owned/ownerref"
	"github.com/raygate/raygate/internal/raypod"
)

func TestDecideService(t *testing.T) {
	rc := cluster()
	serve := raypod.ClusterServeService(rc)
	headless := raypod.HeadlessWorkerService(rc)
	relabelled := func(s *corev1.Service) *corev1.Service {
		out := apiDefaults(s)
		delete(out.Labels, rayv1.KubernetesCreatedByLabelKey) // made by KubeRay
		return out
	}
	movedPort := cluster(func(rc *rayv1.RayCluster) {
		rc.Spec.HeadGroupSpec.Template.Spec.Containers[0].Ports = []corev1.ContainerPort{{Name: "serve", ContainerPort: 9000}}
	})
	withClusterIP := func(s *corev1.Service) *corev1.Service {
		out := apiDefaults(s)
		out.Spec.ClusterIP, out.Spec.ClusterIPs = "10.96.0.40", []string{"10.96.0.40"}
		return out
	}
	cases := []struct {
		name              string
		desired, existing *corev1.Service
		controlled, ours  bool
		want              ownerref.Op
	}{
		{"neither wanted nor there", nil, nil, false, false, ownerref.Keep},
		{"wanted, missing", serve, nil, false, false, ownerref.Create},
		{"as created, plus API defaults", serve, apiDefaults(serve), true, true, ownerref.Keep},
		{"headless as created, plus API defaults", headless, apiDefaults(headless), true, false, ownerref.Keep},
		{"made by KubeRay: gets raygate's label", serve, relabelled(serve), true, true, ownerref.Update},
		{"serve port moved", raypod.ClusterServeService(movedPort), apiDefaults(serve), true, true, ownerref.Update},
		{"headless Service that got a cluster IP", headless, withClusterIP(headless), true, false, ownerref.Recreate},
		{"someone else's Service", serve, apiDefaults(serve), false, false, ownerref.Report},
		{"no longer wanted, ours", nil, apiDefaults(serve), true, true, ownerref.Delete},
		{"no longer wanted, controlled but another kind (a RayService's backend)", nil, apiDefaults(serve), true, false, ownerref.Keep},
		{"no longer wanted, someone else's", nil, apiDefaults(serve), false, true, ownerref.Keep},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := decideService(tc.desired, tc.existing, tc.controlled, tc.ours)
			if c.op != tc.want {
				t.Fatalf("change = %v, want %v", c.op, tc.want)
			}
			if (c.op == ownerref.Keep) != (c.object == nil) {
				t.Fatalf("every change but keep names its object: %+v", c)
			}
			if updated, ok := c.object.(*corev1.Service); ok && c.op == ownerref.Update &&
				(updated.ResourceVersion != tc.existing.ResourceVersion || updated.Spec.ClusterIP != tc.existing.Spec.ClusterIP) {
				t.Errorf("the update lost what the API server set: %+v", updated)
			}
		})
	}
}

func TestOwnedByRayService(t *testing.T) {
	if ownedByRayService(cluster()) {
		t.Error("a standalone cluster is not a RayService's")
	}
	labelled := cluster(func(rc *rayv1.RayCluster) {
		rc.Labels = map[string]string{rayv1.OriginatedFromCRDLabelKey: rayv1.RayServiceKind}
	})
	if !ownedByRayService(labelled) {
		t.Error("a cluster labelled as a RayService's is one")
	}
	controlled := cluster(func(rc *rayv1.RayCluster) {
		rc.OwnerReferences = []metav1.OwnerReference{{APIVersion: "ray.io/v1", Kind: rayv1.RayServiceKind, Name: "svc", UID: "u", Controller: ptrTo(true)}}
	})
	if !ownedByRayService(controlled) {
		t.Error("a cluster controlled by a RayService is one")
	}
}
