package raypod

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
)

// apiDefaults fills what the API server adds to a created Service.
func apiDefaults(s *corev1.Service) *corev1.Service {
	out := s.DeepCopy()
	out.ResourceVersion, out.UID = "7", "uid"
	if out.Spec.ClusterIP == "" {
		out.Spec.ClusterIP = "10.96.0.12"
		out.Spec.ClusterIPs = []string{"10.96.0.12"}
	}
	out.Spec.SessionAffinity = corev1.ServiceAffinityNone
	out.Spec.IPFamilyPolicy = ptr.To(corev1.IPFamilyPolicySingleStack)
	out.Spec.IPFamilies = []corev1.IPFamily{corev1.IPv4Protocol}
	out.Spec.InternalTrafficPolicy = ptr.To(corev1.ServiceInternalTrafficPolicyCluster)
	for i := range out.Spec.Ports {
		if out.Spec.Type == corev1.ServiceTypeNodePort && out.Spec.Ports[i].NodePort == 0 {
			out.Spec.Ports[i].NodePort = int32(30000 + i)
		}
	}
	return out
}

func TestMergeHeadService(t *testing.T) {
	rc := cluster()
	desired := HeadService(rc)
	existing := apiDefaults(desired)
	if u, re := MergeService(existing, desired); u != nil || re {
		t.Fatalf("a Service as created (plus API defaults) must not be updated; got update=%v recreate=%v", u != nil, re)
	}

	np := cluster(func(rc *rayv1.RayCluster) { rc.Spec.HeadGroupSpec.ServiceType = corev1.ServiceTypeNodePort })
	npDesired := HeadService(np)
	if u, _ := MergeService(apiDefaults(npDesired), npDesired); u != nil {
		t.Fatal("allocated node ports must be kept, not fought")
	}

	changed := cluster(func(rc *rayv1.RayCluster) {
		rc.Spec.HeadServiceAnnotations = map[string]string{"new": "yes"}
		rc.Spec.HeadGroupSpec.Template.Spec.Containers[0].Ports = []corev1.ContainerPort{{Name: "extra", ContainerPort: 9999}}
	})
	u, re := MergeService(existing, HeadService(changed))
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
	if _, re := MergeService(existing, HeadService(withIP)); !re {
		t.Error("switching from headless to a cluster IP needs the Service recreated")
	}
	keep := HeadService(withIP)
	keep.Spec.ClusterIP = ""
	if _, re := MergeService(existing, keep); re {
		t.Error("a desired Service without a clusterIP keeps the stored one's mode")
	}
}

// Each field MergeService sets is noticed by its no-copy check: a difference in any one
// gives an update carrying the desired value.
func TestMergeServiceNoticesEveryField(t *testing.T) {
	desired := HeadService(cluster(func(rc *rayv1.RayCluster) {
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
			u, re := MergeService(existing, desired)
			if u == nil || re {
				t.Fatalf("update=%v recreate=%v; want an update", u != nil, re)
			}
			if !serviceApplied(u, desired, MergePorts(u.Spec.Ports, desired.Spec.Ports)) {
				t.Errorf("the update does not carry the desired fields: %+v", u)
			}
		})
	}
	existing := apiDefaults(desired)
	existing.Labels["added-by-someone"] = "x"
	if u, _ := MergeService(existing, desired); u != nil {
		t.Error("labels someone else added are kept, not fought")
	}
}

func TestMergePorts(t *testing.T) {
	h2c := "kubernetes.io/h2c"
	stored := []corev1.ServicePort{
		{Name: "serve", Port: 8000, NodePort: 30001, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromString("serve"), AppProtocol: &h2c},
		{Name: "gone", Port: 9000, NodePort: 30002},
	}
	for name, tc := range map[string]struct {
		desired []corev1.ServicePort
		want    []corev1.ServicePort
	}{
		"allocated and defaulted values of a port of the same name are kept, even on a new number": {
			[]corev1.ServicePort{{Name: "serve", Port: 8001}},
			[]corev1.ServicePort{{Name: "serve", Port: 8001, NodePort: 30001, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromString("serve"), AppProtocol: &h2c}},
		},
		"a desired value wins": {
			[]corev1.ServicePort{{Name: "serve", Port: 8000, NodePort: 31000, Protocol: corev1.ProtocolUDP, TargetPort: intstr.FromInt32(8080)}},
			[]corev1.ServicePort{{Name: "serve", Port: 8000, NodePort: 31000, Protocol: corev1.ProtocolUDP, TargetPort: intstr.FromInt32(8080), AppProtocol: &h2c}},
		},
		"a new port gets the API server's defaults; a stored port not desired goes": {
			[]corev1.ServicePort{{Name: "new", Port: 7000}},
			[]corev1.ServicePort{{Name: "new", Port: 7000, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(7000)}},
		},
		"none": {nil, []corev1.ServicePort{}},
	} {
		t.Run(name, func(t *testing.T) {
			if d := cmp.Diff(tc.want, MergePorts(stored, tc.desired)); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
		})
	}
}

// A user's headService ports come first and win a name or a number; the generated ones fill
// in, never twice.
func TestHeadServicePortsWithAUsersPorts(t *testing.T) {
	for name, tc := range map[string]struct {
		user []corev1.ServicePort
		want map[string]int32
	}{
		"none: the head's":                  {nil, map[string]int32{"client": 10001, "dashboard": 8265, "gcs-server": 6379, "metrics": 8080, "serve": 8000}},
		"same name: the user's number":      {[]corev1.ServicePort{{Name: "dashboard", Port: 80}}, map[string]int32{"client": 10001, "dashboard": 80, "gcs-server": 6379, "metrics": 8080, "serve": 8000}},
		"same number: the user's name only": {[]corev1.ServicePort{{Name: "http", Port: 8000}}, map[string]int32{"client": 10001, "dashboard": 8265, "gcs-server": 6379, "metrics": 8080, "http": 8000}},
	} {
		t.Run(name, func(t *testing.T) {
			rc := cluster(func(rc *rayv1.RayCluster) {
				if tc.user != nil {
					rc.Spec.HeadGroupSpec.HeadService = &corev1.Service{Spec: corev1.ServiceSpec{Ports: tc.user}}
				}
			})
			got := map[string]int32{}
			for _, p := range HeadService(rc).Spec.Ports {
				if _, twice := got[p.Name]; twice {
					t.Errorf("port %s twice", p.Name)
				}
				got[p.Name] = p.Port
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("ports (-want +got):\n%s", d)
			}
		})
	}
	noContainer := cluster(func(rc *rayv1.RayCluster) { rc.Spec.HeadGroupSpec.Template.Spec.Containers = nil })
	if ports := HeadService(noContainer).Spec.Ports; len(ports) != 0 {
		t.Errorf("a head without a container (refused at admission) has no ports, and no panic: %v", ports)
	}
}
