package framework

import (
	"context"
	"fmt"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/raygate/raygate/internal/dashboard"
	"github.com/raygate/raygate/internal/testenv/controlplane"
	"github.com/raygate/raygate/internal/testenv/raysim"
)

// The fake kubelet and Submitters on a real API server: a KubeRay-shaped submitter pod
// submits once to the simulated cluster its address names and ends Succeeded; a retried pod
// only follows the job; a refused submission ends Failed with exit code 1; OnFailure
// restarts the container in place. Skipped when the control-plane binaries are not built.
func TestSubmitterPodsOnEnvtest(t *testing.T) {
	env, dashboards, subs := startSubmitterEnv(t, SubmitterOptions{Poll: 20 * time.Millisecond, RestartBackoff: 50 * time.Millisecond})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c := env.Client
	const ns = "default"
	cluster := types.NamespacedName{Namespace: ns, Name: "rj-raycluster-x7k2p"}
	for _, o := range []client.Object{
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "rj-raycluster-x7k2p-head-svc"}, Spec: corev1.ServiceSpec{
			Selector: map[string]string{"ray.io/cluster": cluster.Name, "ray.io/node-type": "head"},
			Ports:    []corev1.ServicePort{{Name: "dashboard", Port: 8265}}}},
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "rj-raycluster-x7k2p-head", Labels: map[string]string{"ray.io/cluster": cluster.Name, "ray.io/node-type": "head"}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "ray-head", Image: "rayproject/ray:2.52.0"}}}},
	} {
		if err := c.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	address := "http://rj-raycluster-x7k2p-head-svc." + ns + ".svc.cluster.local:8265"
	job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "rj"}, Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{
		Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: "c", Image: "x"}}}}}}
	if err := c.Create(ctx, job); err != nil {
		t.Fatal(err)
	}
	submitterPod := func(name, id string, restart corev1.RestartPolicy) *corev1.Pod {
		cmd, args := raysim.K8sJobModeCommand(address, id, "python /home/ray/samples/sample_code.py")
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name,
			Labels:          map[string]string{"ray.io/originated-from-crd": "RayJob", "ray.io/originated-from-cr-name": "rj"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: job.Name, UID: job.UID, Controller: ptr.To(true)}}},
			Spec: corev1.PodSpec{RestartPolicy: restart, Containers: []corev1.Container{{
				Name: raysim.SubmitterContainerName, Image: "rayproject/ray:2.52.0", Command: cmd, Args: args,
				Env: []corev1.EnvVar{{Name: "RAY_DASHBOARD_ADDRESS", Value: address}, {Name: "RAY_JOB_SUBMISSION_ID", Value: id}}}}}}
	}
	waitEnded := func(name string) *corev1.Pod {
		t.Helper()
		for {
			p := &corev1.Pod{}
			if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, p); err != nil {
				t.Fatal(err)
			}
			if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
				// The fake kubelet must not bring it back.
				time.Sleep(300 * time.Millisecond)
				if err := c.Get(ctx, client.ObjectKeyFromObject(p), p); err != nil {
					t.Fatal(err)
				}
				return p
			}
			select {
			case <-ctx.Done():
				t.Fatalf("pod %s did not end: %+v", name, p.Status)
			case <-time.After(50 * time.Millisecond):
			}
		}
	}
	exitCode := func(p *corev1.Pod) string {
		for _, cs := range p.Status.ContainerStatuses {
			if cs.State.Terminated != nil {
				return fmt.Sprintf("%s %d", p.Status.Phase, cs.State.Terminated.ExitCode)
			}
		}
		return string(p.Status.Phase) + " (no terminated container)"
	}

	if err := c.Create(ctx, submitterPod("rj-first", "rj-1", corev1.RestartPolicyNever)); err != nil {
		t.Fatal(err)
	}
	if got := exitCode(waitEnded("rj-first")); got != "Succeeded 0" {
		t.Fatalf("first submitter: %s", got)
	}
	sim := dashboards.Server(cluster)
	if info, ok := sim.Job("rj-1"); !ok || info.Status != dashboard.JobStatusSucceeded || info.Entrypoint != "python /home/ray/samples/sample_code.py" {
		t.Fatalf("job = %+v, %v", info, ok)
	}
	// A retried submitter pod (the Job's backoff) checks first and only follows.
	if err := c.Create(ctx, submitterPod("rj-retry", "rj-1", corev1.RestartPolicyNever)); err != nil {
		t.Fatal(err)
	}
	if got := exitCode(waitEnded("rj-retry")); got != "Succeeded 0" {
		t.Fatalf("retried submitter: %s", got)
	}
	if posts := sim.JobSubmissionsFor("rj-1"); len(posts) != 1 {
		t.Fatalf("%d submissions of rj-1, want exactly 1", len(posts))
	}
	if res := subs.Results(ns, "rj-retry"); len(res) != 1 || res[0].Submitted {
		t.Fatalf("retry results = %+v", res)
	}

	// Refused submissions: Never ends Failed with exit code 1 ...
	sim.SetJobsFault(raysim.JobsFault{RefuseSubmissions: 500})
	if err := c.Create(ctx, submitterPod("rj-refused", "rj-2", corev1.RestartPolicyNever)); err != nil {
		t.Fatal(err)
	}
	p := waitEnded("rj-refused")
	if got := exitCode(p); got != "Failed 1" || p.Status.ContainerStatuses[0].State.Terminated.Message == "" {
		t.Fatalf("refused submitter: %s %+v", got, p.Status.ContainerStatuses)
	}
	// ... and OnFailure restarts the container until the submission goes through.
	if err := c.Create(ctx, submitterPod("rj-onfailure", "rj-3", corev1.RestartPolicyOnFailure)); err != nil {
		t.Fatal(err)
	}
	for len(subs.Results(ns, "rj-onfailure")) < 2 {
		select {
		case <-ctx.Done():
			t.Fatal("the OnFailure container was not restarted")
		case <-time.After(20 * time.Millisecond):
		}
	}
	sim.SetJobsFault(raysim.JobsFault{})
	p = waitEnded("rj-onfailure")
	if got := exitCode(p); got != "Succeeded 0" || p.Status.ContainerStatuses[0].RestartCount < 1 {
		t.Fatalf("OnFailure submitter: %s, restarts %d", got, p.Status.ContainerStatuses[0].RestartCount)
	}
}

// startSubmitterEnv starts what the submitter envtests share: a control plane, the fake
// kubelet, simulated dashboards and Submitters with opts, all stopped when the test ends.
// It skips the test when the control-plane binaries are not built.
func startSubmitterEnv(t *testing.T, opts SubmitterOptions) (*controlplane.Env, *Dashboards, *Submitters) {
	t.Helper()
	if _, err := controlplane.AssetsDir(); err != nil {
		t.Skipf("no control plane: %v", err)
	}
	env, err := controlplane.Start(controlplane.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	kubelet, err := StartKubelet(env.Config, KubeletOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(kubelet.Stop)
	dashboards := StartDashboardsWith(raysim.Options{Jobs: raysim.JobOptions{PendingDelay: 100 * time.Millisecond, RunDelay: 300 * time.Millisecond}})
	t.Cleanup(dashboards.Close)
	subs, err := dashboards.RunSubmitters(env.Config, opts)
	if err != nil {
		t.Fatal(err)
	}
	return env, dashboards, subs
}
