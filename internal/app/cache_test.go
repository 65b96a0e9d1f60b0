package app

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/rayspec"
)

// The kinds other tenants create in numbers are cached only when raygate labelled them, so
// the operator's memory does not grow with the cluster.
func TestCacheHoldsOnlyLabelledObjects(t *testing.T) {
	ours := labels.Set{rayv1.KubernetesCreatedByLabelKey: rayv1.ComponentName}
	theirs := labels.Set{"app": "other"}
	for _, gatewayAPI := range []bool{true, false} {
		opts := cacheOptions(DefaultOptions(), gatewayAPI)
		kinds := []client.Object{&corev1.Service{}, &corev1.ServiceAccount{}, &rbacv1.Role{}, &rbacv1.RoleBinding{}, &networkingv1.Ingress{}}
		if gatewayAPI {
			kinds = append(kinds, &gwv1.Gateway{}, &gwv1.HTTPRoute{})
		}
		for _, k := range kinds {
			var by *labels.Selector
			for o, b := range opts.ByObject {
				if sameType(o, k) {
					by = &b.Label
				}
			}
			if by == nil || *by == nil || !(*by).Matches(ours) || (*by).Matches(theirs) {
				t.Errorf("gatewayAPI=%v: %T is not cached by raygate's label only", gatewayAPI, k)
			}
		}
		for o := range opts.ByObject {
			if _, gw := o.(*gwv1.Gateway); gw && !gatewayAPI {
				t.Error("Gateways configured in the cache without the Gateway API")
			}
		}
	}
}

func sameType(a, b client.Object) bool { return reflect.TypeOf(a) == reflect.TypeOf(b) }

// A cached pod keeps what the controllers read: readiness (phase and the Ready condition with
// its reason and message, which HeadPodReady mirrors) and container states; the kubelet's
// other conditions go.
func TestSlimPodKeepsReadiness(t *testing.T) {
	cond := func(ty corev1.PodConditionType, s corev1.ConditionStatus) corev1.PodCondition {
		return corev1.PodCondition{Type: ty, Status: s, Reason: "R-" + string(ty), Message: "m-" + string(ty)}
	}
	all := []corev1.PodCondition{
		cond(corev1.PodReadyToStartContainers, corev1.ConditionTrue), cond(corev1.PodInitialized, corev1.ConditionTrue),
		cond(corev1.PodReady, corev1.ConditionFalse), cond(corev1.ContainersReady, corev1.ConditionFalse),
		cond(corev1.PodScheduled, corev1.ConditionTrue),
	}
	for _, tc := range []struct {
		name  string
		phase corev1.PodPhase
		conds []corev1.PodCondition
		want  []corev1.PodCondition
		ready bool
	}{
		{"kubelet's five, not ready", corev1.PodRunning, all, []corev1.PodCondition{cond(corev1.PodReady, corev1.ConditionFalse)}, false},
		{"ready", corev1.PodRunning, []corev1.PodCondition{cond(corev1.PodScheduled, corev1.ConditionTrue), cond(corev1.PodReady, corev1.ConditionTrue)},
			[]corev1.PodCondition{cond(corev1.PodReady, corev1.ConditionTrue)}, true},
		{"pending, scheduled only", corev1.PodPending, []corev1.PodCondition{cond(corev1.PodScheduled, corev1.ConditionTrue)}, nil, false},
		{"no conditions", corev1.PodPending, nil, nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := &corev1.Pod{
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "ray-head", Image: "rayproject/ray"}}, RestartPolicy: corev1.RestartPolicyAlways},
				Status: corev1.PodStatus{Phase: tc.phase, Conditions: tc.conds, PodIP: "127.0.0.2", HostIP: "127.0.0.1",
					ContainerStatuses: []corev1.ContainerStatus{{Name: "ray-head", Image: "rayproject/ray", RestartCount: 2,
						State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}},
			}
			before := rayspec.RunningAndReady(pod)
			out, err := slimPod(pod)
			if err != nil {
				t.Fatal(err)
			}
			slim := out.(*corev1.Pod)
			if !reflect.DeepEqual(slim.Status.Conditions, tc.want) {
				t.Errorf("conditions = %+v, want %+v", slim.Status.Conditions, tc.want)
			}
			if got := rayspec.RunningAndReady(slim); got != before || got != tc.ready {
				t.Errorf("RunningAndReady = %v after slimming, %v before, want %v", got, before, tc.ready)
			}
			cs := slim.Status.ContainerStatuses
			if slim.Status.PodIP != "127.0.0.2" || slim.Status.HostIP != "" || len(cs) != 1 || cs[0].RestartCount != 2 || cs[0].State.Running == nil || cs[0].Image != "" {
				t.Errorf("status = %+v", slim.Status)
			}
			if len(slim.Spec.Containers) != 1 || slim.Spec.Containers[0].Name != "ray-head" || slim.Spec.Containers[0].Image != "" || slim.Spec.RestartPolicy != corev1.RestartPolicyAlways {
				t.Errorf("spec = %+v", slim.Spec)
			}
		})
	}
}

// The RayService controller reads the head's Serve port from the cached pod: a custom one must
// survive slimming, or traffic checks would go to Ray's default port.
func TestSlimPodKeepsServePort(t *testing.T) {
	pod := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{
		{Name: "ray-head", Ports: []corev1.ContainerPort{{Name: "gcs-server", ContainerPort: 6379}, {Name: rayspec.ServePortName, ContainerPort: 9000}}},
		{Name: "sidecar", Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}}},
	}}}
	out, err := slimPod(pod)
	if err != nil {
		t.Fatal(err)
	}
	c := out.(*corev1.Pod).Spec.Containers
	if got := rayspec.ContainerServePort(&c[rayv1.RayContainerIndex]); got != 9000 {
		t.Errorf("serve port after slimming = %d, want 9000", got)
	}
	if len(c[0].Ports) != 1 || len(c[1].Ports) != 0 {
		t.Errorf("ports kept: %+v, %+v; want only the serve port", c[0].Ports, c[1].Ports)
	}
}
