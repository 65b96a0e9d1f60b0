package main

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"
)

const (
	kindPhase   = "phase"
	kindPackage = "package"
)

// record is one timed process: a phase of make test or one package's test binary.
type record struct {
	Kind   string        `json:"kind"`
	Name   string        `json:"name"`
	Start  time.Time     `json:"start"`
	Wall   time.Duration `json:"wall"`
	User   time.Duration `json:"user"`
	Sys    time.Duration `json:"sys"`
	MaxRSS int64         `json:"maxRSS"` // bytes
	Exit   int           `json:"exit"`
	// Failures are the failure messages found in a test binary's output (failureDigest).
	Failures []string `json:"failures,omitempty"`
}

// fileName is unique per record: a package's path or a phase's name, made flat.
func fileName(kind, name string) string {
	flat := strings.NewReplacer("/", "_", " ", "_", ".", "_").Replace(name)
	return kind + "-" + flat + ".json"
}

func writeRecord(dir string, r record) error {
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, fileName(r.Kind, r.Name)), b, 0o644)
}

func readRecords(dir string) ([]record, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return nil, err
	}
	var recs []record
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			return recs, err
		}
		var r record
		if err := json.Unmarshal(b, &r); err != nil {
			return recs, fmt.Errorf("%s: %w", p, err)
		}
		recs = append(recs, r)
	}
	return recs, nil
}

// markStarted leaves a file that run's watcher turns into a "running" line.
func markStarted(dir, pkg string) error {
	d := filepath.Join(dir, "started")
	if err := os.MkdirAll(d, 0o755); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(d, fileName(kindPackage, pkg)), []byte(pkg), 0o644)
}

// watchStarts prints one line per test binary started under dir from now until the
// returned stop is called (which prints those it has not seen yet).
func watchStarts(dir string, out io.Writer) (stop func()) {
	seen := map[string]bool{}
	scan := func(print bool) {
		paths, _ := filepath.Glob(filepath.Join(dir, "started", "*"))
		sort.Strings(paths)
		for _, p := range paths {
			if seen[p] {
				continue
			}
			seen[p] = true
			if b, err := os.ReadFile(p); err == nil && print {
				fmt.Fprintf(out, "testtime: %s running %s\n", time.Now().Format("15:04:05"), b)
			}
		}
	}
	scan(false) // an earlier command's test binaries
	quit := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			select {
			case <-quit:
				scan(true)
				return
			case <-tick.C:
				scan(true)
			}
		}
	}()
	return func() { close(quit); wg.Wait() }
}

// packageOf names the package a test binary runs for: go test runs it in the package's
// directory, so it is that directory relative to the module root ("./test/e2e").
func packageOf(dir string) string {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return dir
	}
	for root := abs; ; {
		if _, err := os.Stat(filepath.Join(root, "go.mod")); err == nil {
			rel, err := filepath.Rel(root, abs)
			if err != nil || rel == "." {
				return "."
			}
			return "./" + filepath.ToSlash(rel)
		}
		parent := filepath.Dir(root)
		if parent == root {
			return abs
		}
		root = parent
	}
}

// tableOptions shape the table: `make test` lists its phases in the order they ran, `make
// tools` its builds slowest first with a total.
type tableOptions struct {
	heading      string // first column's title
	slowestFirst bool   // phases too, not only packages, slowest first
	total        string // if set, a last row with this name: first start to last end, CPU summed, largest peak
}

// formatTable prints the phases (in the order they ran unless slowestFirst), then the
// packages, slowest first.
func formatTable(recs []record, opt tableOptions) string {
	var phases, pkgs []record
	for _, r := range recs {
		if r.Kind == kindPhase {
			phases = append(phases, r)
		} else {
			pkgs = append(pkgs, r)
		}
	}
	slowest := func(rs []record) func(i, j int) bool {
		return func(i, j int) bool {
			if rs[i].Wall != rs[j].Wall {
				return rs[i].Wall > rs[j].Wall
			}
			return rs[i].Name < rs[j].Name
		}
	}
	if opt.slowestFirst {
		sort.SliceStable(phases, slowest(phases))
	} else {
		sort.SliceStable(phases, func(i, j int) bool { return phases[i].Start.Before(phases[j].Start) })
	}
	sort.SliceStable(pkgs, slowest(pkgs))
	heading := cmp.Or(opt.heading, "phase / package")
	width := max(len(heading), len(opt.total))
	for _, r := range recs {
		width = max(width, len(r.Name)+2)
	}
	var b strings.Builder
	b.WriteString("\ntesttime: wall time, CPU (user+sys, with the processes each started) and peak RSS (largest process)\n")
	row := func(name, wall, cpu, ratio, rss, result string) {
		fmt.Fprintf(&b, "%-*s %9s %9s %8s %9s  %s\n", width, name, wall, cpu, ratio, rss, result)
	}
	row(heading, "wall", "CPU", "CPU/wall", "peak RSS", "result")
	line := func(name string, r record) {
		cpu := r.User + r.Sys
		ratio := "-"
		if r.Wall > 0 {
			ratio = fmt.Sprintf("%.2f", cpu.Seconds()/r.Wall.Seconds())
		}
		row(name, formatDuration(r.Wall), formatDuration(cpu), ratio, formatBytes(r.MaxRSS), result(r.Exit))
	}
	for _, r := range phases {
		line(r.Name, r)
	}
	for _, r := range pkgs {
		line("  "+r.Name, r)
	}
	if opt.total != "" && len(recs) > 0 {
		line(opt.total, sumRecords(recs))
	}
	return b.String()
}

// sumRecords is records that ran side by side as one: from the first start to the last end,
// their CPU added, the largest peak, the first failure's exit status.
func sumRecords(recs []record) record {
	t := record{Start: recs[0].Start}
	end := recs[0].Start
	for _, r := range recs {
		if r.Start.Before(t.Start) {
			t.Start = r.Start
		}
		if e := r.Start.Add(r.Wall); e.After(end) {
			end = e
		}
		t.User += r.User
		t.Sys += r.Sys
		t.MaxRSS = max(t.MaxRSS, r.MaxRSS)
		if t.Exit == 0 {
			t.Exit = r.Exit
		}
	}
	t.Wall = end.Sub(t.Start)
	return t
}

func result(exit int) string {
	if exit == 0 {
		return "ok"
	}
	return fmt.Sprintf("FAIL (exit %d)", exit)
}

// formatDuration is minutes and seconds to a tenth ("4m03.2s", "12.0s").
func formatDuration(d time.Duration) string {
	d = d.Round(100 * time.Millisecond)
	if d < time.Minute {
		return fmt.Sprintf("%.1fs", d.Seconds())
	}
	m := d / time.Minute
	return fmt.Sprintf("%dm%04.1fs", m, (d - m*time.Minute).Seconds())
}

func formatBytes(n int64) string {
	switch {
	case n <= 0:
		return "-"
	case n >= 1<<30:
		return fmt.Sprintf("%.2f GiB", float64(n)/(1<<30))
	default:
		return fmt.Sprintf("%d MiB", (n+(1<<19))>>20)
	}
}
