// Package e2e runs raygate's local mode as a newcomer does: `make run` (cmd/raygate-local) until
// the sample RayService is Ready, the samples through the real admission webhooks, `make
// demo` (cmd/raygate-demo) attached to it through an incremental upgrade with every invariant
// checked, and Ctrl-C, after which nothing it started may still run; and, beside it in a
// second environment (TestLocalModeRayJobs), kubectl raygate steering an upgrade while the
// RayJob sample and a SidecarMode RayJob run to SUCCEEDED and the walkthrough's steps run.
package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestLocalModeAndDemo(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a whole local cluster")
	}
	// Its own state directory, marker, pod IP blocks (claimed per raygate-local process),
	// Traefik address and Prometheus port: it runs beside TestLocalModeRayJobs.
	t.Parallel()
	watch := newStopwatch(t)
	bin := binaries(t, localCmd)
	prebuild(demoCmd) // while make run starts
	watch.done("build raygate-local")
	state := t.TempDir()
	// Every process started below inherits this variable, so leftovers can be found by it
	// whoever their parent is by then.
	marker := "RAYGATE_E2E_RUN=" + strconv.Itoa(os.Getpid()) + "-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	t.Cleanup(func() { killMarked(marker) })
	env := append(os.Environ(), marker)

	// make run
	local := startLocal(t, bin, state, env)
	out, localErr, dump := local.out, local.stderr, func() { local.dump(t) }
	kubeconfig, kubectlBin := local.kubeconfig, local.kubectl
	watch.done("make run: sample Ready")
	prom := prometheusOf(t, out.String(), state)

	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	// Both only read the environment (the samples are applied with --dry-run=server or
	// rejected), so they run side by side.
	if !concurrently(t,
		step{"Prometheus up", func(t *testing.T) { checkPrometheusUp(t, prom) }},
		step{"samples", func(t *testing.T) { checkSamples(ctx, t, kubectlBin, kubeconfig) }},
	) {
		dump()
		t.FailNow()
	}
	watch.done("Prometheus up and samples")
	binaries(t, demoCmd)
	watch.done("build raygate-demo (rest)")

	// make demo ARGS="--gate", in another terminal: attaches to make run; its upgrade waits
	// for an UpgradePolicy gate evaluated by make run's Prometheus.
	demo := exec.CommandContext(ctx, filepath.Join(bin, demoCmd), "--dir", state, "--interval", "1", "--deletion-delay", "2", "--timeout", "3m", "--gate")
	demo.Dir, demo.Env = repoRoot(), env
	demoOut, err := demo.CombinedOutput()
	if err != nil {
		dump()
		t.Fatalf("make demo failed (%v):\n%s", err, demoOut)
	}
	checkDemo(t, string(demoOut))
	checkGatedDemo(t, string(demoOut))
	checkServeSeries(t, prom)
	watch.done("make demo --gate")

	// make demo ARGS="--pause-at 40": a second upgrade, paused at 40%, resumed, promoted.
	pctx, pcancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer pcancel()
	paused := exec.CommandContext(pctx, filepath.Join(bin, demoCmd), "--dir", state, "--interval", "1", "--deletion-delay", "2", "--timeout", "3m", "--pause-at", "40")
	paused.Dir, paused.Env = repoRoot(), env
	pausedOut, err := paused.CombinedOutput()
	if err != nil {
		dump()
		t.Fatalf("make demo --pause-at 40 failed (%v):\n%s", err, pausedOut)
	}
	checkPausedDemo(t, string(pausedOut))
	watch.done("make demo --pause-at 40")

	// kubectl raygate steering an upgrade and the next steps' batch jobs run in
	// TestLocalModeRayJobs, beside this test.
	if strings.Contains(localErr.String(), "INVARIANT VIOLATED") {
		dump()
		t.Errorf("make run reported violations:\n%s", localErr.String())
	}

	// Ctrl-C stops everything.
	local.interrupt(t)
	if !strings.Contains(out.String(), "stopped.") {
		t.Errorf("make run did not say it stopped:\n%s", out)
	}
	var left []string
	for range 25 { // processes may take a moment to be reaped
		if left = marked(marker); len(left) == 0 {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if len(left) > 0 {
		t.Errorf("still running after Ctrl-C:\n%s", strings.Join(left, "\n"))
	}
	if _, err := os.Stat(kubeconfig); !os.IsNotExist(err) {
		t.Errorf("the kubeconfig of a stopped environment is still there (%v)", err)
	}
	if _, err := os.Stat(filepath.Join(state, "prometheus-url")); !os.IsNotExist(err) {
		t.Errorf("the Prometheus URL of a stopped environment is still there (%v)", err)
	}
	watch.done("Ctrl-C")
}

// checkNextSteps asserts what make run prints once the sample is Ready, and returns the
// kubeconfig and kubectl it tells the user to use.
func checkNextSteps(t *testing.T, out, state string) (kubeconfig, kubectl string) {
	t.Helper()
	kubeconfig = filepath.Join(state, "kubeconfig")
	for _, want := range []string{
		"$ kubectl apply -f " + filepath.Join(repoRoot(), "config", "samples", "ray_v1_rayservice_incremental.yaml"),
		"rayservice.ray.io/rayservice-incremental created",
		"RayService Ready: rayservice-incremental serves from RayCluster rayservice-incremental-",
		"export KUBECONFIG=" + kubeconfig,
		"kubectl get rayservice rayservice-incremental -o wide -w",
		`kubectl patch rayservice rayservice-incremental --type=json -p '[{"op":"replace","path":"/spec/rayClusterConfig/headGroupSpec/template/spec/containers/0/image","value":"rayproject/ray:2.52.1"}`,
		"kubectl get httproute rayservice-incremental-httproute -o jsonpath=",
		"kubectl apply -f " + filepath.Join(repoRoot(), "config", "samples", "rayservice_invalid.yaml"),
		"make demo",
		`make demo ARGS="--gate"`,
		"/api/v1/query --data-urlencode 'query=count by (namespace) (ray_serve_num_http_requests_total)'",
		// Pod Security at admission: the RayCluster sample refused in a restricted namespace.
		"Pod Security at admission: namespace restricted-demo enforces the restricted standard",
		"  $ kubectl label --overwrite namespace restricted-demo pod-security.kubernetes.io/enforce=restricted\n  namespace/restricted-demo labeled\n",
		"  $ kubectl apply -n restricted-demo -f " + filepath.Join(repoRoot(), "config", "samples", "ray_v1_raycluster.yaml") + "\n" +
			"  The RayCluster \"raycluster-sample\" is invalid: \n",
		`  * spec.headGroupSpec.template.spec.containers[0].securityContext.allowPrivilegeEscalation: Forbidden: violates PodSecurity "restricted:latest": allowPrivilegeEscalation != false (container "ray-head" must set securityContext.allowPrivilegeEscalation=false)`,
		`  * spec.workerGroupSpecs[0].template.spec.containers[0].securityContext.seccompProfile: Forbidden: violates PodSecurity "restricted:latest": seccompProfile (pod or containers "wait-gcs-ready", "ray-worker" must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost")`,
		"kubectl apply -n restricted-demo -f " + filepath.Join(repoRoot(), "config", "samples", "ray_v1_raycluster.yaml"),
		// A RayJob run to SUCCEEDED.
		"kubectl apply -f " + filepath.Join(repoRoot(), "config", "samples", "ray_v1_rayjob.yaml"),
		"kubectl get rayjobs -w",
		"kubectl raygate status rayjob rayjob-sample",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("make run output lacks %q", want)
		}
	}
	m := regexp.MustCompile(`alias kubectl=(\S+)`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("make run does not print the kubectl to use:\n%s", out)
	}
	if _, err := os.Stat(kubeconfig); err != nil {
		t.Fatalf("the printed kubeconfig: %v", err)
	}
	return kubeconfig, m[1]
}

