package e2e

import (
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The leftover check must see a grandchild started with the marker, and nothing once it
// is gone; otherwise "nothing left running" would pass vacuously.
func TestMarkedFindsDescendants(t *testing.T) {
	marker := "RAYGATE_E2E_SELFTEST=" + strconv.FormatInt(time.Now().UnixNano(), 36)
	cmd := exec.Command("sh", "-c", "sleep 30 & wait")
	cmd.Env = append(os.Environ(), marker)
	if err := cmd.Start(); err != nil {
		t.Skip(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()

	var found []string
	for range 50 {
		if found = marked(marker); len(found) == 2 {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if len(found) != 2 || !strings.Contains(strings.Join(found, "\n"), "sleep 30") {
		t.Fatalf("marked = %q, want the shell and its sleep", found)
	}
	killMarked(marker)
	<-done
	for range 50 {
		if found = marked(marker); len(found) == 0 {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Errorf("still marked after killMarked: %q", found)
}

// make run gets a longer control-plane start timeout, unless the caller chose one.
func TestWithStartTimeout(t *testing.T) {
	for _, tc := range []struct {
		name      string
		env, want []string
	}{
		{"unset", []string{"A=1"}, []string{"A=1", startTimeoutEnv + "=1m"}},
		{"set by the caller", []string{startTimeoutEnv + "=5m", "A=1"}, []string{startTimeoutEnv + "=5m", "A=1"}},
		{"a longer name is not it", []string{startTimeoutEnv + "_X=5m"}, []string{startTimeoutEnv + "_X=5m", startTimeoutEnv + "=1m"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := slices.Clone(tc.env)
			if got := withStartTimeout(env); !slices.Equal(got, tc.want) {
				t.Errorf("withStartTimeout(%q) = %q, want %q", tc.env, got, tc.want)
			}
			if !slices.Equal(env, tc.env) {
				t.Errorf("withStartTimeout changed its argument to %q", env)
			}
		})
	}
}
