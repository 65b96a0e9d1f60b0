package tools

import (
	"os"
	"path/filepath"
	"testing"
)

// go test runs this in internal/testenv/tools, three levels below the checkout's root.
func TestRepoRootIsTheCheckout(t *testing.T) {
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	want := filepath.Clean(filepath.Join(wd, "..", "..", ".."))
	if got := RepoRoot(); got != want {
		t.Fatalf("RepoRoot() = %q, want %q", got, want)
	}
	if _, err := os.Stat(filepath.Join(RepoRoot(), "config", "crd", "bases")); err != nil {
		t.Fatalf("the root has no CRDs: %v", err)
	}
}

func TestModuleRootAbove(t *testing.T) {
	root := t.TempDir()
	write := func(path, content string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(root, "go.mod"), "// raygate\nmodule github.com/raygate/raygate\n\ngo 1.26\n")
	write(filepath.Join(root, "hack", "tools", "go.mod"), "module github.com/raygate/raygate/hack/tools\n")
	write(filepath.Join(root, "hack", "tools", "helm", "x.txt"), "")
	quoted := t.TempDir()
	write(filepath.Join(quoted, "go.mod"), "module \"github.com/raygate/raygate\"\n")
	other := t.TempDir()
	write(filepath.Join(other, "go.mod"), "module example.com/other\n")

	for _, tc := range []struct {
		name   string
		starts []string
		want   string
		found  bool
	}{
		{"the root itself", []string{root}, root, true},
		{"past a tool module", []string{filepath.Join(root, "hack", "tools", "helm")}, root, true},
		{"a quoted module path", []string{quoted}, quoted, true},
		{"another module, then the program's directory", []string{other, filepath.Join(root, "hack")}, root, true},
		{"nowhere", []string{other}, "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, found := moduleRootAbove(tc.starts...)
			if got != tc.want || found != tc.found {
				t.Fatalf("moduleRootAbove(%q) = %q, %v; want %q, %v", tc.starts, got, found, tc.want, tc.found)
			}
		})
	}
}
