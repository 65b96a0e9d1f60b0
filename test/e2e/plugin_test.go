package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/localmode"
)

// pluginService is the RayService make run applies (the sample), which kubectl raygate steers.
const pluginService = "rayservice-incremental"

// plugin runs the built kubectl-raygate with the kubeconfig make run wrote, as a user in
// another terminal would, and keeps a transcript of the commands worth showing.
type plugin struct {
	t             *testing.T
	bin, kubeconf string
	transcript    strings.Builder
}

// run is one invocation: what the user sees (stdout and stderr together) and its exit code.
func (p *plugin) run(ctx context.Context, show bool, args ...string) (string, int) {
	p.t.Helper()
	cmd := exec.CommandContext(ctx, p.bin, append([]string{"--kubeconfig", p.kubeconf}, args...)...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	code := 0
	if err := cmd.Run(); err != nil {
		var exit *exec.ExitError
		if !errors.As(err, &exit) {
			p.t.Fatalf("kubectl raygate %v: %v", args, err)
		}
		code = exit.ExitCode()
	}
	if show {
		fmt.Fprintf(&p.transcript, "$ kubectl raygate %s\n%s", strings.Join(args, " "), out.String())
	}
	return out.String(), code
}

// ok runs a command that must succeed.
func (p *plugin) ok(ctx context.Context, show bool, args ...string) string {
	p.t.Helper()
	out, code := p.run(ctx, show, args...)
	if code != 0 {
		p.t.Fatalf("kubectl raygate %s exited %d:\n%s", strings.Join(args, " "), code, out)
	}
	return out
}

// until runs a command every 300ms until done accepts its output; the last output and
// whether done accepted it.
func (p *plugin) until(ctx context.Context, timeout time.Duration, done func(string) bool, args ...string) (string, bool) {
	p.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		out := p.ok(ctx, false, args...)
		if done(out) {
			return out, true
		}
		if time.Now().After(deadline) {
			return out, false
		}
		time.Sleep(300 * time.Millisecond)
	}
}

// row is one cluster line of `kubectl raygate status`.
type row struct{ role, cluster, capacity, traffic, weight string }

// statusRows are the cluster lines under the ROLE header.
func statusRows(out string) []row {
	var rows []row
	_, table, ok := strings.Cut(out, "\nROLE ")
	if !ok {
		return nil
	}
	for _, line := range strings.Split(table, "\n")[1:] {
		if f := strings.Fields(line); len(f) >= 5 {
			rows = append(rows, row{f[0], f[1], f[2], f[3], f[4]})
		}
	}
	return rows
}

// hasLine: out has exactly this line.
func hasLine(out, line string) bool {
	return slices.Contains(strings.Split(out, "\n"), line)
}

