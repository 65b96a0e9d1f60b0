package raycluster

import (
	"testing"
	"time"

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

func TestTLSRestartsDue(t *testing.T) {
	now := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	day := 24 * time.Hour
	pod := func(name string, age time.Duration, deleting bool) corev1.Pod {
		p := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}}
		if age >= 0 {
			p.Status.StartTime = &metav1.Time{Time: now.Add(-age)}
		}
		if deleting {
			t := metav1.NewTime(now)
			p.DeletionTimestamp = &t
		}
		return p
	}
	cases := map[string]struct {
		pods     []corev1.Pod
		wantDue  []string
		wantNext time.Duration
	}{
		"no pods":                    {},
		"not started yet":            {pods: []corev1.Pod{pod("a", -1, false)}},
		"young pods: next is oldest": {pods: []corev1.Pod{pod("a", 10*day, false), pod("b", 70*day, false)}, wantNext: 5 * day},
		"75 days: due":               {pods: []corev1.Pod{pod("a", 75*day, false), pod("b", 80*day, false), pod("c", day, false)}, wantDue: []string{"a", "b"}, wantNext: 74 * day},
		"being deleted":              {pods: []corev1.Pod{pod("a", 80*day, true)}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			due, next := tlsRestartsDue(tc.pods, now)
			var names []string
			for _, d := range due {
				names = append(names, d.name)
				if !d.expires.Equal(d.started.Add(90 * day)) {
					t.Errorf("%s expires %v, want 90 days after %v", d.name, d.expires, d.started)
				}
			}
			if diff := cmp.Diff(tc.wantDue, names); diff != "" || next != tc.wantNext {
				t.Errorf("due (-want +got):\n%s\nnext %v, want %v", diff, next, tc.wantNext)
			}
		})
	}
}
