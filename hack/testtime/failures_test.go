package main

import (
	"os"
	"strings"
	"testing"
	"time"
)

func digestOf(t *testing.T, path string, chunk int) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var d failureDigest
	for len(b) > 0 { // written in pieces that split lines, as a pipe delivers them
		n := min(chunk, len(b))
		if _, err := d.Write(b[:n]); err != nil {
			t.Fatal(err)
		}
		b = b[n:]
	}
	return d.Failures()
}

// A ginkgo failure's message comes after the spec's timeline: the digest keeps the spec's
// name and the message up to its location, once, without colour codes or the timeline.
func TestDigestOfGinkgoFailure(t *testing.T) {
	got := digestOf(t, "testdata/ginkgo-failure.txt", 7)
	want := []string{strings.Join([]string{
		"thing [It] fails",
		"[FAILED] admission requests refused:",
		"a",
		"b",
		"Expected",
		"    <[]string | len:1, cap:1>: [",
		`        "refused: context deadline exceeded",`,
		"    ]",
		"to be empty",
		"In [It] at: /src/test/integration/faults/x_test.go:16 @ 11/29/26 21:43:36.653",
	}, "\n")}
	expectLines(t, "digest", got, want, "\n---\n")
}

// go test's failures: each top-level "--- FAIL" with what is indented under it, and a panic's
// first lines.
func TestDigestOfGoTestFailures(t *testing.T) {
	got := digestOf(t, "testdata/gotest-failure.txt", 4096)
	want := []string{
		"--- FAIL: TestParent (0.01s)\n--- FAIL: TestParent/empty_name (0.00s)\ndecode_test.go:41: got \"x\", want \"\"\nsecond line of the message",
		"--- FAIL: TestOther (0.00s)\nother_test.go:9: budget 300 allocations, used 301",
		"panic: runtime error: index out of range [3] with length 3",
	}
	expectLines(t, "digest", got, want, "\n---\n")
}

// A message never grows past its bound, and a package never lists more than maxFailures.
func TestDigestIsBounded(t *testing.T) {
	var d failureDigest
	for i := range maxFailures + 3 {
		_, _ = d.Write([]byte("--- FAIL: TestX" + strings.Repeat("I", i) + " (0.00s)\n"))
		for range 3 * maxLinesPerFailure {
			_, _ = d.Write([]byte("    x_test.go:1: again\n"))
		}
	}
	got := d.Failures()
	if len(got) != maxFailures {
		t.Fatalf("%d failures kept, want %d", len(got), maxFailures)
	}
	for _, f := range got {
		if n := strings.Count(f, "\n") + 1; n != maxLinesPerFailure+1 || !strings.HasSuffix(f, "…") {
			t.Errorf("a failure of %d lines (want %d, the last one …)", n, maxLinesPerFailure+1)
		}
	}
}

// Under the table: each failed package with its messages, or a line saying none was found;
// passing packages and phases are not listed; nothing at all when everything passed.
func TestFormatFailures(t *testing.T) {
	recs := []record{
		{Kind: kindPhase, Name: "go test", Exit: 1},
		{Kind: kindPackage, Name: "./ok", Wall: time.Second},
		{Kind: kindPackage, Name: "./a", Exit: 1, Failures: []string{"spec [It] x\n[FAILED] boom\nIn [It] at: a.go:3"}},
		{Kind: kindPackage, Name: "./b", Exit: 2},
	}
	got := formatFailures(recs)
	for _, want := range []string{"./a (FAIL (exit 1)):\n    spec [It] x\n    [FAILED] boom\n    In [It] at: a.go:3\n", "./b (FAIL (exit 2)):\n    no failure message found in its output\n"} {
		if !strings.Contains(got, want) {
			t.Errorf("failures:\n%s\nwant it to contain:\n%s", got, want)
		}
	}
	if strings.Contains(got, "./ok") || strings.Contains(got, "go test") {
		t.Errorf("lists what did not fail:\n%s", got)
	}
	if got := formatFailures(recs[:2]); got != "" {
		t.Errorf("everything passed, yet:\n%s", got)
	}
}
