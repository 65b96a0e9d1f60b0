// Command testtime times `make test`: each phase (lint, verify, tests) and each package's
// test binary, with its wall time, CPU (user+sys) and peak memory, printed as one table at
// the end. It only measures: every command's output, and its exit status, pass through
// unchanged, and a failure is a row like the others (never hidden).
//
//	testtime run -dir D -name lint -- golangci-lint run ./...     # one phase, recorded in D
//	testtime run -dir D -name tests -table -- testtime tests -p 4 ./...
//	testtime tests -p 4 -timeout 30m -ldflags -w ./...            # go test -c, then run them
//	testtime exec pkg.test -test.v ...                            # as go test's -exec
//	testtime table -dir D -slowest-first -total "make tools"      # the records of D (make tools)
//
// `run` records its command, and prints "testtime: running <package>" as each test binary
// starts (from `tests`, or `exec` under go test), so a long run shows where it is. `tests`
// builds the test binaries with go test -c into a directory kept between runs (tests.go says
// why) and runs them as go test runs a list of packages: each in its package's directory, the
// output of a failed one printed whole, "ok" or "FAIL" per package. `exec` runs one test
// binary for go test -exec and records it when run's RAYGATE_TESTTIME_DIR is set; without
// it, it only runs the binary.
//
// CPU and peak RSS come from the kernel's accounting of the waited-for process: CPU adds up
// the processes it started and waited for (a suite's etcd and kube-apiserver), peak RSS is
// the largest single one of them.
package main

import (
	"cmp"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"
)

// dirEnv carries run's record directory to the exec processes go test starts.
const dirEnv = "RAYGATE_TESTTIME_DIR"

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	switch os.Args[1] {
	case "exec":
		os.Exit(execTest(os.Args[2:]))
	case "run":
		os.Exit(runPhase(os.Args[2:]))
	case "table":
		os.Exit(printTable(os.Args[2:]))
	case "tests":
		os.Exit(runTests(os.Args[2:]))
	default:
		usage()
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: testtime run -dir DIR -name NAME [-table] [-reset] -- COMMAND...\n       testtime tests [-p N] [-timeout D] [-ldflags FLAGS] [-bin DIR] PACKAGES...\n       testtime exec TESTBINARY ARGS...\n       testtime table -dir DIR [-heading H] [-slowest-first] [-total NAME]")
	os.Exit(2)
}

// runPhase runs one command, records it, and with -table prints every record in the
// directory. The exit status is the command's.
func runPhase(args []string) int {
	fs := flag.NewFlagSet("run", flag.ExitOnError)
	dir := fs.String("dir", "bin/testtime", "directory of the records")
	name := fs.String("name", "", "the phase's name in the table")
	table := fs.Bool("table", false, "print the table of every record in -dir after the command")
	reset := fs.Bool("reset", false, "remove earlier records first (the first phase of a run)")
	_ = fs.Parse(args)
	command := fs.Args()
	if *name == "" || len(command) == 0 {
		usage()
	}
	if *reset {
		if err := os.RemoveAll(*dir); err != nil {
			fmt.Fprintln(os.Stderr, "testtime:", err)
		}
	}
	abs, err := filepath.Abs(*dir)
	if err == nil {
		err = os.MkdirAll(abs, 0o755)
	}
	if err != nil {
		// Measuring must never stop the tests: run the command unmeasured.
		fmt.Fprintln(os.Stderr, "testtime:", err)
		return runUnmeasured(command)
	}
	stopWatch := watchStarts(abs, os.Stderr)
	rec, code := measure(command, process{env: map[string]string{dirEnv: abs}})
	stopWatch()
	rec.Kind, rec.Name = kindPhase, *name
	if err := writeRecord(abs, rec); err != nil {
		fmt.Fprintln(os.Stderr, "testtime:", err)
	}
	if *table {
		recs, err := readRecords(abs)
		if err != nil {
			fmt.Fprintln(os.Stderr, "testtime:", err)
		}
		fmt.Fprint(os.Stdout, formatTable(recs, tableOptions{}))
		fmt.Fprint(os.Stdout, formatFailures(recs))
	}
	return code
}

