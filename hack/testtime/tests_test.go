package main

import (
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func pkgs(paths ...string) []testPackage {
	var ps []testPackage
	for _, p := range paths {
		ps = append(ps, testPackage{ImportPath: p, Dir: "/src/" + p})
	}
	return ps
}

func importPaths(ps []testPackage) string {
	var s []string
	for _, p := range ps {
		s = append(s, p.ImportPath)
	}
	return strings.Join(s, " ")
}

func TestParseTestPackages(t *testing.T) {
	out := "m/a\t/src/m/a\n\nm/b/gates\t/src/m/b/gates\n"
	got := parseTestPackages([]byte(out))
	if importPaths(got) != "m/a m/b/gates" || got[1].Dir != "/src/m/b/gates" || got[1].binaryName() != "gates.test" {
		t.Fatalf("parseTestPackages = %+v", got)
	}
}

func TestBinaryPathsNeverShareADirectoryPerName(t *testing.T) {
	got := binaryPaths("/b", pkgs("m/x/gates", "m/a", "m/y/gates", "m/z/gates", "m/b"))
	want := map[string]string{
		"m/x/gates": "/b/0/gates.test", "m/a": "/b/0/a.test", "m/y/gates": "/b/1/gates.test",
		"m/z/gates": "/b/2/gates.test", "m/b": "/b/0/b.test",
	}
	if len(got) != len(want) {
		t.Fatalf("paths = %v", got)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: %s, want %s", k, got[k], v)
		}
	}
}

func TestBuildStepsBuildTheFirstPackagesFirst(t *testing.T) {
	list := pkgs("m/x/gates", "m/a", "m/y/gates", "m/b", "m/c")
	bins := binaryPaths("/b", list)
	var got []string
	for _, s := range buildSteps(list, bins, 2) {
		got = append(got, s.dir+": "+importPaths(s.pkgs))
	}
	want := []string{
		"/b/0: m/x/gates m/a",              // the first two, by directory
		"/b/1: m/y/gates", "/b/0: m/b m/c", // then the rest
	}
	if strings.Join(got, " | ") != strings.Join(want, " | ") {
		t.Fatalf("steps = %q, want %q", got, want)
	}
	if steps := buildSteps(nil, bins, 2); len(steps) != 0 {
		t.Fatalf("no packages: %v", steps)
	}
}

