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
	// Incremental: at some point both clusters took traffic, the new one less than all.
	split := false
	for _, line := range regexp.MustCompile(`(?m)^HTTPRoute weights: (.*)$`).FindAllStringSubmatch(out, -1) {
		weights := map[string]int{}
		for _, kv := range strings.Fields(line[1]) {
			name, w, ok := strings.Cut(kv, "=")
			n, err := strconv.Atoi(w)
			if !ok || err != nil {
				t.Fatalf("HTTPRoute weights %q: %q", line[1], kv)
			}
			weights[name] = n
		}
		var oldW, newW int
		for name, w := range weights {
			switch {
			case strings.HasPrefix(name, old):
				oldW = w
			case strings.HasPrefix(name, promoted):
				newW = w
			}
		}
		if oldW+newW != 100 && len(weights) > 0 {
			t.Errorf("HTTPRoute weights %q do not sum to 100", line[1])
		}
		split = split || (newW > 0 && newW < 100)
	}
	if !split {
		t.Errorf("the walkthrough never showed traffic split between %s and %s:\n%s", old, promoted, out)
	}
}
