package e2e

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/raygate/raygate/internal/testenv/tools"
)

// repoRoot is the checkout's root.
func repoRoot() string { return tools.RepoRoot() }

// output collects a program's output as it arrives, line by line.
type output struct {
	mu    sync.Mutex
	buf   bytes.Buffer
	lines chan string
}

func newOutput(r io.Reader) *output {
	o := &output{lines: make(chan string, 1024)}
	go func() {
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
		for sc.Scan() {
			o.mu.Lock()
			o.buf.WriteString(sc.Text() + "\n")
			o.mu.Unlock()
			select {
			case o.lines <- sc.Text():
			default:
			}
		}
		close(o.lines)
	}()
	return o
}

func (o *output) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.buf.String()
}

// waitFor returns once a line containing s was printed; false if the output ended or the
// time ran out first.
func (o *output) waitFor(s string, timeout time.Duration) bool {
	deadline := time.After(timeout)
	for {
		select {
		case line, ok := <-o.lines:
			if !ok {
				return strings.Contains(o.String(), s)
			}
			if strings.Contains(line, s) {
				return true
			}
		case <-deadline:
			return false
		}
	}
}

// marked lists the live processes whose environment carries marker ("KEY=value"): every
// descendant of a program started with it, even one orphaned and re-parented to init.
func marked(marker string) []string {
	entries, _ := os.ReadDir("/proc")
	var out []string
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		env, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err != nil || !bytes.Contains(append(env, 0), []byte(marker+"\x00")) {
			continue
		}
		if stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat")); err == nil && zombie(string(stat)) {
			continue // exited, waiting for its parent to reap it
		}
		cmdline, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		out = append(out, fmt.Sprintf("%d %s", pid, strings.ReplaceAll(string(bytes.TrimRight(cmdline, "\x00")), "\x00", " ")))
	}
	return out
}

func zombie(stat string) bool {
	i := strings.LastIndexByte(stat, ')')
	return i >= 0 && strings.HasPrefix(strings.TrimSpace(stat[i+1:]), "Z")
}

// killMarked is the safety net of a failed test: nothing it started may outlive it.
func killMarked(marker string) {
	for _, p := range marked(marker) {
		if pid, err := strconv.Atoi(strings.Fields(p)[0]); err == nil {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// kubectl runs the kubectl make run printed, with its kubeconfig.
func kubectl(ctx context.Context, bin, kubeconfig string, args ...string) (stdout, stderr string, err error) {
	cmd := exec.CommandContext(ctx, bin, append([]string{"--kubeconfig", kubeconfig}, args...)...)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err = cmd.Run()
	return o.String(), e.String(), err
}

// tail is the end of a file, for failure messages.
func tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}
