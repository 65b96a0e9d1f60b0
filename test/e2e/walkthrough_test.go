package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// runWalkthrough runs the raygate steps of docs/walkthrough/kind.sh (a RayService upgraded
// incrementally, then its upgrade) against make run's cluster, with the local mode's
// GatewayClass: what the walkthrough tells a reader to expect on a real cluster must happen
// here: the RayService Ready, the traffic moved in steps, the new cluster promoted and the
// old one deleted.
func runWalkthrough(ctx context.Context, t *testing.T, kubectlBin, kubeconfig string) {
	t.Helper()
	start := time.Now()
	cmd := exec.CommandContext(ctx, "bash", filepath.Join(repoRoot(), "docs", "walkthrough", "kind.sh"), "rayservice", "upgrade")
	cmd.Dir = repoRoot()
	cmd.Env = append(os.Environ(), "KUBECTL="+kubectlBin, "KUBECONFIG="+kubeconfig, "GATEWAY_CLASS=raygate-local", "WAIT_SECONDS=120")
	out, err := cmd.CombinedOutput()
	t.Logf("docs/walkthrough/kind.sh rayservice upgrade (%s):\n%s", time.Since(start).Round(time.Second), out)
	if err != nil {
		t.Fatalf("the walkthrough's raygate steps failed: %v", err)
	}
	checkWalkthrough(t, string(out))
}

// checkWalkthrough asserts what the walkthrough's rayservice and upgrade steps print.
func checkWalkthrough(t *testing.T, out string) {
	t.Helper()
	m := regexp.MustCompile(`RayService walkthrough Ready: active cluster (walkthrough-\w+)`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("the walkthrough does not report the RayService Ready:\n%s", out)
	}
	old := m[1]
	m = regexp.MustCompile(`promoted: RayCluster (walkthrough-\w+) serves all traffic`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("the walkthrough does not report the promotion:\n%s", out)
	}
	promoted := m[1]
	if promoted == old {
		t.Errorf("the promoted cluster %s is the one before the upgrade", promoted)
	}
	if !strings.Contains(out, "RayCluster "+old+" deleted") {
		t.Errorf("the walkthrough does not report %s deleted:\n%s", old, out)
	}
	// The sampled weights (every 2 s) always sum to 100.
	for _, line := range regexp.MustCompile(`(?m)^HTTPRoute weights: (.*)$`).FindAllStringSubmatch(out, -1) {
		sum := 0
		for _, kv := range strings.Fields(line[1]) {
			_, w, ok := strings.Cut(kv, "=")
			n, err := strconv.Atoi(w)
			if !ok || err != nil {
				t.Fatalf("HTTPRoute weights %q: %q", line[1], kv)
			}
			sum += n
		}
		if sum != 100 && line[1] != "" {
			t.Errorf("HTTPRoute weights %q do not sum to 100", line[1])
		}
	}
	// Incremental: the traffic steps raygate recorded (ShiftedTraffic events, every step, where
	// the samples above can miss a 5 s step on a loaded machine) include one where both clusters
	// took traffic, and the last gives the new cluster all of it.
	steps := regexp.MustCompile(`(?m)^ShiftedTraffic\s+traffic: active (\S+) (\d+)%, pending (\S+) (\d+)%`).FindAllStringSubmatch(out, -1)
	if len(steps) == 0 {
		t.Fatalf("the walkthrough shows no ShiftedTraffic events:\n%s", out)
	}
	split := false
	for _, st := range steps {
		active, pending := atoi(t, st[2]), atoi(t, st[4])
		if st[1] != old || st[3] != promoted {
			t.Errorf("traffic step %q: want active %s and pending %s", st[0], old, promoted)
		}
		if active+pending != 100 {
			t.Errorf("traffic step %q does not sum to 100", st[0])
		}
		split = split || (pending > 0 && pending < 100)
	}
	if !split {
		t.Errorf("no traffic step split the traffic between %s and %s:\n%s", old, promoted, out)
	}
	if last := steps[len(steps)-1]; last[4] != "100" {
		t.Errorf("the last traffic step %q does not give %s all the traffic", last[0], promoted)
	}
}

func atoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatalf("%q: %v", s, err)
	}
	return n
}
