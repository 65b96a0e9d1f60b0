package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestLocalModeRayJobs runs `make run` and then, side by side on its cluster as users in
// several terminals would: the RayJob sample (K8sJobMode) to SUCCEEDED as the next steps
// say; a SidecarMode RayJob (docs/rayjob.md's example) to SUCCEEDED, the local mode carrying
// out the head pod's submitter container too; the raygate steps of the real-cluster
// walkthrough (docs/walkthrough/kind.sh); and kubectl raygate watching and steering an
// upgrade of the sample RayService. Every invariant must hold throughout. Run it alone with
// `go test ./test/e2e -run TestLocalModeRayJobs`.
func TestLocalModeRayJobs(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a whole local cluster")
	}
	t.Parallel() // beside TestLocalModeAndDemo, in an environment of its own
	watch := newStopwatch(t)
	bin := binaries(t, localCmd)
	prebuild(pluginCmd) // while make run starts
	watch.done("build raygate-local")
	state := t.TempDir()
	marker := "RAYGATE_E2E_RUN=" + strconv.Itoa(os.Getpid()) + "-" + strconv.FormatInt(time.Now().UnixNano(), 36) + "-jobs"
	t.Cleanup(func() { killMarked(marker) })
	local := startLocal(t, bin, state, append(os.Environ(), marker))
	watch.done("make run: sample Ready")
	plugin := filepath.Join(binaries(t, pluginCmd), pluginCmd)
	watch.done("build kubectl-raygate (rest)")

	// Each step has objects of its own: the RayJobs, the RayService walkthrough, the sample
	// RayService rayservice-incremental.
	concurrently(t,
		step{"RayJob sample", func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
			defer cancel()
			checkRayJobSample(ctx, t, plugin, local.kubectl, local.kubeconfig)
		}},
		step{"SidecarMode RayJob", func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
			defer cancel()
			checkSidecarJob(ctx, t, local.kubectl, local.kubeconfig)
		}},
		step{"walkthrough", func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			runWalkthrough(ctx, t, local.kubectl, local.kubeconfig)
		}},
		step{"kubectl raygate", func(t *testing.T) { checkPlugin(t, plugin, local.kubectl, local.kubeconfig) }},
	)
	watch.done("RayJobs, walkthrough, kubectl raygate")
	if strings.Contains(local.stderr.String(), "INVARIANT VIOLATED") {
		t.Errorf("make run reported violations:\n%s", local.stderr.String())
	}
	if t.Failed() {
		local.dump(t)
	}

	local.interrupt(t)
	watch.done("Ctrl-C")
}

// sidecarJob is docs/rayjob.md's SidecarMode example.
const sidecarJob = `apiVersion: ray.io/v1
kind: RayJob
metadata:
  name: rayjob-sidecar
spec:
  submissionMode: SidecarMode
  entrypoint: python -c "import ray; ray.init(); print(ray.cluster_resources())"
  runtimeEnvYAML: |
    env_vars:
      counter_name: "test_counter"
  shutdownAfterJobFinishes: true
  ttlSecondsAfterFinished: 60
  rayClusterSpec:
    rayVersion: "2.52.0"
    headGroupSpec:
      rayStartParams: {}
      template:
        spec:
          containers:
          - name: ray-head
            image: rayproject/ray:2.52.0
            resources:
              requests: {cpu: "1", memory: 2Gi}
              limits: {cpu: "1", memory: 2Gi}
    workerGroupSpecs:
    - groupName: small-group
      replicas: 1
      minReplicas: 1
      maxReplicas: 2
      rayStartParams: {}
      template:
        spec:
          containers:
          - name: ray-worker
            image: rayproject/ray:2.52.0
            resources:
              requests: {cpu: "1", memory: 1Gi}
              limits: {cpu: "1", memory: 1Gi}
`

// checkSidecarJob applies the SidecarMode example and waits until it is SUCCEEDED and
// Complete: the head pod's submitter container submitted the job once and exited 0, and the
// head runs on.
func checkSidecarJob(ctx context.Context, t *testing.T, kubectlBin, kubeconfig string) {
	t.Helper()
	manifest := filepath.Join(t.TempDir(), "rayjob-sidecar.yaml")
	if err := os.WriteFile(manifest, []byte(sidecarJob), 0o600); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, err := kubectl(ctx, kubectlBin, kubeconfig, "apply", "-f", manifest)
	if err != nil || !strings.Contains(stdout, "rayjob.ray.io/rayjob-sidecar created") {
		t.Fatalf("kubectl apply the SidecarMode RayJob (%v):\n%s%s", err, stdout, stderr)
	}
	last := waitForJobEnd(ctx, t, kubectlBin, kubeconfig, "rayjob-sidecar")
	parts := strings.Split(last, "/")
	if parts[0] != "SUCCEEDED" || parts[1] != "Complete" {
		t.Fatalf("the SidecarMode RayJob ended %q (jobStatus/jobDeploymentStatus/reason/cluster), want SUCCEEDED/Complete", last)
	}
	// The head pod: its submitter container exited 0, its Ray container runs on.
	const containers = `{range .items[0].status.containerStatuses[*]}{.name}={.state.terminated.exitCode}{.state.running.startedAt}{"\n"}{end}`
	stdout, _, err = kubectl(ctx, kubectlBin, kubeconfig, "get", "pods", "-l", "ray.io/node-type=head,ray.io/cluster="+parts[3], "-o", "jsonpath="+containers)
	if err != nil || !strings.Contains(stdout, "ray-job-submitter=0\n") || !strings.Contains(stdout, "ray-head=2") {
		t.Errorf("the SidecarMode head pod's containers (name=exit code or start) (%v):\n%s", err, stdout)
	}
}

