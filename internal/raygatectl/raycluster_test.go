package raygatectl

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
)

// readyCluster is a ready cluster with one GPU worker group, as raygate's status shows it.
func readyCluster() *rayv1.RayCluster {
	return &rayv1.RayCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "raycluster-kuberay", Namespace: "default", Generation: 2},
		Spec: rayv1.RayClusterSpec{WorkerGroupSpecs: []rayv1.WorkerGroupSpec{{
			GroupName: "gpu", Replicas: ptr.To[int32](2), MinReplicas: ptr.To[int32](1), MaxReplicas: ptr.To[int32](4), NumOfHosts: 1,
		}}},
		Status: rayv1.RayClusterStatus{
			ObservedGeneration: 2, State: rayv1.Ready,
			StateTransitionTimes:  map[rayv1.ClusterState]*metav1.Time{rayv1.Ready: at(-5 * time.Minute)},
			DesiredWorkerReplicas: 2, AvailableWorkerReplicas: 2, ReadyWorkerReplicas: 2, MinWorkerReplicas: 1, MaxWorkerReplicas: 4,
			DesiredCPU: resource.MustParse("6"), DesiredGPU: resource.MustParse("2"), DesiredMemory: resource.MustParse("24Gi"),
			Head: rayv1.HeadInfo{ServiceName: "raycluster-kuberay-head-svc", PodName: "raycluster-kuberay-head-x2x7d", PodIP: "127.0.0.10"},
			Conditions: []metav1.Condition{
				{Type: string(rayv1.HeadPodReady), Status: metav1.ConditionTrue, Reason: rayv1.HeadPodRunningAndReady},
				{Type: string(rayv1.RayClusterProvisioned), Status: metav1.ConditionTrue, Reason: rayv1.AllPodRunningAndReadyFirstTime,
					Message: "All Ray Pods are ready for the first time"},
			},
		},
	}
}

func TestRenderRayCluster(t *testing.T) {
	stale := readyCluster()
	stale.Generation = 3
	for _, tc := range []struct {
		golden string
		rc     *rayv1.RayCluster
		render func(*bytes.Buffer, ClusterView) error
	}{
		{"cluster-status-ready.golden", readyCluster(), func(b *bytes.Buffer, v ClusterView) error { return RenderClusterStatus(b, v) }},
		{"cluster-why-ready.golden", readyCluster(), func(b *bytes.Buffer, v ClusterView) error { return RenderClusterWhy(b, v) }},
		{"cluster-why-stale.golden", stale, func(b *bytes.Buffer, v ClusterView) error { return RenderClusterWhy(b, v) }},
	} {
		t.Run(tc.golden, func(t *testing.T) {
			var b bytes.Buffer
			if err := tc.render(&b, ClusterView{Cluster: tc.rc, Now: now}); err != nil {
				t.Fatal(err)
			}
			checkGolden(t, tc.golden, b.Bytes())
		})
	}
}

// A cluster without a status, a suspended one and one another controller runs say so.
func TestClusterWhy(t *testing.T) {
	fresh := &rayv1.RayCluster{ObjectMeta: metav1.ObjectMeta{Name: "c", Generation: 1}}
	suspended := readyCluster()
	suspended.Spec.Suspend = ptr.To(true)
	foreign := readyCluster()
	foreign.Spec.ManagedBy = ptr.To("example.com/other")
	for _, tc := range []struct {
		rc   *rayv1.RayCluster
		want string
	}{
		{fresh, "raygate has not written a status yet."},
		{suspended, "spec.suspend is true"},
		{foreign, "spec.managedBy is example.com/other"},
	} {
		var b bytes.Buffer
		if err := RenderClusterWhy(&b, ClusterView{Cluster: tc.rc, Now: now}); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(b.String(), tc.want) {
			t.Errorf("why = %q, want it to say %q", b.String(), tc.want)
		}
	}
}

// version names raygate's operator Deployments (the chart's label) with their image.
func TestOperatorVersions(t *testing.T) {
	deploy := func(ns, name, label, image string) *appsv1.Deployment {
		return &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"app.kubernetes.io/name": label}},
			Spec: appsv1.DeploymentSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				Containers: []corev1.Container{{Name: "manager", Image: image}}}}},
		}
	}
	c := fake.NewClientBuilder().WithScheme(Scheme()).WithObjects(
		deploy("raygate-system", "raygate", "raygate", "ghcr.io/raygate/raygate:v0.9.0"),
		deploy("ray-system", "kuberay-operator", "kuberay-operator", "quay.io/kuberay/operator:v1.7.0"),
	).Build()
	got, err := OperatorVersions(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]string{"raygate operator: ghcr.io/raygate/raygate:v0.9.0 (deployment raygate-system/raygate)"}, got); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
	none, err := OperatorVersions(context.Background(), fake.NewClientBuilder().WithScheme(Scheme()).Build())
	if err != nil || len(none) != 1 || !strings.Contains(none[0], "no Deployment") {
		t.Errorf("without raygate: %q, %v", none, err)
	}
}
