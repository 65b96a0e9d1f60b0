package docs

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/raygate/raygate/internal/docgen"
	"github.com/raygate/raygate/internal/testenv/tools"
)

// TestGeneratedReferenceIsCurrent regenerates docs/reference/ in memory: the committed text
// must be what `make docs` writes from the code, the chart and the manifests today.
func TestGeneratedReferenceIsCurrent(t *testing.T) {
	root := tools.RepoRoot()
	files, err := docgen.Generate(root)
	if err != nil {
		t.Fatalf("generating the reference docs: %v", err)
	}
	generated := map[string]bool{}
	for _, f := range files {
		generated[f.Path] = true
		committed, err := os.ReadFile(filepath.Join(root, f.Path))
		if err != nil {
			t.Errorf("%s is not committed (%v): run `make docs` and commit it", f.Path, err)
			continue
		}
		if diff := cmp.Diff(strings.Split(string(committed), "\n"), strings.Split(f.Content, "\n")); diff != "" {
			t.Errorf("%s differs from what its sources generate: run `make docs` and commit it (-committed +generated):\n%s", f.Path, diff)
		}
	}
	others, err := filepath.Glob(filepath.Join(root, "docs", "reference", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range others {
		rel, _ := filepath.Rel(root, p)
		if !generated[filepath.ToSlash(rel)] {
			t.Errorf("%s is in docs/reference/ but nothing generates it: delete it, or generate it in internal/docgen", rel)
		}
	}
}
