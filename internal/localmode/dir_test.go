package localmode

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestParseParent(t *testing.T) {
	for _, tt := range []struct {
		stat string
		want int
		ok   bool
	}{
		{"1234 (etcd) S 1200 1234 1200 0 -1", 1200, true},
		{"99 (a (weird) name) R 7 99 7", 7, true},
		{"99 (no fields after)", 0, false},
		{"garbage", 0, false},
	} {
		got, ok := parseParent(tt.stat)
		if got != tt.want || ok != tt.ok {
			t.Errorf("parseParent(%q) = %d, %v; want %d, %v", tt.stat, got, ok, tt.want, tt.ok)
		}
	}
}

func TestChildrenRoundTrip(t *testing.T) {
	cs := []child{{pid: 10, exe: "/cache/etcd"}, {pid: 11, exe: "/cache/kube-apiserver"}}
	got := parseChildren(formatChildren(cs) + "\nnot a line\n1 /sbin/init\n")
	if diff := cmp.Diff(cs, got, cmp.AllowUnexported(child{})); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
}

func TestLock(t *testing.T) {
	dir := t.TempDir()
	if Running(dir) {
		t.Fatal("Running before anyone holds the lock")
	}
	l, err := acquire(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !Running(dir) {
		t.Error("Running = false while the lock is held")
	}
	if _, err := acquire(dir); !errors.Is(err, ErrRunning) {
		t.Errorf("second acquire: %v, want ErrRunning", err)
	}
	l.release()
	if Running(dir) {
		t.Error("Running = true after release")
	}
	l2, err := acquire(dir)
	if err != nil {
		t.Fatalf("acquire after release: %v", err)
	}
	l2.release()
}

// A run killed with SIGKILL leaves its children; the next run stops those that still run
// the recorded program, and leaves a recycled pid alone.
func TestReapOrphans(t *testing.T) {
	dir := t.TempDir()
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip("no sleep binary")
	}
	cmd := exec.Command(sleep, "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	exe, err := os.Readlink(filepath.Join("/proc", strconv.Itoa(cmd.Process.Pid), "exe"))
	if err != nil {
		t.Skip("no /proc")
	}
	recorded := []child{{pid: cmd.Process.Pid, exe: exe}, {pid: os.Getpid(), exe: "/not/this/program"}}
	if err := os.WriteFile(filepath.Join(dir, pidsFile), []byte(formatChildren(recorded)), 0o600); err != nil {
		t.Fatal(err)
	}
	stopped := reapOrphans(dir)
	if len(stopped) != 1 {
		t.Fatalf("stopped %v, want only the sleep", stopped)
	}
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the orphan is still running")
	}
	if _, err := os.Stat(filepath.Join(dir, pidsFile)); !os.IsNotExist(err) {
		t.Errorf("the pids file is kept: %v", err)
	}
}

func TestChildrenOfThisProcess(t *testing.T) {
	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Skip(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	for _, c := range children(os.Getpid()) {
		if c.pid == cmd.Process.Pid {
			return
		}
	}
	t.Errorf("children(%d) does not list the child %d", os.Getpid(), cmd.Process.Pid)
}

func TestDefaultDir(t *testing.T) {
	t.Setenv("RAYGATE_CACHE", "/x/cache")
	if got := DefaultDir(); got != "/x/cache/local" {
		t.Errorf("DefaultDir with RAYGATE_CACHE = %q", got)
	}
	t.Setenv("RAYGATE_CACHE", "")
	t.Setenv("XDG_CACHE_HOME", "/xdg")
	if got := DefaultDir(); got != "/xdg/raygate/local" {
		t.Errorf("DefaultDir with XDG_CACHE_HOME = %q", got)
	}
}