// waitForJobEnd polls a RayJob until its deployment status is Complete or Failed and
// returns jobStatus/jobDeploymentStatus/reason/rayClusterName.
func waitForJobEnd(ctx context.Context, t *testing.T, kubectlBin, kubeconfig, name string) string {
	t.Helper()
	const fields = `{.status.jobStatus}/{.status.jobDeploymentStatus}/{.status.reason}/{.status.rayClusterName}`
	var last string
	for {
		stdout, _, err := kubectl(ctx, kubectlBin, kubeconfig, "get", "rayjob", name, "-o", "jsonpath="+fields)
		if err == nil {
			last = stdout
		}
		if strings.Contains(last, "/Complete/") || strings.Contains(last, "/Failed/") {
			return last
		}
		select {
		case <-ctx.Done():
			t.Fatalf("RayJob %s did not finish (jobStatus/jobDeploymentStatus/reason/cluster: %q)", name, last)
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// rayJobSample is the RayJob of config/samples/ray_v1_rayjob.yaml.
const rayJobSample = "rayjob-sample"

// checkRayJobSample follows make run's next steps for the batch job: it applies the RayJob
// sample and waits until `kubectl get rayjobs` shows it SUCCEEDED and Complete (its
// submitter pod runs `ray job submit` against the simulated Jobs API); kubectl raygate
// status and why describe it; its RayCluster is deleted ttlSecondsAfterFinished later.
func checkRayJobSample(ctx context.Context, t *testing.T, pluginBin, kubectlBin, kubeconfig string) {
	t.Helper()
	sample := filepath.Join(repoRoot(), "config", "samples", "ray_v1_rayjob.yaml")
	stdout, stderr, err := kubectl(ctx, kubectlBin, kubeconfig, "apply", "-f", sample)
	if err != nil || !strings.Contains(stdout, "rayjob.ray.io/"+rayJobSample+" created") {
		t.Fatalf("kubectl apply -f %s (%v):\n%s%s", sample, err, stdout, stderr)
	}
	if strings.Contains(stderr, "Warning:") {
		t.Errorf("the RayJob sample draws warnings:\n%s", stderr)
	}

	last := waitForJobEnd(ctx, t, kubectlBin, kubeconfig, rayJobSample)
	parts := strings.Split(last, "/")
	if parts[0] != "SUCCEEDED" || parts[1] != "Complete" {
		t.Fatalf("the RayJob sample ended %q (jobStatus/jobDeploymentStatus/reason/cluster), want SUCCEEDED/Complete", last)
	}
	cluster := parts[3]

	// What the user watches: KubeRay's printer columns.
	stdout, _, err = kubectl(ctx, kubectlBin, kubeconfig, "get", "rayjobs")
	if err != nil || !strings.Contains(stdout, "JOB STATUS") || !containsFields(stdout, rayJobSample, "SUCCEEDED", "Complete", cluster) {
		t.Errorf("kubectl get rayjobs (%v):\n%s", err, stdout)
	}
	p := &plugin{t: t, bin: pluginBin, kubeconf: kubeconfig}
	status := p.ok(ctx, true, "status", "rayjob", rayJobSample)
	for _, want := range []string{"RayJob default/" + rayJobSample, "SUCCEEDED", "Complete", "K8sJobMode"} {
		if !strings.Contains(status, want) {
			t.Errorf("kubectl raygate status rayjob lacks %q:\n%s", want, status)
		}
	}
	why := p.ok(ctx, true, "why", "rayjob/"+rayJobSample)
	if !strings.Contains(why, "succeeded") {
		t.Errorf("kubectl raygate why rayjob/%s does not say the job succeeded:\n%s", rayJobSample, why)
	}
	t.Logf("kubectl raygate on the RayJob sample:\n%s", p.transcript.String())

	// shutdownAfterJobFinishes with ttlSecondsAfterFinished: 30.
	for {
		_, stderr, err := kubectl(ctx, kubectlBin, kubeconfig, "get", "raycluster", cluster)
		if err != nil && strings.Contains(stderr, "NotFound") {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("RayCluster %s of the finished RayJob sample was not deleted after ttlSecondsAfterFinished", cluster)
		case <-time.After(time.Second):
		}
	}
}

// containsFields: some line of out has all of fields as whitespace-separated words.
func containsFields(out string, fields ...string) bool {
	for _, line := range strings.Split(out, "\n") {
		words := strings.Fields(line)
		all := true
		for _, f := range fields {
			found := false
			for _, w := range words {
				found = found || w == f
			}
			all = all && found
		}
		if all {
			return true
		}
	}
	return false
}
