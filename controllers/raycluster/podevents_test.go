package raycluster

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrlevent "sigs.k8s.io/controller-runtime/pkg/event"
)

// A pod update reaches the controller only when the pod as cached changed beyond its
// resourceVersion.
func TestPodUpdatesThatChangeNothingCachedAreDropped(t *testing.T) {
	base := func() *corev1.Pod {
		p := mkPod("w1", label("ray.io/cluster", "demo"), notReady())
		p.ResourceVersion = "1"
		p.Spec.NodeName = "n1"
		p.Status.Phase = corev1.PodPending
		return &p
	}
	for _, tc := range []struct {
		name   string
		change func(*corev1.Pod)
		want   bool
	}{
		{"only the resourceVersion (a dropped condition moved)", func(p *corev1.Pod) { p.ResourceVersion = "2" }, false},
		{"managedFields", func(p *corev1.Pod) {
			p.ResourceVersion = "2"
			p.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubelet"}}
		}, false},
		{"the phase", func(p *corev1.Pod) { p.Status.Phase = corev1.PodRunning }, true},
		{"the Ready condition", func(p *corev1.Pod) {
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
		}, true},
		{"the pod IP", func(p *corev1.Pod) { p.Status.PodIP = "127.0.0.9" }, true},
		{"a container's state", func(p *corev1.Pod) {
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "ray", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}
		}, true},
		{"a label", func(p *corev1.Pod) { p.Labels["x"] = "y" }, true},
		{"the deletion", func(p *corev1.Pod) { p.DeletionTimestamp = &metav1.Time{Time: time.Unix(1, 0)} }, true},
		{"the node", func(p *corev1.Pod) { p.Spec.NodeName = "n2" }, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			old, cur := base(), base()
			tc.change(cur)
			rv := cur.ResourceVersion
			if got := podUpdateChanged.Update(ctrlevent.UpdateEvent{ObjectOld: old, ObjectNew: cur}); got != tc.want {
				t.Errorf("update let through = %v, want %v", got, tc.want)
			}
			if old.ResourceVersion != "1" || cur.ResourceVersion != rv {
				t.Error("the comparison changed the cached pods")
			}
		})
	}
	if !podUpdateChanged.Create(ctrlevent.CreateEvent{Object: base()}) || !podUpdateChanged.Delete(ctrlevent.DeleteEvent{Object: base()}) {
		t.Error("creations and deletions always go through")
	}
}
