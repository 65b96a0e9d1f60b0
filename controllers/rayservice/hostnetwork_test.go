package rayservice

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/dashboard"
)

// A ready head pod in its node's network is not a dashboard target: the reason names
// hostNetwork (it becomes the Serve note in the status); the same head in the pod network is.
func TestHostNetworkHeadIsNoDashboardTarget(t *testing.T) {
	rc := &rayv1.RayCluster{ObjectMeta: metav1.ObjectMeta{Name: "demo", Namespace: "team-a", UID: "rc-uid"}}
	svc := &rayv1.RayService{ObjectMeta: metav1.ObjectMeta{Name: "svc", Namespace: "team-a"}}
	head := func(hostNetwork bool) []corev1.Pod {
		return []corev1.Pod{{
			ObjectMeta: metav1.ObjectMeta{Name: "demo-head-x7k2p", Namespace: "team-a", UID: "head-uid",
				Labels: map[string]string{rayv1.NodeTypeLabelKey: string(rayv1.HeadNode)}},
			Spec: corev1.PodSpec{HostNetwork: hostNetwork, Containers: []corev1.Container{{Name: "ray-head"}}},
			Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.1.2.3",
				Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}},
		}}
	}
	r := &Reconciler{}
	r.Resolver, r.Now = dashboard.PodResolver{}, time.Now
	cases := []struct {
		name        string
		hostNetwork bool
		wantErr     string
	}{
		{name: "pod network", hostNetwork: false},
		{name: "host network", hostNetwork: true, wantErr: "hostNetwork"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tgt, err := r.targetOf(context.Background(), svc, rc, head(tc.hostNetwork))
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("target: %v", err)
			case tc.wantErr == "" && tgt.URL != "http://10.1.2.3:8265":
				t.Fatalf("target URL %q", tgt.URL)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("target %+v, error %v; want an error naming %s", tgt, err, tc.wantErr)
			}
		})
	}
}
