package main

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestFormatDuration(t *testing.T) {
	for _, tc := range []struct {
		in   time.Duration
		want string
	}{
		{0, "0.0s"},
		{12*time.Second + 340*time.Millisecond, "12.3s"},
		{59*time.Second + 990*time.Millisecond, "1m00.0s"},
		{4*time.Minute + 3*time.Second + 210*time.Millisecond, "4m03.2s"},
		{26*time.Minute + 33*time.Second, "26m33.0s"},
	} {
		if got := formatDuration(tc.in); got != tc.want {
			t.Errorf("formatDuration(%v) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestFormatBytes(t *testing.T) {
	for _, tc := range []struct {
		in   int64
		want string
	}{
		{0, "-"},
		{35 << 20, "35 MiB"},
		{3 << 29, "1.50 GiB"},
	} {
		if got := formatBytes(tc.in); got != tc.want {
			t.Errorf("formatBytes(%d) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// The table lists phases in the order they ran, then packages slowest first, and shows a
// failure as a failure.
func TestFormatTable(t *testing.T) {
	t0 := time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC)
	got := formatTable([]record{
		{Kind: kindPackage, Name: "./fast", Wall: 2 * time.Second, User: time.Second, MaxRSS: 40 << 20},
		{Kind: kindPhase, Name: "go test", Start: t0.Add(time.Minute), Wall: 10 * time.Minute, User: 15 * time.Minute, Exit: 1},
		{Kind: kindPhase, Name: "lint", Start: t0, Wall: time.Minute, User: 90 * time.Second, Sys: 30 * time.Second},
		{Kind: kindPackage, Name: "./slow", Wall: 3 * time.Minute, User: 2 * time.Minute, Exit: 1},
	}, tableOptions{})
	var rows []string
	for _, l := range strings.Split(strings.TrimSpace(got), "\n")[2:] {
		rows = append(rows, strings.Join(strings.Fields(l), " "))
	}
	want := []string{
		"lint 1m00.0s 2m00.0s 2.00 - ok",
		"go test 10m00.0s 15m00.0s 1.50 - FAIL (exit 1)",
		"./slow 3m00.0s 2m00.0s 0.67 - FAIL (exit 1)",
		"./fast 2.0s 1.0s 0.50 40 MiB ok",
	}
	expectLines(t, "table rows", rows, want, "\n")
}

// make tools' table: builds that ran side by side, slowest first, and a total from the first
// start to the last end with the CPU added up and the largest peak.
func TestFormatToolTable(t *testing.T) {
	t0 := time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC)
	got := formatTable([]record{
		{Kind: kindPhase, Name: "etcd", Start: t0, Wall: 2 * time.Minute, User: 3 * time.Minute, MaxRSS: 300 << 20},
		{Kind: kindPhase, Name: "traefik", Start: t0.Add(time.Second), Wall: 9 * time.Minute, User: 10 * time.Minute, Sys: time.Minute, MaxRSS: 900 << 20},
		{Kind: kindPhase, Name: "helm", Start: t0.Add(2 * time.Minute), Wall: 5 * time.Minute, User: 4 * time.Minute, Exit: 1},
	}, tableOptions{heading: "tool", slowestFirst: true, total: "make tools"})
	lines := strings.Split(strings.TrimSpace(got), "\n")
	if !strings.HasPrefix(lines[1], "tool ") {
		t.Errorf("heading %q, want the tool column first", lines[1])
	}
	var rows []string
	for _, l := range lines[2:] {
		rows = append(rows, strings.Join(strings.Fields(l), " "))
	}
	want := []string{
		"traefik 9m00.0s 11m00.0s 1.22 900 MiB ok",
		"helm 5m00.0s 4m00.0s 0.80 - FAIL (exit 1)",
		"etcd 2m00.0s 3m00.0s 1.50 300 MiB ok",
		"make tools 9m01.0s 18m00.0s 2.00 900 MiB FAIL (exit 1)",
	}
	expectLines(t, "table rows", rows, want, "\n")
}

func TestPackageOf(t *testing.T) {
	root := t.TempDir()
	pkg := filepath.Join(root, "test", "e2e")
	if err := os.MkdirAll(pkg, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "go.mod"), []byte("module example.com/m\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := packageOf(pkg); got != "./test/e2e" {
		t.Errorf("packageOf(%s) = %q, want ./test/e2e", pkg, got)
	}
	if got := packageOf(root); got != "." {
		t.Errorf("packageOf(root) = %q, want .", got)
	}
}

// A measured command keeps its exit status and is recorded with it.
func TestMeasureKeepsExitStatus(t *testing.T) {
	for _, tc := range []struct {
		script string
		want   int
	}{
		{"exit 0", 0},
		{"exit 3", 3},
		{"kill -TERM $$", 128 + 15},
	} {
		rec, code := measure([]string{"sh", "-c", tc.script}, process{})
		if code != tc.want || rec.Exit != tc.want {
			t.Errorf("%q: exit %d (recorded %d), want %d", tc.script, code, rec.Exit, tc.want)
		}
		if rec.Wall <= 0 {
			t.Errorf("%q: wall time %v not measured", tc.script, rec.Wall)
		}
	}
}

func TestRecordsRoundTrip(t *testing.T) {
	dir := t.TempDir()
	in := record{Kind: kindPackage, Name: "./test/integration/rayservice", Wall: time.Minute, MaxRSS: 1 << 30, Exit: 1, Failures: []string{"[FAILED] boom"}}
	if err := writeRecord(dir, in); err != nil {
		t.Fatal(err)
	}
	out, err := readRecords(dir)
	if err != nil || len(out) != 1 || !reflect.DeepEqual(out[0], in) {
		t.Fatalf("readRecords = %+v, %v; want [%+v]", out, err, in)
	}
}

// A test binary started before the watch (an earlier phase's) is not announced again.
func TestWatchStartsAnnouncesNewBinariesOnly(t *testing.T) {
	dir := t.TempDir()
	if err := markStarted(dir, "./earlier"); err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	stop := watchStarts(dir, &out)
	if err := markStarted(dir, "./later"); err != nil {
		t.Fatal(err)
	}
	stop()
	if got := out.String(); strings.Contains(got, "./earlier") || !strings.Contains(got, "running ./later\n") {
		t.Errorf("announced:\n%s\nwant ./later only", got)
	}
}

// expectLines fails t unless got and want, joined by sep, are the same text.
func expectLines(t *testing.T, what string, got, want []string, sep string) {
	t.Helper()
	if g, w := strings.Join(got, sep), strings.Join(want, sep); g != w {
		t.Errorf("%s:\n%s\nwant:\n%s", what, g, w)
	}
}
