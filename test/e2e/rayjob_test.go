package e2e

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

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

	const fields = `{.status.jobStatus}/{.status.jobDeploymentStatus}/{.status.reason}/{.status.rayClusterName}`
	var last string
	for {
		stdout, _, err := kubectl(ctx, kubectlBin, kubeconfig, "get", "rayjob", rayJobSample, "-o", "jsonpath="+fields)
		if err == nil {
			last = stdout
		}
		if strings.Contains(last, "/Complete/") || strings.Contains(last, "/Failed/") {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the RayJob sample did not finish (jobStatus/jobDeploymentStatus/reason/cluster: %q)", last)
		case <-time.After(500 * time.Millisecond):
		}
	}
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
