package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"
)

// testPackage is one package with tests, as go list reports it.
type testPackage struct {
	ImportPath string
	Dir        string
}

// binaryName is the file go test -c -o DIR/ writes for the package.
func (p testPackage) binaryName() string { return path.Base(p.ImportPath) + ".test" }

// runTests builds the test binaries of the packages with `go test -c` into a directory kept
// between runs and runs them -p at a time, as go test would run them.
//
// go test links every test binary again on every run (about 100 links of ~3 s of CPU each
// here, a sixth of make test's CPU), since its build cache keeps packages, not test
// executables. go test -c -o FILE leaves FILE alone when its build ID says it is up to date,
// so a binary whose inputs did not change is not linked again. The packages start in the
// order they are built, which is go list's order within each build step: the first few, then
// the rest of binary directory 0, then directories 1 and 2 (packages whose binary name repeats
// an earlier package's, such as test/integration/certmanager after internal/testenv/certmanager,
// so they start last). The first few start while the others are built, so a run that links them
// all (a first run, or a change to a package most tests import) does not wait for every link
// before the first test. An order by the last run's times, slowest first, started the four
// heaviest suites together and starved their timing checks.
func runTests(args []string) int {
	fs := flag.NewFlagSet("tests", flag.ExitOnError)
	parallel := fs.Int("p", 4, "test binaries run side by side")
	timeout := fs.Duration("timeout", 30*time.Minute, "each test binary's -test.timeout")
	ldflags := fs.String("ldflags", "", "go test -ldflags")
	gomaxprocs := fs.Int("gomaxprocs", 0, "GOMAXPROCS for each test binary and the processes it starts (0: inherited)")
	binDir := fs.String("bin", "", "directory for the test binaries, kept between runs (default: RAYGATE_CACHE or ~/.cache/raygate, in test-binaries)")
	skip := fs.String("skip", "", "package patterns, separated by commas or spaces, whose tests this run leaves out (their binaries are kept)")
	_ = fs.Parse(args)
	patterns := fs.Args()
	if len(patterns) == 0 {
		patterns = []string{"./..."}
	}
	ctx := context.Background()
	// The binaries are laid out, and kept, for every package of the module, whichever of
	// them this run tests: make test and make test-system test different packages, and
	// neither may remove, or move, the other's binaries.
	all, err := listTestPackages(ctx, []string{"./..."})
	var pkgs []testPackage
	if err == nil {
		run, skipped := all, []testPackage(nil)
		if !slices.Equal(patterns, []string{"./..."}) {
			run, err = listTestPackages(ctx, patterns)
		}
		if err == nil && *skip != "" {
			skipped, err = listTestPackages(ctx, strings.FieldsFunc(*skip, func(r rune) bool { return r == ',' || unicode.IsSpace(r) }))
		}
		pkgs = selectPackages(all, run, skipped)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "testtime:", err)
		return 1
	}
	dir, release, err := binaryDir(*binDir)
	if err != nil {
		fmt.Fprintln(os.Stderr, "testtime:", err)
		return 1
	}
	defer release()
	bins := binaryPaths(dir, all)
	removeOtherBinaries(dir, bins)

	r := binaryRunner{timeout: *timeout, records: os.Getenv(dirEnv), out: os.Stdout, log: os.Stderr}
	if *gomaxprocs > 0 {
		r.env = map[string]string{"GOMAXPROCS": strconv.Itoa(*gomaxprocs)}
	}
	built := make(chan buildResult)
	go func() {
		defer close(built)
		for _, step := range buildSteps(pkgs, bins, 2**parallel) {
			for _, b := range buildTestBinaries(ctx, *ldflags, step) {
				built <- b
			}
		}
	}()
	results := runPool(built, *parallel, func(b buildResult) packageResult {
		if b.failed {
			return r.buildFailed(b.pkg)
		}
		return r.run(b.pkg, bins[b.pkg.ImportPath])
	})
	if slices.ContainsFunc(results, func(r packageResult) bool { return r.exit != 0 }) {
		fmt.Println("FAIL")
		return 1
	}
	return 0
}

// listTestPackages lists the packages of the patterns that have test files, in go list's order.
func listTestPackages(ctx context.Context, patterns []string) ([]testPackage, error) {
	args := append([]string{"list", "-f", "{{if or .TestGoFiles .XTestGoFiles}}{{.ImportPath}}\t{{.Dir}}{{end}}"}, patterns...)
	out, err := exec.CommandContext(ctx, "go", args...).Output()
	if err != nil {
		return nil, fmt.Errorf("go list: %w", err)
	}
	return parseTestPackages(out), nil
}

