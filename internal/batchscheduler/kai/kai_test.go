package kai

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
)

func TestDecoratePod(t *testing.T) {
	tests := []struct {
		labels    map[string]string
		wantQueue string
	}{
		{labels: map[string]string{QueueLabelKey: "team-a"}, wantQueue: "team-a"},
		{labels: nil, wantQueue: ""},
	}
	for _, tt := range tests {
		pod := &corev1.Pod{}
		Scheduler{}.DecoratePod(&rayv1.RayCluster{ObjectMeta: metav1.ObjectMeta{Labels: tt.labels}}, pod)
		if pod.Spec.SchedulerName != "kai-scheduler" || pod.Labels[QueueLabelKey] != tt.wantQueue {
			t.Errorf("labels %v: schedulerName %q, pod labels %v", tt.labels, pod.Spec.SchedulerName, pod.Labels)
		}
	}
	if pg, err := (Scheduler{}).DesiredPodGroup(&rayv1.RayCluster{}); pg != nil || err != nil {
		t.Errorf("KAI builds its own PodGroups; got %v, %v", pg, err)
	}
}