func TestBuildTestBinariesTellsWhichFailed(t *testing.T) {
	if testing.Short() {
		t.Skip("builds packages")
	}
	mod := t.TempDir()
	files := map[string]string{
		"go.mod":            "module m\n\ngo 1.24\n",
		"good/good_test.go": "package good\n\nimport \"testing\"\n\nfunc TestOK(t *testing.T) {}\n",
		"bad/bad_test.go":   "package bad\n\nimport \"testing\"\n\nfunc TestBad(t *testing.T) { undefined() }\n",
	}
	for name, body := range files {
		p := filepath.Join(mod, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Chdir(mod)
	out := filepath.Join(t.TempDir(), "0")
	res := buildTestBinaries(t.Context(), "", buildStep{dir: out, pkgs: []testPackage{{ImportPath: "m/good"}, {ImportPath: "m/bad"}}})
	if len(res) != 2 || res[0].failed || !res[1].failed {
		t.Fatalf("results = %+v, want m/good built and m/bad failed", res)
	}
	if _, err := os.Stat(filepath.Join(out, "good.test")); err != nil {
		t.Fatalf("m/good's binary: %v", err)
	}
}

// script writes an executable shell script standing in for a test binary.
func script(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "x.test")
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestBinaryRunnerPrintsLikeGoTest(t *testing.T) {
	cases := []struct {
		name      string
		body      string
		wantExit  int
		wantOut   []string
		notInOut  []string
		wantFails bool
	}{
		{"a pass prints only ok", `echo "$PWD $*"; echo noise; exit 0`, 0,
			[]string{"ok  \tm/p\t"}, []string{"noise"}, false},
		{"a failure prints the output, then FAIL", `echo "--- FAIL: TestX (0.00s)"; echo "    x_test.go:3: boom" >&2; exit 1`, 1,
			[]string{"--- FAIL: TestX", "x_test.go:3: boom", "FAIL\tm/p\t"}, nil, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var out, log strings.Builder
			records := t.TempDir()
			dir := t.TempDir()
			r := binaryRunner{timeout: time.Minute, records: records, out: &out, log: &log}
			res := r.run(testPackage{ImportPath: "m/p", Dir: dir}, script(t, tc.body))
			if res.exit != tc.wantExit {
				t.Fatalf("exit = %d, want %d; output:\n%s", res.exit, tc.wantExit, out.String())
			}
			for _, w := range tc.wantOut {
				if !strings.Contains(out.String(), w) {
					t.Errorf("output lacks %q:\n%s", w, out.String())
				}
			}
			for _, w := range tc.notInOut {
				if strings.Contains(out.String(), w) {
					t.Errorf("output has %q:\n%s", w, out.String())
				}
			}
			if !strings.Contains(log.String(), "running ") {
				t.Errorf("no running line: %q", log.String())
			}
			recs, err := readRecords(records)
			if err != nil || len(recs) != 1 || recs[0].Exit != tc.wantExit || (len(recs[0].Failures) > 0) != tc.wantFails {
				t.Fatalf("records = %+v, %v", recs, err)
			}
		})
	}
}

func TestBinaryRunnerRunsInThePackageDirectoryWithGoTestsFlags(t *testing.T) {
	var out, log strings.Builder
	dir := t.TempDir()
	r := binaryRunner{timeout: 7 * time.Minute, out: &out, log: &log}
	res := r.run(testPackage{ImportPath: "m/p", Dir: dir}, script(t, `echo "$(pwd) $PWD $*"; exit 3`))
	want := dir + " " + dir + " -test.paniconexit0 -test.timeout=7m0s -test.count=1"
	if res.exit != 3 || !strings.Contains(out.String(), want) {
		t.Fatalf("exit %d, output %q, want it to contain %q", res.exit, out.String(), want)
	}
}

func TestBinaryRunnerAddsItsEnvironment(t *testing.T) {
	var out, log strings.Builder
	dir := t.TempDir()
	r := binaryRunner{timeout: time.Minute, out: &out, log: &log, env: map[string]string{"GOMAXPROCS": "1"}}
	res := r.run(testPackage{ImportPath: "m/p", Dir: dir}, script(t, `echo "GOMAXPROCS=$GOMAXPROCS PWD=$PWD"; exit 3`))
	if want := "GOMAXPROCS=1 PWD=" + dir; res.exit != 3 || !strings.Contains(out.String(), want) {
		t.Fatalf("exit %d, output %q, want it to contain %q", res.exit, out.String(), want)
	}
}

func TestBinaryRunnerStopsAHungBinary(t *testing.T) {
	var out, log strings.Builder
	r := binaryRunner{timeout: -59*time.Second - 800*time.Millisecond, out: &out, log: &log} // quits after 200 ms
	start := time.Now()
	res := r.run(testPackage{ImportPath: "m/p", Dir: t.TempDir()}, script(t, `trap 'echo got QUIT; exit 2' QUIT; while :; do sleep 0.05; done`))
	if res.exit == 0 || !strings.Contains(out.String(), "got QUIT") || time.Since(start) > 8*time.Second {
		t.Fatalf("exit %d after %v, output %q", res.exit, time.Since(start), out.String())
	}
}

func TestRunPoolKeepsOrderAndBound(t *testing.T) {
	in := pkgs("a", "b", "c", "d", "e")
	ch := make(chan testPackage)
	go func() {
		defer close(ch)
		for _, p := range in {
			ch <- p
		}
	}()
	var running, peak atomic.Int32
	got := runPool(ch, 2, func(p testPackage) packageResult {
		n := running.Add(1)
		for old := peak.Load(); n > old && !peak.CompareAndSwap(old, n); old = peak.Load() {
		}
		time.Sleep(20 * time.Millisecond)
		running.Add(-1)
		return packageResult{pkg: p.ImportPath}
	})
	for i, r := range got {
		if r.pkg != in[i].ImportPath {
			t.Fatalf("result %d = %q, want %q", i, r.pkg, in[i].ImportPath)
		}
	}
	if len(got) != len(in) || peak.Load() != 2 {
		t.Fatalf("%d ran at once, want 2", peak.Load())
	}
}

func TestSelectPackagesKeepsTheModulesOrderAndLeavesOutSkipped(t *testing.T) {
	all := pkgs("m/a", "m/b", "m/sys/x", "m/c", "m/sys/y")
	for _, tc := range []struct {
		name      string
		run, skip []testPackage
		want      string
	}{
		{name: "everything", run: all, want: "m/a m/b m/sys/x m/c m/sys/y"},
		{name: "everything but the skipped", run: all, skip: pkgs("m/sys/x", "m/sys/y"), want: "m/a m/b m/c"},
		{name: "a subset, listed in another order", run: pkgs("m/sys/y", "m/sys/x"), want: "m/sys/x m/sys/y"},
		{name: "a subset minus a skipped one", run: pkgs("m/c", "m/a"), skip: pkgs("m/a"), want: "m/c"},
		{name: "all skipped", run: pkgs("m/a"), skip: pkgs("m/a"), want: ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := importPaths(selectPackages(all, tc.run, tc.skip)); got != tc.want {
				t.Fatalf("selectPackages = %q, want %q", got, tc.want)
			}
		})
	}
}
