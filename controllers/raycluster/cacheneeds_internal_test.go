package raycluster

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/cacheneeds"
	"github.com/raygate/raygate/internal/raypod"
)

// mTLS reads slim cached pods as it reads whole ones: the IPs certificates name, and which
// pods outlive their certificate (the pass-level test in cacheneeds_test.go runs no TLS
// cluster, which needs cert-manager).
func TestMTLSReadsTheSameOnSlimPods(t *testing.T) {
	now := time.Date(2025, 3, 4, 5, 6, 7, 0, time.UTC)
	pod := func(name string, node rayv1.RayNodeType, ip string, started time.Time, phase corev1.PodPhase) corev1.Pod {
		s := metav1.NewTime(started)
		return corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{rayv1.NodeTypeLabelKey: string(node)}},
			Spec:       corev1.PodSpec{NodeName: "node-1", Containers: []corev1.Container{{Name: "ray", Image: "ray"}}},
			Status:     corev1.PodStatus{Phase: phase, PodIP: ip, HostIP: "127.0.0.1", StartTime: &s},
		}
	}
	whole := []corev1.Pod{
		pod("head", rayv1.HeadNode, "127.0.0.10", now.Add(-raypod.LeafDuration), corev1.PodRunning),
		pod("w1", rayv1.WorkerNode, "127.0.0.11", now.Add(-time.Hour), corev1.PodRunning),
		pod("w2", rayv1.WorkerNode, "127.0.0.12", now, corev1.PodFailed),
	}
	slim := make([]corev1.Pod, len(whole))
	for i := range whole {
		slim[i] = *cacheneeds.SlimPod(whole[i].DeepCopy(), PodFields)
	}
	type seen struct {
		Head, Workers []string
		Due           []string
		Next          time.Duration
	}
	read := func(pods []corev1.Pod) seen {
		var s seen
		s.Head, s.Workers = podIPs(pods)
		due, next := tlsRestartsDue(pods, now)
		for _, d := range due {
			s.Due = append(s.Due, d.name)
		}
		s.Next = next
		return s
	}
	w, s := read(whole), read(slim)
	if diff := cmp.Diff(w, s); diff != "" {
		t.Errorf("mTLS reads slim pods differently (-whole +slim):\n%s", diff)
	}
	if len(w.Due) != 1 || w.Next == 0 || len(w.Workers) != 1 {
		t.Errorf("%+v: the case no longer exercises what it should", w)
	}
}
