package raycluster

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/raypod"
	"github.com/raygate/raygate/test/builders"
)

// cluster is a valid RayCluster for the tests, changed by mutate.
func cluster(mutate ...func(*rayv1.RayCluster)) *rayv1.RayCluster {
	rc := builders.RayCluster("demo", "team-a").Obj()
	rc.UID = types.UID("8a3c1e4e-0000-4000-8000-000000000001")
	for _, m := range mutate {
		m(rc)
	}
	return rc
}

// apiDefaults fills what the API server adds to a created Service.
func apiDefaults(s *corev1.Service) *corev1.Service {
	out := s.DeepCopy()
	out.ResourceVersion, out.UID = "7", "uid"
	if out.Spec.ClusterIP == "" {
		out.Spec.ClusterIP = "10.96.0.12"
		out.Spec.ClusterIPs = []string{"10.96.0.12"}
	}
	out.Spec.SessionAffinity = corev1.ServiceAffinityNone
	policy := corev1.IPFamilyPolicySingleStack
	out.Spec.IPFamilyPolicy = &policy
	out.Spec.IPFamilies = []corev1.IPFamily{corev1.IPv4Protocol}
	out.Spec.InternalTrafficPolicy = ptrTo(corev1.ServiceInternalTrafficPolicyCluster)
	for i := range out.Spec.Ports {
		if out.Spec.Type == corev1.ServiceTypeNodePort && out.Spec.Ports[i].NodePort == 0 {
			out.Spec.Ports[i].NodePort = int32(30000 + i)
		}
	}
	return out
}

func ptrTo[T any](v T) *T { return &v }

func TestMergeHeadService(t *testing.T) {
	rc := cluster()
	desired := raypod.HeadService(rc)
	existing := apiDefaults(desired)
	if u, re := mergeService(existing, desired); u != nil || re {
		t.Fatalf("a Service as created (plus API defaults) must not be updated; got update=%v recreate=%v", u != nil, re)
	}

	np := cluster(func(rc *rayv1.RayCluster) { rc.Spec.HeadGroupSpec.ServiceType = corev1.ServiceTypeNodePort })
	npDesired := raypod.HeadService(np)
	npExisting := apiDefaults(npDesired)
	if u, _ := mergeService(npExisting, npDesired); u != nil {
		t.Fatal("allocated node ports must be kept, not fought")
	}

	changed := cluster(func(rc *rayv1.RayCluster) {
		rc.Spec.HeadServiceAnnotations = map[string]string{"new": "yes"}
		rc.Spec.HeadGroupSpec.Template.Spec.Containers[0].Ports = []corev1.ContainerPort{{Name: "extra", ContainerPort: 9999}}
	})
	u, re := mergeService(existing, raypod.HeadService(changed))
	if u == nil || re {
		t.Fatalf("a new port and annotation must update the Service in place")
	}
	if u.Annotations["new"] != "yes" || u.Spec.ClusterIP != existing.Spec.ClusterIP || u.ResourceVersion != "7" {
		t.Errorf("update lost existing fields or the change: %+v", u)
	}
	found := false
	for _, p := range u.Spec.Ports {
		found = found || (p.Name == "extra" && p.Port == 9999)
	}
	if !found {
		t.Errorf("port extra missing: %+v", u.Spec.Ports)
	}

	withIP := cluster(func(rc *rayv1.RayCluster) {
		rc.Spec.HeadGroupSpec.HeadService = &corev1.Service{Spec: corev1.ServiceSpec{ClusterIP: "10.96.0.99"}}
	})
	if _, re := mergeService(existing, raypod.HeadService(withIP)); !re {
		t.Error("switching from headless to a cluster IP needs the Service recreated")
	}
}

// Each field mergeService sets is noticed by its no-copy check: a difference in any one
// gives an update carrying the desired value.
func TestMergeServiceNoticesEveryField(t *testing.T) {
	desired := raypod.HeadService(cluster(func(rc *rayv1.RayCluster) {
		rc.Spec.HeadServiceAnnotations = map[string]string{"a": "1"}
	}))
	for _, tc := range []struct {
		name   string
		change func(*corev1.Service)
	}{
		{"a label's value", func(s *corev1.Service) { s.Labels[rayv1.ClusterLabelKey] = "other" }},
		{"a missing label", func(s *corev1.Service) { delete(s.Labels, rayv1.ClusterLabelKey) }},
		{"a missing annotation", func(s *corev1.Service) { s.Annotations = nil }},
		{"the selector", func(s *corev1.Service) { s.Spec.Selector = map[string]string{"x": "y"} }},
		{"the type", func(s *corev1.Service) { s.Spec.Type = corev1.ServiceTypeNodePort }},
		{"publishNotReadyAddresses", func(s *corev1.Service) { s.Spec.PublishNotReadyAddresses = !s.Spec.PublishNotReadyAddresses }},
		{"a port", func(s *corev1.Service) { s.Spec.Ports[0].Port++ }},
		{"a missing port", func(s *corev1.Service) { s.Spec.Ports = s.Spec.Ports[1:] }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			existing := apiDefaults(desired)
			tc.change(existing)
			u, re := mergeService(existing, desired)
			if u == nil || re {
				t.Fatalf("update=%v recreate=%v; want an update", u != nil, re)
			}
			if !applied(u, desired, mergePorts(u.Spec.Ports, desired.Spec.Ports)) {
				t.Errorf("the update does not carry the desired fields: %+v", u)
			}
		})
	}
	existing := apiDefaults(desired)
	existing.Labels["added-by-someone"] = "x"
	if u, _ := mergeService(existing, desired); u != nil {
		t.Error("labels someone else added are kept, not fought")
	}
}
