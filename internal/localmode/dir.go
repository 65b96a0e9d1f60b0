package localmode

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/raygate/raygate/internal/testenv/tools"
)

// Files in the state directory.
const (
	kubeconfigFile = "kubeconfig"
	lockFile       = "lock"
	pidsFile       = "pids"
	operatorLog    = "raygate.log"
	componentLogs  = "logs"
)

// DefaultDir is where the local mode keeps its kubeconfig and logs: $RAYGATE_CACHE/local,
// else ~/.cache/raygate/local (the same cache root hack/tools.sh uses), so the path printed
// by `make run` is the same every time.
func DefaultDir() string { return filepath.Join(tools.CacheRoot(), "local") }

// KubeconfigPath is the admin kubeconfig of the environment running in dir.
func KubeconfigPath(dir string) string { return filepath.Join(dir, kubeconfigFile) }

// ErrRunning: another process (make run or make demo) holds dir.
var ErrRunning = errors.New("a local environment is already running")

// lock is an exclusive flock on dir/lock, held for the life of the environment: the kernel
// releases it when the process dies, so a crashed run never blocks the next one.
type lock struct{ f *os.File }

func acquire(dir string) (*lock, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(filepath.Join(dir, lockFile), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		_ = f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("%w in %s (stop it with Ctrl-C, or attach to it with make demo)", ErrRunning, dir)
		}
		return nil, err
	}
	return &lock{f: f}, nil
}

func (l *lock) release() {
	if l != nil && l.f != nil {
		_ = syscall.Flock(int(l.f.Fd()), syscall.LOCK_UN)
		_ = l.f.Close()
	}
}

// Running reports whether an environment currently holds dir.
func Running(dir string) bool {
	f, err := os.OpenFile(filepath.Join(dir, lockFile), os.O_RDWR, 0o600)
	if err != nil {
		return false
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		return errors.Is(err, syscall.EWOULDBLOCK)
	}
	_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	return false
}

// child is a process this one started, recorded so a run that was killed (SIGKILL, a
// second Ctrl-C) can have its orphans stopped by the next run. etcd and kube-apiserver are
// started by envtest without a parent-death signal, so they are the ones that can outlive us.
type child struct {
	pid int
	exe string
}

// children lists the direct child processes of pid, from /proc.
func children(pid int) []child {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var out []child
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if ppid, ok := parentOf(p); ok && ppid == pid {
			exe, _ := os.Readlink(filepath.Join("/proc", e.Name(), "exe"))
			out = append(out, child{pid: p, exe: exe})
		}
	}
	return out
}

// parentOf reads the parent pid from /proc/<pid>/stat (the field after the parenthesised
// command name, which may itself contain spaces and parentheses).
func parentOf(pid int) (int, bool) {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return 0, false
	}
	return parseParent(string(b))
}

func parseParent(stat string) (int, bool) {
	i := strings.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(stat[i+1:])
	if len(f) < 2 {
		return 0, false
	}
	ppid, err := strconv.Atoi(f[1])
	return ppid, err == nil
}

func formatChildren(cs []child) string {
	var b strings.Builder
	for _, c := range cs {
		fmt.Fprintf(&b, "%d %s\n", c.pid, c.exe)
	}
	return b.String()
}

func parseChildren(s string) []child {
	var out []child
	for _, line := range strings.Split(s, "\n") {
		pid, exe, ok := strings.Cut(strings.TrimSpace(line), " ")
		if !ok {
			continue
		}
		if p, err := strconv.Atoi(pid); err == nil && p > 1 && exe != "" {
			out = append(out, child{pid: p, exe: exe})
		}
	}
	return out
}

// recordChildren writes this process's children to dir/pids.
func recordChildren(dir string) error {
	return os.WriteFile(filepath.Join(dir, pidsFile), []byte(formatChildren(children(os.Getpid()))), 0o600)
}

// reapOrphans kills (by process group: every component leads its own) the processes a
// previous run recorded that are still alive and still run the same program, and reports
// what it stopped. Called with the lock held, so the recording run is gone.
func reapOrphans(dir string) []string {
	path := filepath.Join(dir, pidsFile)
	b, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	var stopped []string
	for _, c := range parseChildren(string(b)) {
		exe, err := os.Readlink(filepath.Join("/proc", strconv.Itoa(c.pid), "exe"))
		if err != nil || exe != c.exe {
			continue // gone, or the pid was reused by another program
		}
		if err := syscall.Kill(-c.pid, syscall.SIGKILL); err != nil {
			_ = syscall.Kill(c.pid, syscall.SIGKILL)
		}
		stopped = append(stopped, fmt.Sprintf("%s (pid %d)", filepath.Base(c.exe), c.pid))
	}
	_ = os.Remove(path)
	return stopped
}
