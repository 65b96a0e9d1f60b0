package kuberay

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func TestEndpointSubsets(t *testing.T) {
	pod := func(name, ip string, ready bool, phase corev1.PodPhase) corev1.Pod {
		s := corev1.ConditionFalse
		if ready {
			s = corev1.ConditionTrue
		}
		return corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("uid-" + name)},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "ray", Ports: []corev1.ContainerPort{{Name: "serve", ContainerPort: 8000}}}}},
			Status:     corev1.PodStatus{PodIP: ip, Phase: phase, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: s}}},
		}
	}
	addr := func(name, ip string) corev1.EndpointAddress {
		return corev1.EndpointAddress{IP: ip, TargetRef: &corev1.ObjectReference{Kind: "Pod", Namespace: "ns", Name: name, UID: types.UID("uid-" + name)}}
	}
	svc := &corev1.Service{Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{
		{Name: "serve", Port: 8000, TargetPort: intstr.FromString("serve"), Protocol: corev1.ProtocolTCP},
		{Name: "dashboard", Port: 8265, TargetPort: intstr.FromInt32(8265)},
		{Name: "plain", Port: 10001},
		{Name: "undeclared", Port: 9999, TargetPort: intstr.FromString("nope")},
	}}}
	pods := []corev1.Pod{
		pod("b", "10.0.0.2", true, corev1.PodRunning),
		pod("a", "10.0.0.1", true, corev1.PodRunning),
		pod("c", "10.0.0.3", false, corev1.PodRunning),
		pod("pending", "", false, corev1.PodPending),
		pod("done", "10.0.0.4", false, corev1.PodSucceeded),
	}
	ports := []corev1.EndpointPort{{Name: "serve", Port: 8000, Protocol: corev1.ProtocolTCP}, {Name: "dashboard", Port: 8265}, {Name: "plain", Port: 10001}}

	got := endpointSubsets(svc, pods)
	want := []endpointSubset{{Addresses: []corev1.EndpointAddress{addr("a", "10.0.0.1"), addr("b", "10.0.0.2")},
		NotReadyAddresses: []corev1.EndpointAddress{addr("c", "10.0.0.3")}, Ports: ports}}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("endpoints (-want +got):\n%s", d)
	}

	svc.Spec.PublishNotReadyAddresses = true
	got = endpointSubsets(svc, pods)
	want = []endpointSubset{{Addresses: []corev1.EndpointAddress{addr("a", "10.0.0.1"), addr("b", "10.0.0.2"), addr("c", "10.0.0.3")}, Ports: ports}}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("publishNotReadyAddresses (-want +got):\n%s", d)
	}

	if got := endpointSubsets(svc, pods[3:]); got != nil {
		t.Errorf("no pod with an IP: %v, want no subsets", got)
	}
}