// checkSamples: every valid sample passes the webhooks, the invalid one is rejected with
// every mistake it was written with, and nothing of it is stored.
func checkSamples(ctx context.Context, t *testing.T, kubectlBin, kubeconfig string) {
	t.Helper()
	samples := filepath.Join(repoRoot(), "config", "samples")
	for _, f := range []string{"ray_v1_raycluster.yaml", "ray_v1_rayservice.yaml", "ray_v1_rayservice_none.yaml", "ray_v1_rayservice_incremental.yaml", "ray_v1_rayjob.yaml"} {
		stdout, stderr, err := kubectl(ctx, kubectlBin, kubeconfig, "apply", "--dry-run=server", "--validate=strict", "-f", filepath.Join(samples, f))
		if err != nil || !strings.Contains(stdout, "(server dry run)") {
			t.Errorf("sample %s is not accepted (%v):\n%s%s", f, err, stdout, stderr)
		}
		if strings.Contains(stderr, "Warning:") {
			t.Errorf("sample %s draws warnings:\n%s", f, stderr)
		}
	}
	stdout, stderr, err := kubectl(ctx, kubectlBin, kubeconfig, "apply", "--dry-run=server", "-k", samples)
	if err != nil || strings.Count(stdout, "(server dry run)") != 4 {
		t.Errorf("kubectl apply -k config/samples (%v):\n%s%s", err, stdout, stderr)
	}

	_, stderr, err = kubectl(ctx, kubectlBin, kubeconfig, "apply", "-f", filepath.Join(samples, "rayservice_invalid.yaml"))
	if err == nil {
		t.Fatal("the invalid sample was accepted")
	}
	wantErrors := []string{
		`spec.upgradeStrategy.clusterUpgradeOptions.stepSizePercent: Invalid value: 0`,
		`spec.rayClusterConfig.enableInTreeAutoscaling: Required value`,
		`spec.serveConfigV2.applications[1].route_prefix: Duplicate value: "/fruit"`,
		`spec.serveConfigV2.applications[1].import_path: Required value`,
		`spec.rayClusterConfig.workerGroupSpecs[0].maxReplicas: Invalid value: 1`,
	}
	if !strings.HasPrefix(stderr, `The RayService "rayservice-invalid" is invalid:`) {
		t.Errorf("the rejection does not start as kubectl prints an invalid object:\n%s", stderr)
	}
	var listed []string
	for _, line := range strings.Split(stderr, "\n") {
		if rest, ok := strings.CutPrefix(line, "* "); ok {
			listed = append(listed, rest)
		}
	}
	for _, want := range wantErrors {
		if !slices.ContainsFunc(listed, func(l string) bool { return strings.HasPrefix(l, want) }) {
			t.Errorf("the rejection does not list %q:\n%s", want, stderr)
		}
	}
	if len(listed) != len(wantErrors) {
		t.Errorf("the rejection lists %d problems, the sample has %d:\n%s", len(listed), len(wantErrors), stderr)
	}
	if _, stderr, err := kubectl(ctx, kubectlBin, kubeconfig, "get", "rayservice", "rayservice-invalid"); err == nil || !strings.Contains(stderr, "NotFound") {
		t.Errorf("the rejected RayService exists (%v): %s", err, stderr)
	}
	// The sample refused in restricted-demo for its Pod Security was not stored; in default,
	// which enforces nothing, it is accepted.
	if stdout, stderr, err := kubectl(ctx, kubectlBin, kubeconfig, "get", "rayclusters", "-n", "restricted-demo", "-o", "name"); err != nil || stdout != "" {
		t.Errorf("RayClusters in restricted-demo (%v): %q %s", err, stdout, stderr)
	}
	if _, stderr, err := kubectl(ctx, kubectlBin, kubeconfig, "apply", "--dry-run=server", "-n", "restricted-demo", "-f", filepath.Join(samples, "ray_v1_raycluster.yaml")); err == nil ||
		!strings.Contains(stderr, `violates PodSecurity "restricted:latest"`) {
		t.Errorf("the RayCluster sample is not refused in restricted-demo (%v): %s", err, stderr)
	}
}

