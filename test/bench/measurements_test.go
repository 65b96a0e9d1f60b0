package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/raygate/raygate/internal/testenv/tools"
)

// measurementRow is a row of the table in test/bench/measurements.md: the code it is about
// (paths, and identifiers in those files) and its cells.
type measurementRow struct {
	line         string
	paths, names []string
	cells        int
}

var backtickRE = regexp.MustCompile("`([^`]+)`")

func measurementRows(t *testing.T) []measurementRow {
	t.Helper()
	b, err := os.ReadFile("measurements.md")
	if err != nil {
		t.Fatal(err)
	}
	var rows []measurementRow
	for _, line := range strings.Split(string(b), "\n") {
		cells := strings.Split(line, "|")
		if !strings.HasPrefix(line, "| ") || len(cells) < 3 || strings.TrimSpace(cells[1]) == "code" || strings.HasPrefix(cells[1], " ---") {
			continue
		}
		r := measurementRow{line: line, cells: len(cells) - 2}
		for _, m := range backtickRE.FindAllStringSubmatch(cells[1], -1) {
			if strings.Contains(m[1], "/") {
				r.paths = append(r.paths, m[1])
			} else {
				r.names = append(r.names, m[1])
			}
		}
		rows = append(rows, r)
	}
	return rows
}

// TestMeasurementsNameTheirCode: every row of test/bench/measurements.md names files (or a
// package) that exist and identifiers those files declare, so a measurement does not outlive
// the code it is about unnoticed; and every product-code comment that points to
// docs/benchmarks.md is about code the table names.
func TestMeasurementsNameTheirCode(t *testing.T) {
	root := tools.RepoRoot()
	rows := measurementRows(t)
	if len(rows) == 0 {
		t.Fatal("test/bench/measurements.md has no rows")
	}
	named := map[string]bool{}
	for _, r := range rows {
		if r.cells != 4 {
			t.Errorf("row has %d cells, want 4: %s", r.cells, r.line)
		}
		if len(r.paths) == 0 {
			t.Errorf("row names no code: %s", r.line)
		}
		var text strings.Builder
		for _, p := range r.paths {
			named[p] = true
			info, err := os.Stat(filepath.Join(root, p))
			if err != nil {
				t.Errorf("%s: %v", p, err)
				continue
			}
			if !info.IsDir() {
				b, _ := os.ReadFile(filepath.Join(root, p))
				text.Write(b)
			}
		}
		for _, n := range r.names {
			if !strings.Contains(text.String(), n) {
				t.Errorf("%s is not in %s", n, strings.Join(r.paths, ", "))
			}
		}
	}

	code := os.DirFS(root)
	for _, dir := range []string{"apis", "cmd", "controllers", "internal", "webhooks"} {
		err := fs.WalkDir(code, dir, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() && path == "internal/testenv" {
				return fs.SkipDir
			}
			if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return nil
			}
			b, err := fs.ReadFile(code, path)
			if err != nil || !strings.Contains(string(b), "docs/benchmarks.md") {
				return err
			}
			if !named[path] && !named[filepath.ToSlash(filepath.Dir(path))] {
				t.Errorf("%s points to docs/benchmarks.md, but no row of test/bench/measurements.md names it", path)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}
