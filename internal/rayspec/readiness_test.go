package rayspec

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestReadiness(t *testing.T) {
	pod := func(phase corev1.PodPhase, ready corev1.ConditionStatus, deleting bool) *corev1.Pod {
		p := &corev1.Pod{Status: corev1.PodStatus{Phase: phase}}
		if ready != "" {
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue}, {Type: corev1.PodReady, Status: ready}}
		}
		if deleting {
			p.DeletionTimestamp = &metav1.Time{}
		}
		return p
	}
	cases := []struct {
		name                     string
		pod                      *corev1.Pod
		runningAndReady, serving bool
	}{
		{"running and ready", pod(corev1.PodRunning, corev1.ConditionTrue, false), true, true},
		{"running, not ready", pod(corev1.PodRunning, corev1.ConditionFalse, false), false, false},
		{"running, no Ready condition yet", pod(corev1.PodRunning, "", false), false, false},
		{"pending", pod(corev1.PodPending, corev1.ConditionTrue, false), false, false},
		{"succeeded with a stale Ready condition", pod(corev1.PodSucceeded, corev1.ConditionTrue, false), false, false},
		{"being deleted: still counted, no longer serving", pod(corev1.PodRunning, corev1.ConditionTrue, true), true, false},
	}
	for _, tc := range cases {
		if got := RunningAndReady(tc.pod); got != tc.runningAndReady {
			t.Errorf("%s: RunningAndReady = %v, want %v", tc.name, got, tc.runningAndReady)
		}
		if got := Serving(tc.pod); got != tc.serving {
			t.Errorf("%s: Serving = %v, want %v", tc.name, got, tc.serving)
		}
	}

	ready, notReady := *pod(corev1.PodRunning, corev1.ConditionTrue, false), *pod(corev1.PodRunning, corev1.ConditionFalse, false)
	for _, tc := range []struct {
		pods []corev1.Pod
		want bool
	}{{nil, false}, {[]corev1.Pod{ready}, true}, {[]corev1.Pod{ready, notReady}, false}} {
		if got := AllRunningAndReady(tc.pods); got != tc.want {
			t.Errorf("AllRunningAndReady(%d pods) = %v, want %v", len(tc.pods), got, tc.want)
		}
	}
}
