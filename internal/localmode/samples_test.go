package localmode

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
)

func pod(phase corev1.PodPhase, ready bool) corev1.Pod {
	st := corev1.ConditionFalse
	if ready {
		st = corev1.ConditionTrue
	}
	return corev1.Pod{Status: corev1.PodStatus{Phase: phase, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: st}}}}
}

func TestProgress(t *testing.T) {
	readyFalse := []metav1.Condition{{Type: string(rayv1.RayServiceReady), Status: metav1.ConditionFalse, Reason: "Initializing"}}
	tests := []struct {
		name string
		svc  rayv1.RayService
		pods []corev1.Pod
		want string
	}{
		{"no cluster yet", rayv1.RayService{}, nil, "waiting for raygate to create a RayCluster"},
		{
			"pending cluster starting",
			rayv1.RayService{Status: rayv1.RayServiceStatuses{Conditions: readyFalse, PendingServiceStatus: rayv1.RayServiceStatus{RayClusterName: "rs-a"}}},
			[]corev1.Pod{pod(corev1.PodPending, false), pod(corev1.PodRunning, true)},
			"RayCluster rs-a: 1/2 pods ready; Ready=False (Initializing)",
		},
		{
			"applications sorted by name",
			rayv1.RayService{Status: rayv1.RayServiceStatuses{ActiveServiceStatus: rayv1.RayServiceStatus{RayClusterName: "rs-a",
				Applications: map[string]rayv1.AppStatus{"z": {Status: "RUNNING"}, "a": {Status: "DEPLOYING"}}}}},
			[]corev1.Pod{pod(corev1.PodRunning, true)},
			"RayCluster rs-a: 1/1 pods ready; Serve: a DEPLOYING, z RUNNING",
		},
		{
			"the pending cluster is the one being brought up",
			rayv1.RayService{Status: rayv1.RayServiceStatuses{
				ActiveServiceStatus:  rayv1.RayServiceStatus{RayClusterName: "rs-a", Applications: map[string]rayv1.AppStatus{"x": {Status: "RUNNING"}}},
				PendingServiceStatus: rayv1.RayServiceStatus{RayClusterName: "rs-b"},
			}},
			nil,
			"RayCluster rs-b: 0/0 pods ready",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Progress(&tt.svc, tt.pods); got != tt.want {
				t.Errorf("Progress = %q\nwant       %q", got, tt.want)
			}
		})
	}
}

func TestReady(t *testing.T) {
	ready := []metav1.Condition{{Type: string(rayv1.RayServiceReady), Status: metav1.ConditionTrue}}
	svc := func(gen, observed int64, conds []metav1.Condition, pending string) *rayv1.RayService {
		s := &rayv1.RayService{Status: rayv1.RayServiceStatuses{ObservedGeneration: observed, Conditions: conds,
			PendingServiceStatus: rayv1.RayServiceStatus{RayClusterName: pending}}}
		s.Generation = gen
		return s
	}
	for _, tt := range []struct {
		name string
		svc  *rayv1.RayService
		want bool
	}{
		{"ready", svc(2, 2, ready, ""), true},
		{"not ready", svc(2, 2, nil, ""), false},
		{"status of an older generation", svc(3, 2, ready, ""), false},
		{"upgrade in progress", svc(2, 2, ready, "rs-b"), false},
	} {
		if got := Ready(tt.svc); got != tt.want {
			t.Errorf("%s: Ready = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestSamplesParse(t *testing.T) {
	for _, name := range []string{IncrementalSample, InvalidSample} {
		svc, err := ReadRayService(SamplePath(name))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if svc.Name == "" || svc.Namespace != Namespace {
			t.Errorf("%s: name %q namespace %q", name, svc.Name, svc.Namespace)
		}
	}
}