// printTable prints the records of a directory (`make tools` measures each build with run
// and prints them together at the end).
func printTable(args []string) int {
	fs := flag.NewFlagSet("table", flag.ExitOnError)
	dir := fs.String("dir", "bin/testtime", "directory of the records")
	heading := fs.String("heading", "", "title of the first column")
	slowestFirst := fs.Bool("slowest-first", false, "list phases slowest first instead of in the order they ran")
	total := fs.String("total", "", "add a last row with this name for all records together")
	_ = fs.Parse(args)
	recs, err := readRecords(*dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, "testtime:", err)
		return 1
	}
	fmt.Fprint(os.Stdout, formatTable(recs, tableOptions{heading: *heading, slowestFirst: *slowestFirst, total: *total}))
	return 0
}

// execTest runs a test binary for go test -exec and records it.
func execTest(args []string) int {
	if len(args) == 0 {
		usage()
	}
	dir := os.Getenv(dirEnv)
	if dir == "" {
		return runUnmeasured(args)
	}
	pkg := packageOf(".")
	if err := markStarted(dir, pkg); err != nil {
		fmt.Fprintln(os.Stderr, "testtime:", err)
	}
	var stdout, stderr failureDigest
	rec, code := measure(args, process{stdout: io.MultiWriter(os.Stdout, &stdout), stderr: io.MultiWriter(os.Stderr, &stderr)})
	rec.Kind, rec.Name = kindPackage, pkg
	if code != 0 {
		rec.Failures = append(stdout.Failures(), stderr.Failures()...)
	}
	if err := writeRecord(dir, rec); err != nil {
		fmt.Fprintln(os.Stderr, "testtime:", err)
	}
	return code
}

func runUnmeasured(command []string) int {
	_, code := measure(command, process{})
	return code
}

// process is how measure runs a command: where, with which extra environment, where its
// output goes (nil: this process's), and when it is stopped (0: never).
type process struct {
	dir            string
	env            map[string]string
	stdout, stderr io.Writer
	// quitAfter: SIGQUIT (Go's goroutine dump) after this long, SIGKILL 10 s later.
	quitAfter time.Duration
}

// measure runs a command and returns its record and exit status. Interrupts and
// terminations are passed on, so go test's timeout (SIGQUIT, for the goroutine dump) and
// Ctrl-C reach the test binary; if this process is killed, the kernel kills the command too.
func measure(command []string, p process) (record, int) {
	cmd := exec.Command(command[0], command[1:]...) //nolint:gosec // G702: running the given command is this tool's job, as for go test -exec
	cmd.Dir = p.dir
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, cmp.Or[io.Writer](p.stdout, os.Stdout), cmp.Or[io.Writer](p.stderr, os.Stderr)
	// Through a digest the output goes by a pipe, which a process the test left behind could
	// hold open after the test binary exited: stop reading it shortly after the exit.
	cmd.WaitDelay = 5 * time.Second
	cmd.Env = os.Environ()
	for k, v := range p.env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	setParentDeathSignal(cmd)
	signals := make(chan os.Signal, 4)
	signal.Notify(signals, os.Interrupt, syscall.SIGTERM, syscall.SIGQUIT)
	defer signal.Stop(signals)

	start := time.Now()
	rec := record{Start: start}
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "testtime:", err)
		rec.Exit = 127
		return rec, 127
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var quit, kill <-chan time.Time
	if p.quitAfter > 0 {
		t := time.NewTimer(p.quitAfter)
		defer t.Stop()
		quit = t.C
	}
	var err error
	for waiting := true; waiting; {
		select {
		case s := <-signals:
			_ = cmd.Process.Signal(s)
		case <-quit:
			fmt.Fprintf(os.Stderr, "testtime: %s still running %v after its start: SIGQUIT\n", command[0], p.quitAfter)
			_ = cmd.Process.Signal(syscall.SIGQUIT)
			kill = time.After(10 * time.Second)
		case <-kill:
			_ = cmd.Process.Kill()
		case err = <-done:
			waiting = false
		}
	}
	rec.Wall = time.Since(start)
	if cmd.ProcessState != nil {
		rec.User, rec.Sys, rec.MaxRSS = resourceUsage(cmd.ProcessState)
	}
	rec.Exit = exitCode(cmd.ProcessState, err)
	return rec, rec.Exit
}

// exitCode is the command's status, 128+n when signal n ended it (as a shell reports it).
func exitCode(state *os.ProcessState, err error) int {
	if state == nil {
		return 1
	}
	if ws, ok := state.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	if code := state.ExitCode(); code >= 0 {
		return code
	}
	var exitErr *exec.ExitError
	if errors.As(err, &exitErr) {
		return 1
	}
	return 0
}