// checkDemo: the demo attached, showed the rejection, moved traffic in increasing steps to
// 100%, deleted the old cluster and found every invariant held.
func checkDemo(t *testing.T, out string) {
	t.Helper()
	for _, want := range []string{
		"attached to the environment of make run",
		`The RayService "rayservice-invalid" is invalid:`,
		"HTTPROUTE WEIGHTS",
		"every invariant held",
		"raygate demo passed",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("make demo output lacks %q:\n%s", want, out)
		}
	}
	checkLoad(t, out)
	m := regexp.MustCompile(`promoted: it serves all traffic \(traffic moved in (\d+) steps: ([^)]*)\)`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("make demo does not report the promotion:\n%s", out)
	}
	var steps []int
	for _, s := range strings.Split(m[2], " → ") {
		p, err := strconv.Atoi(strings.TrimSuffix(s, "%"))
		if err != nil {
			t.Fatalf("traffic steps %q: %v", m[2], err)
		}
		steps = append(steps, p)
	}
	// The sample moves 20% per step: 20, 40, 60, 80, 100.
	if !slices.Equal(steps, []int{20, 40, 60, 80, 100}) {
		t.Errorf("traffic steps %v, want 20 40 60 80 100 (stepSizePercent 20)", steps)
	}
	if !regexp.MustCompile(`RayCluster rayservice-incremental-\w+ deleted`).MatchString(out) {
		t.Errorf("make demo does not report the old cluster deleted:\n%s", out)
	}
}

