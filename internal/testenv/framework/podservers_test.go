package framework

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
)

func TestWantListeners(t *testing.T) {
	pod := func(node rayv1.RayNodeType, change func(*corev1.Pod)) *corev1.Pod {
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{rayv1.ClusterLabelKey: "c", rayv1.NodeTypeLabelKey: string(node)}},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "ray-head"}, {Name: "sidecar"}}},
			Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "127.64.0.7", ContainerStatuses: []corev1.ContainerStatus{
				{Name: "sidecar", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}},
				{Name: "ray-head", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}},
			}},
		}
		if change != nil {
			change(p)
		}
		return p
	}
	proxy := listenSpec{Addr: "127.64.0.7:8000", Role: roleServeProxy}
	metrics := listenSpec{Addr: "127.64.0.7:8080", Role: roleMetrics}
	for _, tt := range []struct {
		name string
		pod  *corev1.Pod
		want []listenSpec
	}{
		{"head: proxy, metrics and dashboard", pod(rayv1.HeadNode, nil), []listenSpec{proxy, metrics, {Addr: "127.64.0.7:8265", Role: roleDashboard}}},
		{"worker: proxy and metrics", pod(rayv1.WorkerNode, nil), []listenSpec{proxy, metrics}},
		{"named serve and metrics ports", pod(rayv1.WorkerNode, func(p *corev1.Pod) {
			p.Spec.Containers[0].Ports = []corev1.ContainerPort{{Name: "serve", ContainerPort: 9000}, {Name: "metrics", ContainerPort: 9100}}
		}), []listenSpec{{Addr: "127.64.0.7:9000", Role: roleServeProxy}, {Addr: "127.64.0.7:9100", Role: roleMetrics}}},
		{"not a Ray pod", pod(rayv1.HeadNode, func(p *corev1.Pod) { delete(p.Labels, rayv1.ClusterLabelKey) }), nil},
		{"pending", pod(rayv1.HeadNode, func(p *corev1.Pod) { p.Status.Phase = corev1.PodPending }), nil},
		{"no IP yet", pod(rayv1.HeadNode, func(p *corev1.Pod) { p.Status.PodIP = "" }), nil},
		{"being deleted", pod(rayv1.HeadNode, func(p *corev1.Pod) { p.DeletionTimestamp = &metav1.Time{} }), nil},
		{"Ray container exited", pod(rayv1.HeadNode, func(p *corev1.Pod) {
			p.Status.ContainerStatuses[1].State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1}}
		}), nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := wantListeners(tt.pod, 8265); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("wantListeners = %+v, want %+v", got, tt.want)
			}
		})
	}
}