// selectPackages is the packages of run that skip does not name, in all's order (go list's
// order for the whole module, which the binaries' layout follows).
func selectPackages(all, run, skip []testPackage) []testPackage {
	want := map[string]bool{}
	for _, p := range run {
		want[p.ImportPath] = true
	}
	for _, p := range skip {
		delete(want, p.ImportPath)
	}
	var out []testPackage
	for _, p := range all {
		if want[p.ImportPath] {
			out = append(out, p)
		}
	}
	return out
}

func parseTestPackages(out []byte) []testPackage {
	var pkgs []testPackage
	for line := range strings.Lines(string(out)) {
		importPath, dir, ok := strings.Cut(strings.TrimSpace(line), "\t")
		if ok {
			pkgs = append(pkgs, testPackage{ImportPath: importPath, Dir: dir})
		}
	}
	return pkgs
}

// binaryPaths gives each package its binary's path: DIR/<n>/<last element>.test, where n is
// the first that no earlier package (in go list's order) of the same last element has; go
// test -c -o DIR/ writes that name and refuses two packages of one name in one directory.
// The path stays the same from run to run while the packages do, so a binary is found again.
func binaryPaths(dir string, pkgs []testPackage) map[string]string {
	taken := map[string]int{} // binary name → directories used
	paths := map[string]string{}
	for _, p := range pkgs {
		n := taken[p.binaryName()]
		taken[p.binaryName()] = n + 1
		paths[p.ImportPath] = filepath.Join(dir, fmt.Sprint(n), p.binaryName())
	}
	return paths
}

// buildStep is one go test -c: packages whose binaries go to one directory.
type buildStep struct {
	dir  string
	pkgs []testPackage
}

// buildSteps orders the builds: the first `first` packages, then the rest, each split by
// binary directory; within a step packages keep their order.
func buildSteps(order []testPackage, bins map[string]string, first int) []buildStep {
	var steps []buildStep
	for len(order) > 0 {
		n := min(max(first, 1), len(order))
		if len(steps) > 0 {
			n = len(order)
		}
		byDir := map[string]int{} // dir → index in steps
		for _, p := range order[:n] {
			d := filepath.Dir(bins[p.ImportPath])
			i, ok := byDir[d]
			if !ok {
				i = len(steps)
				byDir[d] = i
				steps = append(steps, buildStep{dir: d})
			}
			steps[i].pkgs = append(steps[i].pkgs, p)
		}
		order = order[n:]
	}
	return steps
}

// binaryDir is the directory the binaries are kept in, locked for this run. When another run
// holds it (two checkouts testing at once), this run uses a private directory it removes at
// the end: its binaries are all linked, as go test would.
func binaryDir(dir string) (string, func(), error) {
	if dir == "" {
		base := os.Getenv("RAYGATE_CACHE")
		if base == "" {
			home, err := os.UserCacheDir()
			if err != nil {
				return "", nil, err
			}
			base = filepath.Join(home, "raygate")
		}
		dir = filepath.Join(base, "test-binaries")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", nil, err
	}
	unlock, ok, err := tryLock(filepath.Join(dir, "lock"))
	if err != nil {
		return "", nil, err
	}
	if ok {
		return dir, unlock, nil
	}
	private, err := os.MkdirTemp("", "raygate-test-binaries-")
	if err != nil {
		return "", nil, err
	}
	fmt.Fprintf(os.Stderr, "testtime: %s is in use by another run; linking every test binary into %s\n", dir, private)
	return private, func() { _ = os.RemoveAll(private) }, nil
}

// buildResult is one package after its step's go test -c: ready to run, or not built.
type buildResult struct {
	pkg    testPackage
	failed bool
}

// buildTestBinaries runs go test -c for one step; its output passes through. When it fails,
// each package is built alone to tell which failed (the binaries of the others may be older
// than their sources otherwise).
func buildTestBinaries(ctx context.Context, ldflags string, step buildStep) []buildResult {
	var results []buildResult
	if goTestC(ctx, ldflags, step.dir, step.pkgs) {
		for _, p := range step.pkgs {
			results = append(results, buildResult{pkg: p})
		}
		return results
	}
	for _, p := range step.pkgs {
		ok := len(step.pkgs) > 1 && goTestC(ctx, ldflags, step.dir, []testPackage{p})
		results = append(results, buildResult{pkg: p, failed: !ok})
	}
	return results
}

