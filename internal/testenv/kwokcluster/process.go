package kwokcluster

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"time"
)

// Process is a child program of the cluster (kube-controller-manager, kube-scheduler, kwok,
// or one added with Cluster.Run) with its output in <LogDir>/<name>.log.
type Process struct {
	name    string
	cmd     *exec.Cmd
	logPath string
	done    chan struct{} // closed when the process exited
	err     error         // exit error, valid after done
	stopped atomic.Bool   // Stop was called: exiting is expected
}

// startProcess runs bin in its own process group, so Stop can kill it with everything it
// spawned, and with SIGKILL as the parent-death signal, so a crashed or killed test binary
// leaves nothing behind. env entries ("K=V") are added to this process's environment.
func startProcess(logDir, name string, env []string, bin string, args ...string) (*Process, error) {
	logPath := filepath.Join(logDir, name+".log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if len(env) > 0 {
		cmd.Env = append(os.Environ(), env...)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	// Pdeathsig fires when the forking OS thread exits; the Go runtime keeps its threads
	// for the life of the process (unless a goroutine exits while locked to one), so in
	// practice the children die with this process.
	err = cmd.Start()
	if err != nil {
		_ = logFile.Close()
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	p := &Process{name: name, cmd: cmd, logPath: logPath, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		_ = logFile.Close()
		close(p.done)
	}()
	return p, nil
}

// PID is the process id (and process group id).
func (p *Process) PID() int { return p.cmd.Process.Pid }

// LogPath is the file receiving the process's stdout and stderr.
func (p *Process) LogPath() string { return p.logPath }

// Exited reports whether the process has stopped, with its exit error.
func (p *Process) Exited() (bool, error) {
	select {
	case <-p.done:
		return true, p.err
	default:
		return false, nil
	}
}

// Stop sends SIGTERM to the process group, then SIGKILL after grace, and waits for the
// process to exit.
func (p *Process) Stop(grace time.Duration) error {
	p.stopped.Store(true)
	if done, _ := p.Exited(); done {
		return nil
	}
	pgid := p.cmd.Process.Pid
	if err := syscall.Kill(-pgid, syscall.SIGTERM); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("stopping %s: %w", p.name, err)
	}
	select {
	case <-p.done:
		return nil
	case <-time.After(grace):
	}
	if err := syscall.Kill(-pgid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("killing %s: %w", p.name, err)
	}
	<-p.done
	return nil
}

// Kill sends SIGKILL to the process group at once, as a crash would (no shutdown, nothing
// released), and waits for the process to exit; the exit is expected, so Healthy does not
// report it.
func (p *Process) Kill() error {
	p.stopped.Store(true)
	if done, _ := p.Exited(); done {
		return nil
	}
	if err := syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("killing %s: %w", p.name, err)
	}
	<-p.done
	return nil
}

// LogTail is the end of the process's log (at most max bytes, whole lines), for error
// messages.
func (p *Process) LogTail(max int) string {
	b, err := os.ReadFile(p.logPath)
	if err != nil {
		return ""
	}
	if len(b) > max {
		b = b[len(b)-max:]
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			b = b[i+1:]
		}
	}
	return string(b)
}
