package e2e

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/raygate/raygate/internal/testenv/cmdbuild"
)

// The commands the tests run are built once per test binary, each by the first test that
// needs it: a build per test would link each again. raygate-local is built first, on its
// own, so make run starts while the others link.
const (
	localCmd  = "raygate-local"
	demoCmd   = "raygate-demo"
	pluginCmd = "kubectl-raygate"
)

var built = struct {
	dir  string
	err  error
	cmds map[string]*buildOnce
}{cmds: map[string]*buildOnce{localCmd: {}, demoCmd: {}, pluginCmd: {}}}

// buildOnce is one command's build.
type buildOnce struct {
	once sync.Once
	err  error
	took time.Duration
}

func TestMain(m *testing.M) {
	flag.Parse()
	built.dir, built.err = os.MkdirTemp("", "raygate-e2e-bin-")
	// kubectl, the plugin and the walkthrough's script cache discovery and OpenAPI documents
	// here rather than in the user's ~/.kube/cache, which nothing prunes.
	kubectlCache, err := os.MkdirTemp("", "raygate-e2e-kubectl-cache-")
	if err == nil {
		err = os.Setenv("KUBECACHEDIR", kubectlCache)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "kubectl cache directory:", err)
		os.Exit(1)
	}
	// make test gives test binaries GOMAXPROCS=1 (less CPU for the integration suites'
	// control planes and CLIs); the programs this package builds and starts run as a user
	// runs them, with every core.
	if err := os.Unsetenv("GOMAXPROCS"); err != nil {
		fmt.Fprintln(os.Stderr, "GOMAXPROCS:", err)
		os.Exit(1)
	}
	code := m.Run()
	if built.dir != "" {
		_ = os.RemoveAll(built.dir)
	}
	_ = os.RemoveAll(kubectlCache)
	os.Exit(code)
}

// buildCmd builds ./cmd/<name> into built.dir unless done already; callers wait for one
// build in progress.
func buildCmd(name string) *buildOnce {
	b := built.cmds[name]
	b.once.Do(func() {
		if b.err = built.err; b.err != nil {
			return
		}
		start := time.Now()
		var out bytes.Buffer
		if err := cmdbuild.Build(context.Background(), name, filepath.Join(built.dir, name), &out); err != nil {
			b.err = fmt.Errorf("%w\n%s", err, out.String())
		}
		b.took = time.Since(start)
	})
	return b
}

// binaries builds the named commands (raygate-local, raygate-demo, kubectl-raygate) and
// returns the directory holding them.
func binaries(t *testing.T, names ...string) string {
	t.Helper()
	for _, name := range names {
		if b := buildCmd(name); b.err != nil {
			t.Fatal(b.err)
		} else {
			t.Logf("%s built (%s)", name, b.took.Round(100*time.Millisecond))
		}
	}
	return built.dir
}

// prebuild starts building the named commands in the background, for binaries to find done.
func prebuild(names ...string) {
	for _, name := range names {
		go buildCmd(name)
	}
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

// step is a named part of a test that can run beside others in the same environment.
type step struct {
	name string
	run  func(t *testing.T)
}

// concurrently runs steps side by side, each as a subtest, and reports whether all passed
// once every one ended.
func concurrently(t *testing.T, steps ...step) bool {
	t.Helper()
	var (
		wg     sync.WaitGroup
		mu     sync.Mutex
		passed = true
	)
	for _, s := range steps {
		wg.Go(func() {
			ok := t.Run(s.name, func(t *testing.T) {
				start := time.Now()
				defer func() { t.Logf("step %s took %.1fs", s.name, time.Since(start).Seconds()) }()
				s.run(t)
			})
			mu.Lock()
			passed = passed && ok
			mu.Unlock()
		})
	}
	wg.Wait()
	return passed
}
