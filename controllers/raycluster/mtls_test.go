package raycluster

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
)

func TestPodIPs(t *testing.T) {
	pod := func(node rayv1.RayNodeType, ip string, mutate func(*corev1.Pod)) corev1.Pod {
		p := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{rayv1.NodeTypeLabelKey: string(node)}},
			Status: corev1.PodStatus{PodIP: ip, Phase: corev1.PodRunning}}
		if mutate != nil {
			mutate(&p)
		}
		return p
	}
	head, workers := podIPs([]corev1.Pod{
		pod(rayv1.HeadNode, "127.0.0.2", nil),
		pod(rayv1.WorkerNode, "127.0.0.3", nil),
		pod(rayv1.WorkerNode, "", nil), // not scheduled yet
		pod(rayv1.WorkerNode, "127.0.0.4", func(p *corev1.Pod) { now := metav1.Now(); p.DeletionTimestamp = &now }),
		pod(rayv1.WorkerNode, "127.0.0.5", func(p *corev1.Pod) { p.Status.Phase = corev1.PodFailed }),
		pod(rayv1.WorkerNode, "127.0.0.6", func(p *corev1.Pod) { p.Status.Phase = corev1.PodSucceeded }),
		pod(rayv1.WorkerNode, "127.0.0.7", func(p *corev1.Pod) { p.Status.Phase = corev1.PodPending }),
	})
	if diff := cmp.Diff([]string{"127.0.0.2"}, head); diff != "" {
		t.Errorf("head (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"127.0.0.3", "127.0.0.7"}, workers); diff != "" {
		t.Errorf("workers (-want +got):\n%s", diff)
	}
}