// checkLoad asserts the demo sent load through the Gateway, printed it per row, and that
// every request was answered.
func checkLoad(t *testing.T, out string) {
	t.Helper()
	for _, want := range []string{"OK/FAILED", "MEASURED SPLIT", "through the Gateway, GET http://127."} {
		if !strings.Contains(out, want) {
			t.Errorf("make demo output lacks %q:\n%s", want, out)
		}
	}
	m := regexp.MustCompile(`load: (\d+) requests, (\d+) answered, (\d+) failed`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("make demo does not report its load:\n%s", out)
	}
	if sent, _ := strconv.Atoi(m[1]); sent < 100 || m[3] != "0" {
		t.Errorf("load: %s requests, %s failed; want at least 100 and none failed", m[1], m[3])
	}
}

// checkPausedDemo asserts the --pause-at script: paused at 40% or more, frozen, resumed,
// promoted once the pacing moved again, and the upgrade completed without a failed request.
func checkPausedDemo(t *testing.T, out string) {
	t.Helper()
	checkLoad(t, out)
	for _, want := range []string{
		"raygate.ray.io/upgrade-action=pause",
		"paused (UpgradeAction=UpgradePaused)",
		"while paused: resume",
		"raygate.ray.io/upgrade-action=resume",
		"promote, skipping the remaining steps",
		"raygate.ray.io/upgrade-action=promote",
		"every invariant held",
		"raygate demo passed",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("make demo --pause-at 40 output lacks %q:\n%s", want, out)
		}
	}
	pause := strings.Index(out, "upgrade-action=pause")
	resume := strings.Index(out, "upgrade-action=resume")
	promote := strings.Index(out, "upgrade-action=promote")
	if pause >= resume || resume >= promote {
		t.Errorf("pause, resume and promote out of order:\n%s", out)
	}
	// How many steps the pacing took before the promote landed depends on timing; that
	// the promote ended the upgrade is what counts.
	if !strings.Contains(out, "promoted: it serves all traffic") {
		t.Errorf("make demo --pause-at 40 does not report the promotion:\n%s", out)
	}
}
