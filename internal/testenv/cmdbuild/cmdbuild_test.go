package cmdbuild

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// A second build of an unchanged command keeps the cached program (no relink) and still
// gives each caller a working copy of its own.
func TestBuildKeepsAnUpToDateProgram(t *testing.T) {
	t.Setenv("RAYGATE_CACHE", t.TempDir())
	ctx := context.Background()
	var log bytes.Buffer
	first := filepath.Join(t.TempDir(), "kubectl-raygate")
	if err := Build(ctx, "kubectl-raygate", first, &log); err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	kept := filepath.Join(os.Getenv("RAYGATE_CACHE"), "programs", "kubectl-raygate")
	before, err := os.Stat(kept)
	if err != nil {
		t.Fatal(err)
	}
	second := filepath.Join(t.TempDir(), "kubectl-raygate")
	if err := Build(ctx, "kubectl-raygate", second, &log); err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	after, err := os.Stat(kept)
	if err != nil {
		t.Fatal(err)
	}
	// go build touches an up-to-date output but leaves the file; a relink writes a new file
	// and renames it over the old one.
	if !os.SameFile(before, after) {
		t.Errorf("the second build replaced the cached program: it relinked an up-to-date command")
	}
	for _, p := range []string{first, second} {
		if out, err := exec.Command(p, "--help").CombinedOutput(); err != nil || !bytes.Contains(out, []byte("Usage:")) {
			t.Errorf("%s --help: %v\n%s", p, err, out)
		}
	}
}

func TestBuildNamesTheCommandThatFailed(t *testing.T) {
	t.Setenv("RAYGATE_CACHE", t.TempDir())
	var log bytes.Buffer
	err := Build(context.Background(), "no-such-command", filepath.Join(t.TempDir(), "x"), &log)
	if err == nil || !bytes.Contains([]byte(err.Error()), []byte("go build ./cmd/no-such-command")) {
		t.Fatalf("Build of a missing command: got %v, want an error naming go build ./cmd/no-such-command", err)
	}
}
