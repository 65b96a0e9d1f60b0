// Command doccheck fails when the user documentation names something the repository does
// not have: a relative link or #anchor that does not resolve, a make target, a flag, a Helm
// value, a ray.io/ or raygate.ray.io/ key, a repository path or a Go test. It reads README.md,
// SECURITY.md, docs/*.md, charts/raygate/README.md and the comments of the chart's
// values.yaml, and prints each stale claim as file:line. `make verify` runs it.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("doccheck", flag.ContinueOnError)
	fs.SetOutput(stderr)
	root := fs.String("root", ".", "repository root")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	findings, checked, err := checkRepository(*root)
	if err != nil {
		fmt.Fprintln(stderr, "doccheck:", err)
		return 2
	}
	for _, f := range findings {
		fmt.Fprintln(stderr, f)
	}
	if len(findings) > 0 {
		fmt.Fprintf(stderr, "doccheck: %d stale claims in the documentation\n", len(findings))
		return 1
	}
	fmt.Fprintf(stdout, "doccheck: %d documents name only links, targets, flags, values, keys, paths and tests that exist\n", checked)
	return 0
}

// documents are the checked files, relative to the repository root.
func documents(root string) ([]string, error) {
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		return nil, err
	}
	out := []string{"README.md", "SECURITY.md", "charts/raygate/README.md", "charts/raygate/values.yaml"}
	for _, d := range docs {
		rel, err := filepath.Rel(root, d)
		if err != nil {
			return nil, err
		}
		out = append(out, filepath.ToSlash(rel))
	}
	return out, nil
}

// checkRepository checks the documents of the repository at root.
func checkRepository(root string) ([]finding, int, error) {
	f, err := loadFacts(root)
	if err != nil {
		return nil, 0, err
	}
	paths, err := documents(root)
	if err != nil {
		return nil, 0, err
	}
	cache := map[string]doc{}
	load := func(p string) (doc, bool) {
		if d, ok := cache[p]; ok {
			return d, true
		}
		b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(p)))
		if err != nil {
			return doc{}, false
		}
		d := parseMarkdown(p, string(b))
		cache[p] = d
		return d, true
	}
	var docs []doc
	for _, p := range paths {
		if strings.HasSuffix(p, ".yaml") {
			b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(p)))
			if err != nil {
				return nil, 0, err
			}
			docs = append(docs, parseValuesComments(p, string(b)))
			continue
		}
		d, ok := load(p)
		if !ok {
			return nil, 0, fmt.Errorf("cannot read %s", p)
		}
		docs = append(docs, d)
	}
	findings := check(docs, f, load)
	sortFindings(findings)
	return findings, len(docs), nil
}