func goTestC(ctx context.Context, ldflags, dir string, pkgs []testPackage) bool {
	args := []string{"test", "-c", "-o", dir + string(filepath.Separator)}
	if ldflags != "" {
		args = append(args, "-ldflags="+ldflags)
	}
	for _, p := range pkgs {
		args = append(args, p.ImportPath)
	}
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	if err := cmd.Run(); err != nil {
		fmt.Fprintf(os.Stderr, "testtime: go test -c (%d packages): %v\n", len(pkgs), err)
		return false
	}
	return true
}

// removeOtherBinaries removes the test binaries of packages that are gone or have moved to
// another group, so the directory holds one set (3.6 GB for raygate's ~100 packages).
func removeOtherBinaries(dir string, bins map[string]string) {
	keep := map[string]bool{}
	for _, b := range bins {
		keep[b] = true
	}
	found, _ := filepath.Glob(filepath.Join(dir, "*", "*.test"))
	for _, f := range found {
		if !keep[f] {
			_ = os.Remove(f)
		}
	}
}

// packageResult is what binaryRunner.run prints and the pool collects.
type packageResult struct {
	pkg  string
	exit int
}

// runPool runs f for each item of in, n at a time, in the order they come; the results
// are in that order too.
func runPool[T any](in <-chan T, n int, f func(T) packageResult) []packageResult {
	var mu sync.Mutex
	var results []packageResult
	type job struct {
		i int
		v T
	}
	next := make(chan job)
	var wg sync.WaitGroup
	for range max(n, 1) {
		wg.Go(func() {
			for j := range next {
				r := f(j.v)
				mu.Lock()
				results[j.i] = r
				mu.Unlock()
			}
		})
	}
	for v := range in {
		mu.Lock()
		results = append(results, packageResult{})
		i := len(results) - 1
		mu.Unlock()
		next <- job{i, v}
	}
	close(next)
	wg.Wait()
	return results
}

// binaryRunner runs test binaries: each with -test.timeout, recorded in records (if set),
// its result printed to out, its start to log.
type binaryRunner struct {
	timeout  time.Duration
	records  string
	env      map[string]string // added to each binary's environment
	out, log io.Writer
	mu       sync.Mutex // keeps one package's output together
}

// run runs one binary in its package's directory with the flags go test gives it,
// prints "ok" and its time, or the whole output and "FAIL" (as go test does for a list of
// packages), and records it for the table. A binary still running a minute after its own
// timeout gets SIGQUIT (for the goroutine dump), then is killed, as under go test.
func (r *binaryRunner) run(p testPackage, bin string) packageResult {
	name := packageOf(p.Dir)
	r.mu.Lock()
	fmt.Fprintf(r.log, "testtime: %s running %s\n", time.Now().Format("15:04:05"), name)
	r.mu.Unlock()
	// One writer for both streams: os/exec then copies them with one goroutine, in order.
	var out bytes.Buffer
	var digest failureDigest
	w := io.MultiWriter(&out, &digest)
	command := []string{bin, "-test.paniconexit0", "-test.timeout=" + r.timeout.String(), "-test.count=1"}
	env := map[string]string{"PWD": p.Dir}
	maps.Copy(env, r.env)
	rec, code := measure(command, process{dir: p.Dir, env: env, stdout: w, stderr: w, quitAfter: r.timeout + time.Minute})
	rec.Kind, rec.Name = kindPackage, name
	if code != 0 {
		rec.Failures = digest.Failures()
	}
	if r.records != "" {
		if err := writeRecord(r.records, rec); err != nil {
			fmt.Fprintln(r.log, "testtime:", err)
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if code != 0 {
		_, _ = r.out.Write(out.Bytes())
		fmt.Fprintf(r.out, "FAIL\t%s\t%.3fs\n", p.ImportPath, rec.Wall.Seconds())
	} else {
		fmt.Fprintf(r.out, "ok  \t%s\t%.3fs\n", p.ImportPath, rec.Wall.Seconds())
	}
	return packageResult{pkg: p.ImportPath, exit: code}
}

// buildFailed reports a package whose test binary did not build (go test -c printed why), as
// go test does.
func (r *binaryRunner) buildFailed(p testPackage) packageResult {
	rec := record{Kind: kindPackage, Name: packageOf(p.Dir), Start: time.Now(), Exit: 1, Failures: []string{"its test binary did not build (go test -c printed why above)"}}
	if r.records != "" {
		if err := writeRecord(r.records, rec); err != nil {
			fmt.Fprintln(r.log, "testtime:", err)
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	fmt.Fprintf(r.out, "FAIL\t%s [build failed]\n", p.ImportPath)
	return packageResult{pkg: p.ImportPath, exit: 1}
}
