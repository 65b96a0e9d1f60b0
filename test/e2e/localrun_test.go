package e2e

import (
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// localRun is `make run` (bin/raygate-local) started by a test, as a newcomer runs it.
type localRun struct {
	cmd    *exec.Cmd
	out    *output
	stderr *strings.Builder
	exited chan error
	state  string
	// kubeconfig and kubectl are what the next steps it printed say to use.
	kubeconfig, kubectl string
}

// startLocal starts bin/raygate-local with its state in state and environment env, and
// waits until it printed its next steps (the sample RayService Ready).
func startLocal(t *testing.T, bin, state string, env []string) *localRun {
	t.Helper()
	r := &localRun{cmd: exec.Command(filepath.Join(bin, "raygate-local"), "--dir", state), stderr: &strings.Builder{}, exited: make(chan error, 1), state: state}
	r.cmd.Dir, r.cmd.Env = repoRoot(), withStartTimeout(env)
	pipe, err := r.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	r.cmd.Stderr = r.stderr
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { r.exited <- r.cmd.Wait() }()
	r.out = newOutput(pipe)
	if !r.out.waitFor("Ctrl-C stops everything.", 4*time.Minute) {
		r.dump(t)
		t.Fatal("make run did not reach the sample RayService Ready")
	}
	r.kubeconfig, r.kubectl = checkNextSteps(t, r.out.String(), state)
	return r
}

// startTimeoutEnv bounds each try of envtest (in make run) at starting etcd and
// kube-apiserver; its default, 20s, is short when both local environments start at once on
// a loaded machine. How long make run may take in all is startLocal's to say.
const startTimeoutEnv = "KUBEBUILDER_CONTROLPLANE_START_TIMEOUT"

// withStartTimeout is env with startTimeoutEnv at 1m unless it is set already.
func withStartTimeout(env []string) []string {
	if slices.ContainsFunc(env, func(kv string) bool { return strings.HasPrefix(kv, startTimeoutEnv+"=") }) {
		return env
	}
	return append(slices.Clip(env), startTimeoutEnv+"=1m")
}

// dump logs what make run printed and the end of raygate's log.
func (r *localRun) dump(t *testing.T) {
	t.Helper()
	t.Logf("make run stdout:\n%s\nstderr:\n%s\nraygate.log (end):\n%s", r.out, r.stderr.String(), tail(filepath.Join(r.state, "raygate.log"), 4000))
}

// interrupt presses Ctrl-C and waits for a clean exit.
func (r *localRun) interrupt(t *testing.T) {
	t.Helper()
	if err := r.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-r.exited:
		if err != nil {
			r.dump(t)
			t.Fatalf("make run exited with %v after Ctrl-C", err)
		}
	case <-time.After(90 * time.Second):
		r.dump(t)
		t.Fatal("make run did not stop within 90s of Ctrl-C")
	}
}