// checkPlugin drives an upgrade of the running local mode with kubectl raygate alone:
// status, why and a refused pause with nothing to pause; then an upgrade paused (frozen),
// resumed and promoted to completion.
func checkPlugin(t *testing.T, bin, kubectlBin, kubeconfig string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	p := &plugin{t: t, bin: bin, kubeconf: kubeconfig}
	start := time.Now()
	defer func() {
		t.Logf("kubectl raygate checks took %s; transcript:\n%s", time.Since(start).Round(time.Second), p.transcript.String())
	}()

	// No upgrade: one cluster with all the traffic, nothing waits, nothing to pause.
	out := p.ok(ctx, true, "status", pluginService)
	rows := statusRows(out)
	if len(rows) != 1 || rows[0].role != "active" || rows[0].capacity != "100%" || rows[0].traffic != "100%" || rows[0].weight != "100%" {
		t.Fatalf("status with no upgrade: want one active cluster at 100%% capacity, traffic and route weight:\n%s", out)
	}
	active := rows[0].cluster
	for _, want := range []string{
		"RayService default/" + pluginService + " (strategy NewClusterWithIncrementalUpgrade, generation",
		"Ready:     True (",
		"Upgrade:   False (NoPendingCluster)",
		"Next step: -",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("status with no upgrade lacks %q:\n%s", want, out)
		}
	}
	if out := p.ok(ctx, true, "why", pluginService); !strings.HasPrefix(out, "No upgrade is running: RayCluster "+active+" serves.\n") {
		t.Errorf("why with no upgrade:\n%s", out)
	}
	out, code := p.run(ctx, true, "pause", pluginService)
	if code == 0 || out != `error: admission webhook "vrayservice.ray.io" denied the request: RayService.ray.io "`+pluginService+`" is invalid: `+
		`metadata.annotations[raygate.ray.io/upgrade-action]: Invalid value: "pause": no upgrade is running: the RayService has no pending RayCluster to pause`+"\n" {
		t.Fatalf("pause with no upgrade: exit %d, want it refused with \"no upgrade is running\":\n%s", code, out)
	}

	// An upgrade as the demo starts it: one traffic step every 3 s, the old cluster deleted
	// 2 s after the promotion.
	stdout, stderr, err := kubectl(ctx, kubectlBin, kubeconfig, "get", "rayservice", pluginService, "-o", "json")
	if err != nil {
		t.Fatalf("kubectl get rayservice: %v\n%s", err, stderr)
	}
	svc := &rayv1.RayService{}
	if err := json.Unmarshal([]byte(stdout), svc); err != nil {
		t.Fatal(err)
	}
	ops := append(localmode.ImagePatchOps(svc, localmode.NextImage(localmode.RayImage(svc))),
		localmode.PatchOp{Op: "add", Path: "/spec/upgradeStrategy/clusterUpgradeOptions/intervalSeconds", Value: 3},
		localmode.PatchOp{Op: "add", Path: "/spec/rayClusterDeletionDelaySeconds", Value: 2})
	patch := localmode.MarshalPatch(ops)
	stdout, stderr, err = kubectl(ctx, kubectlBin, kubeconfig, "patch", "rayservice", pluginService, "--type=json", "-p", patch)
	if err != nil {
		t.Fatalf("kubectl patch: %v\n%s%s", err, stdout, stderr)
	}
	fmt.Fprintf(&p.transcript, "$ kubectl patch rayservice %s --type=json -p '%s'\n%s", pluginService, patch, stdout)

	// Pause once some traffic moved, so a frozen split differs from the start.
	out, ok := p.until(ctx, 2*time.Minute, func(out string) bool {
		r := statusRows(out)
		return len(r) == 2 && r[1].traffic != "-" && r[1].traffic != "0%"
	}, "status", pluginService)
	if !ok {
		t.Fatalf("the upgrade moved no traffic to a pending cluster:\n%s", out)
	}
	pending := statusRows(out)[1].cluster
	if out := p.ok(ctx, true, "pause", pluginService); out != "rayservice.ray.io/"+pluginService+": pause requested for pending RayCluster "+pending+"\n" {
		t.Fatalf("pause:\n%s", out)
	}
	out, ok = p.until(ctx, time.Minute, func(out string) bool { return strings.Contains(out, "UpgradeAction: True (UpgradePaused)") }, "why", pluginService)
	if !ok {
		t.Fatalf("the pause was not taken up:\n%s", out)
	}
	out = p.ok(ctx, true, "why", pluginService)
	for _, want := range []string{
		"Upgrading from " + active + " to " + pending + ".",
		"Next traffic step: none while paused",
		"UpgradeAction: True (UpgradePaused): the upgrade to RayCluster " + pending + " is paused (raygate.ray.io/upgrade-action=pause): capacity and traffic stay where they are until resume, abort or promote",
	} {
		if !hasLine(out, want) {
			t.Errorf("why while paused lacks the line %q:\n%s", want, out)
		}
	}
	frozen := p.ok(ctx, true, "status", pluginService)
	for _, want := range []string{"Action:    pause " + pending + " (UpgradePaused)", "Next step: none while paused"} {
		if !hasLine(frozen, want) {
			t.Errorf("status while paused lacks the line %q:\n%s", want, frozen)
		}
	}
	if r := statusRows(frozen); len(r) != 2 || r[1].traffic == "100%" {
		t.Fatalf("status while paused: want the active and the pending cluster, the pending short of all traffic:\n%s", frozen)
	}
	// More than two intervals: an unpaused upgrade would have moved the traffic by now.
	for range 2 {
		time.Sleep(4 * time.Second)
		later := p.ok(ctx, false, "status", pluginService)
		if !slices.Equal(statusRows(later), statusRows(frozen)) {
			t.Fatalf("capacity or traffic moved while paused:\n%s\nthen:\n%s", frozen, later)
		}
	}

	if out := p.ok(ctx, true, "resume", pluginService); out != "rayservice.ray.io/"+pluginService+": resume requested\n" {
		t.Errorf("resume:\n%s", out)
	}
	if out := p.ok(ctx, true, "promote", pluginService); out != "rayservice.ray.io/"+pluginService+": promote requested for pending RayCluster "+pending+"\n" {
		t.Fatalf("promote:\n%s", out)
	}
	out, ok = p.until(ctx, 2*time.Minute, func(out string) bool {
		r := statusRows(out)
		return len(r) == 1 && r[0] == row{"active", pending, "100%", "100%", "100%"} &&
			strings.Contains(out, "Upgrade:   False (NoPendingCluster)") && strings.Contains(out, "Ready:     True (")
	}, "status", pluginService)
	if !ok {
		t.Fatalf("the promoted upgrade did not complete:\n%s", out)
	}
	p.ok(ctx, true, "status", pluginService)
	// The old cluster goes after the deletion delay the patch set (2 s).
	deadline := time.Now().Add(time.Minute)
	for {
		stdout, stderr, err := kubectl(ctx, kubectlBin, kubeconfig, "get", "rayclusters", "-l", "ray.io/originated-from-cr-name="+pluginService, "-o", "name")
		if err == nil && stdout == "raycluster.ray.io/"+pending+"\n" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the promote, RayClusters (%v):\n%s%s", err, stdout, stderr)
		}
		time.Sleep(500 * time.Millisecond)
	}
}
