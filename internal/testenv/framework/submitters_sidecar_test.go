package framework

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/dashboard"
	"github.com/raygate/raygate/internal/features"
	"github.com/raygate/raygate/internal/rayjob"
	"github.com/raygate/raygate/internal/testenv/raysim"
)

// A SidecarMode head pod, as raygate builds it, on a real API server: with Sidecars on,
// Submitters carries out its submitter container against the head's own simulated
// dashboard, submits once, and ends that container with exit code 0 while the pod (the Ray
// head) stays Running. Skipped when the control-plane binaries are not built.
func TestSidecarHeadOnEnvtest(t *testing.T) {
	env, dashboards, _ := startSubmitterEnv(t, SubmitterOptions{Poll: 20 * time.Millisecond, Sidecars: true})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const ns, name, id = "default", "side-x7k2p", "side-qz7wd"
	job := &rayv1.RayJob{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "side", UID: "u-1"},
		Spec: rayv1.RayJobSpec{SubmissionMode: rayv1.SidecarMode, Entrypoint: `python -c "print(1)"`, RayClusterSpec: &rayv1.RayClusterSpec{
			HeadGroupSpec: rayv1.HeadGroupSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				Containers: []corev1.Container{{Name: "ray-head", Image: "rayproject/ray:2.52.0"}}}}},
		}},
		Status: rayv1.RayJobStatus{JobId: id},
	}
	rc, err := rayjob.Cluster(job, name, features.Default())
	if err != nil {
		t.Fatal(err)
	}
	tmpl := rc.Spec.HeadGroupSpec.Template
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name + "-head",
		Labels: map[string]string{rayv1.ClusterLabelKey: name, rayv1.NodeTypeLabelKey: string(rayv1.HeadNode)}}, Spec: tmpl.Spec}
	if !IsSidecarHead(pod) {
		t.Fatalf("raygate's SidecarMode head pod is not recognised: containers %v", pod.Spec.Containers)
	}
	if err := env.Client.Create(ctx, pod); err != nil {
		t.Fatal(err)
	}
	var got corev1.Pod
	for {
		if err := env.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: pod.Name}, &got); err != nil {
			t.Fatal(err)
		}
		if term := submitterState(&got).Terminated; term != nil {
			if term.ExitCode != 0 {
				t.Fatalf("the sidecar exited %d: %s", term.ExitCode, term.Message)
			}
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the sidecar did not end: %+v", got.Status.ContainerStatuses)
		case <-time.After(50 * time.Millisecond):
		}
	}
	if got.Status.Phase != corev1.PodRunning {
		t.Errorf("the head pod is %s, want Running", got.Status.Phase)
	}
	for _, cs := range got.Status.ContainerStatuses {
		if cs.Name == "ray-head" && cs.State.Running == nil {
			t.Errorf("the Ray container does not run on: %+v", cs.State)
		}
	}
	sim := dashboards.Server(types.NamespacedName{Namespace: ns, Name: name})
	if posts := sim.JobSubmissionsFor(id); len(posts) != 1 {
		t.Fatalf("%d submissions of %s, want exactly 1", len(posts), id)
	}
	if info, ok := sim.Job(id); !ok || info.Status != dashboard.JobStatusSucceeded {
		t.Fatalf("job = %+v, %v", info, ok)
	}
}

func submitterState(p *corev1.Pod) corev1.ContainerState {
	for _, cs := range p.Status.ContainerStatuses {
		if cs.Name == raysim.SubmitterContainerName {
			return cs.State
		}
	}
	return corev1.ContainerState{}
}
