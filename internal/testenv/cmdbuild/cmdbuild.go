// Package cmdbuild builds the checkout's commands (./cmd/<name>) for tests and benchmarks
// that run them as processes, as a user runs them.
//
// The build's output is kept in the cache (tools.CacheRoot()/programs), and go build leaves
// an output file that is already up to date alone: a run whose sources and flags match the
// last build, from this clone or another one (the Makefile builds with -trimpath), pays
// neither the compile nor the link (~9 s of CPU for cmd/raygate, four times in make test).
// Each caller gets its own copy, so a later build never changes a program that is running.
package cmdbuild

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"

	"github.com/raygate/raygate/internal/testenv/tools"
)

// Build builds ./cmd/<name> and copies the program to dst. What go build prints goes to log.
func Build(ctx context.Context, name, dst string, log io.Writer) error {
	dir := filepath.Join(tools.CacheRoot(), "programs")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	// Test packages run at once may build the same command: one writes the cached file at a
	// time, and nobody copies it half written.
	lock, err := os.OpenFile(filepath.Join(dir, "lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return err
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return fmt.Errorf("locking %s: %w", lock.Name(), err)
	}
	defer func() { _ = syscall.Flock(int(lock.Fd()), syscall.LOCK_UN) }()

	kept := filepath.Join(dir, name)
	cmd := exec.CommandContext(ctx, "go", "build", "-o", kept, "./cmd/"+name)
	cmd.Dir = tools.RepoRoot()
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go build ./cmd/%s: %w", name, err)
	}
	return copyProgram(kept, dst)
}

// copyProgram copies an executable, replacing dst.
func copyProgram(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		_ = out.Close()
		return fmt.Errorf("copying %s to %s: %w", src, dst, err)
	}
	return out.Close()
}
