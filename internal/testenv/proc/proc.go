// Package proc runs another operator's binary for the tests (Kueue, KubeRay): start it, wait
// until its /readyz answers, stop it with SIGTERM and, after a grace period, SIGKILL.
package proc

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// Process is a started binary.
type Process struct {
	name string
	cmd  *exec.Cmd
	done chan error // holds the exit once Wait returned; put back after each read
}

// Start starts cmd; name is how errors call it.
func Start(name string, cmd *exec.Cmd) (*Process, error) {
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	p := &Process{name: name, cmd: cmd, done: make(chan error, 1)}
	go func() { p.done <- cmd.Wait() }()
	return p, nil
}

// WaitReady polls url until it answers 200, the process exits, or timeout passes.
func (p *Process) WaitReady(ctx context.Context, url string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		if resp, err := http.DefaultClient.Do(req); err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case err := <-p.done:
			p.done <- err
			return fmt.Errorf("%s exited before it was ready: %w", p.name, err)
		case <-ctx.Done():
			return fmt.Errorf("%s was not ready within %s", p.name, timeout)
		case <-tick.C:
		}
	}
}

// Stop sends SIGTERM, then SIGKILL after grace, and waits for the exit. An exit caused by
// the SIGTERM is not an error. Stop is safe to call twice.
func (p *Process) Stop(grace time.Duration) error {
	if p == nil || p.cmd.Process == nil {
		return nil
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	var err error
	select {
	case err = <-p.done:
	case <-time.After(grace):
		_ = p.cmd.Process.Kill()
		err = fmt.Errorf("%s did not stop within %s of SIGTERM: %w", p.name, grace, <-p.done)
	}
	p.done <- err
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		if ws, ok := exit.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGTERM {
			return nil
		}
	}
	return err
}

// Signal sends sig to the process (SIGSTOP and SIGCONT stall and continue it).
func (p *Process) Signal(sig os.Signal) error {
	if p == nil || p.cmd.Process == nil {
		return errors.New("not started")
	}
	return p.cmd.Process.Signal(sig)
}

// Pid is the process id (0 before Start).
func (p *Process) Pid() int {
	if p == nil || p.cmd.Process == nil {
		return 0
	}
	return p.cmd.Process.Pid
}

// Kill sends SIGKILL (a crash, for fault tests) and waits for the exit; a later Stop
// returns nil.
func (p *Process) Kill() error {
	if p == nil || p.cmd.Process == nil {
		return nil
	}
	if err := p.cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return err
	}
	// The exit status the SIGKILL caused is expected; a failure to wait is not.
	err := <-p.done
	p.done <- nil
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		return err
	}
	return nil
}

// FreePort is a TCP port on 127.0.0.1 for a program to listen on, reserved for the life of
// this process. A port that is merely free now can be handed to anyone before the program
// binds it: `make test` starts four packages' suites side by side, each asking for ports
// and binding them seconds later (a webhook port waits for a whole control plane and
// Kueue to start), and one listener failing with "address already in use" failed a suite.
// So the port stays bound here by a socket with SO_REUSEADDR that never listens: the
// kernel gives no bind to port 0, in any process, a port bound that way, while a listener
// that names the port with SO_REUSEADDR set, as every Go listener does, binds it beside
// the reserving socket. A program restarted on the same port finds it still reserved.
func FreePort() (int, error) {
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
	if err != nil {
		return 0, fmt.Errorf("reserving a port: %w", err)
	}
	syscall.CloseOnExec(fd)
	port, err := bindLoopback(fd)
	if err != nil {
		_ = syscall.Close(fd)
		return 0, fmt.Errorf("reserving a port: %w", err)
	}
	return port, nil // fd stays open, never closed: the process's exit frees the port
}

// bindLoopback binds fd to a port of the kernel's choosing on 127.0.0.1, with SO_REUSEADDR.
func bindLoopback(fd int) (int, error) {
	if err := syscall.SetsockoptInt(fd, syscall.SOL_SOCKET, syscall.SO_REUSEADDR, 1); err != nil {
		return 0, err
	}
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		return 0, err
	}
	sa, err := syscall.Getsockname(fd)
	if err != nil {
		return 0, err
	}
	in4, ok := sa.(*syscall.SockaddrInet4)
	if !ok {
		return 0, fmt.Errorf("bound to %T, not an IPv4 address", sa)
	}
	return in4.Port, nil
}
