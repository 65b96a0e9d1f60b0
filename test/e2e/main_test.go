package e2e

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"
)

// commands are the main packages the tests run, built once per test binary: a separate
// build per test would link raygate-local (the largest) twice.
var commands = []string{"./cmd/raygate-local", "./cmd/raygate-demo", "./cmd/kubectl-raygate"}

// built holds the one build of commands, made by the first test that needs it.
var built struct {
	once sync.Once
	dir  string
	err  error
}

func TestMain(m *testing.M) {
	flag.Parse()
	code := m.Run()
	if built.dir != "" {
		_ = os.RemoveAll(built.dir)
	}
	os.Exit(code)
}

// binaries is the directory holding the built commands.
func binaries(t *testing.T) string {
	t.Helper()
	built.once.Do(func() {
		if built.dir, built.err = os.MkdirTemp("", "raygate-e2e-bin-"); built.err != nil {
			return
		}
		start := time.Now()
		cmd := exec.Command("go", append([]string{"build", "-o", built.dir + "/"}, commands...)...)
		cmd.Dir = repoRoot()
		if out, err := cmd.CombinedOutput(); err != nil {
			built.err = fmt.Errorf("go build %s: %w\n%s", strings.Join(commands, " "), err, out)
			return
		}
		t.Logf("built %s in %s", strings.Join(commands, " "), time.Since(start).Round(100*time.Millisecond))
	})
	if built.err != nil {
		t.Fatal(built.err)
	}
	return built.dir
}

// stopwatch logs how long each phase of a test took, so the log says where the time goes.
type stopwatch struct {
	t          *testing.T
	start, lap time.Time
}

func newStopwatch(t *testing.T) *stopwatch {
	now := time.Now()
	return &stopwatch{t: t, start: now, lap: now}
}

// done logs the phase that just ended.
func (s *stopwatch) done(phase string) {
	s.t.Helper()
	now := time.Now()
	s.t.Logf("phase %-28s %6.1fs (at %6.1fs)", phase, now.Sub(s.lap).Seconds(), now.Sub(s.start).Seconds())
	s.lap = now
}
