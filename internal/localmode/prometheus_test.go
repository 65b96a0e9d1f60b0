package localmode

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/testenv/prometheus"
)

func TestRayTargets(t *testing.T) {
	pod := func(name, ip string, change func(*corev1.Pod)) corev1.Pod {
		p := corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, Labels: map[string]string{
				rayv1.IsRayNodeLabelKey: "yes", rayv1.ClusterLabelKey: "svc-abcde", rayv1.NodeTypeLabelKey: "worker",
			}},
			Spec:   corev1.PodSpec{Containers: []corev1.Container{{Name: "ray-worker", Ports: []corev1.ContainerPort{{Name: "metrics", ContainerPort: 8080}}}}},
			Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: ip},
		}
		if change != nil {
			change(&p)
		}
		return p
	}
	target := func(name, url, container string) prometheus.Target {
		return prometheus.Target{Job: JobRay, URL: url, Labels: map[string]string{
			"namespace": "default", "pod": name, "container": container, "ray_io_cluster": "svc-abcde", "ray_io_node_type": "worker",
		}}
	}
	got := RayTargets([]corev1.Pod{
		pod("svc-abcde-worker-b", "127.64.0.9", nil),
		pod("svc-abcde-worker-a", "127.64.0.8", func(p *corev1.Pod) {
			// The port named metrics wins wherever it is, and whatever its number.
			p.Spec.Containers = append([]corev1.Container{{Name: "sidecar"}}, corev1.Container{Name: "ray-worker", Ports: []corev1.ContainerPort{{Name: "metrics", ContainerPort: 9100}}})
		}),
		pod("pending", "127.64.0.10", func(p *corev1.Pod) { p.Status.Phase = corev1.PodPending }),
		pod("no-ip", "", nil),
		pod("off-loopback", "10.0.0.4", nil),
		pod("not-ray", "127.64.0.11", func(p *corev1.Pod) { delete(p.Labels, rayv1.IsRayNodeLabelKey) }),
		pod("no-metrics-port", "127.64.0.12", func(p *corev1.Pod) { p.Spec.Containers[0].Ports = nil }),
		pod("deleting", "127.64.0.13", func(p *corev1.Pod) { p.DeletionTimestamp = &metav1.Time{} }),
	})
	want := []prometheus.Target{
		target("svc-abcde-worker-a", "http://127.64.0.8:9100/metrics", "ray-worker"),
		target("svc-abcde-worker-b", "http://127.64.0.9:8080/metrics", "ray-worker"),
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("RayTargets =\n%+v\nwant\n%+v", got, want)
	}
	if !sameTargets(got, want) || sameTargets(got, want[:1]) {
		t.Error("sameTargets disagrees with DeepEqual")
	}
	// Every target is one the Prometheus configuration accepts.
	if _, err := prometheus.Config(prometheus.Options{Targets: got}); err != nil {
		t.Error(err)
	}
}
