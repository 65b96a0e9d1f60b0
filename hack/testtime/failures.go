package main

import (
	"bytes"
	"fmt"
	"regexp"
	"strings"
	"sync"
)

// Bounds of what one package's digest keeps: a failure's message, not its whole output.
const (
	maxFailures        = 6
	maxLinesPerFailure = 24
)

// ansiEscape matches the terminal colour codes ginkgo writes.
var ansiEscape = regexp.MustCompile(`\x1b\[[0-9;]*m`)

// failureDigest collects, from a test binary's output as it passes through, why it failed:
// each ginkgo [FAILED], [PANICKED] or [TIMEDOUT] message up to its "In [It] at:" line,
// each go test "--- FAIL" line with the indented lines under it, and the first lines of a
// panic. make test prints them under its table, so the end of a failed run says why and
// not only where: a ginkgo spec's timeline (thousands of log lines) comes before its message,
// and a CI log cut to its start and end loses it.
type failureDigest struct {
	mu      sync.Mutex
	partial []byte   // the unfinished last line
	block   []string // the failure being read
	indent  int      // "--- FAIL" blocks: the indentation of their first line
	kind    blockKind
	// spec is the ginkgo spec whose failure header ("• [FAILED] [2.1 seconds]") was read
	// last; its name is the next line.
	spec        string
	specPending bool
	failures    []string
	seen        map[string]bool
}

type blockKind int

const (
	noBlock blockKind = iota
	ginkgoBlock
	goTestBlock
	panicBlock
)

func (d *failureDigest) Write(p []byte) (int, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.partial = append(d.partial, p...)
	for {
		i := bytes.IndexByte(d.partial, '\n')
		if i < 0 {
			break
		}
		d.line(string(d.partial[:i]))
		d.partial = d.partial[i+1:]
	}
	return len(p), nil
}

// Failures are the messages found, each once (ginkgo prints a message in the spec's
// timeline and again after it), the last unfinished one included.
func (d *failureDigest) Failures() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.partial) > 0 {
		d.line(string(d.partial))
		d.partial = nil
	}
	d.finish()
	return d.failures
}

func (d *failureDigest) line(raw string) {
	text := strings.TrimRight(ansiEscape.ReplaceAllString(raw, ""), " \r\t")
	trimmed := strings.TrimLeft(text, " \t")
	indent := len(text) - len(trimmed)
	if d.specPending && trimmed != "" {
		d.spec, d.specPending = trimmed, false
	}
	switch d.kind {
	case ginkgoBlock:
		d.add(text[min(indent, d.indent):]) // the message's own indentation kept
		if strings.HasPrefix(trimmed, "In [") && strings.Contains(trimmed, "] at: ") {
			d.finish()
		}
		return
	case goTestBlock:
		if indent > d.indent && trimmed != "" {
			d.add(trimmed)
			return
		}
		d.finish()
	case panicBlock:
		if trimmed == "" {
			d.finish()
			return
		}
		d.add(trimmed)
		return
	}
	switch {
	case hasAnyPrefix(trimmed, "• [FAILED]", "• [PANICKED]", "• [TIMEDOUT]"):
		d.specPending = true
	case hasAnyPrefix(trimmed, "[FAILED] in [", "[PANICKED] in [", "[TIMEDOUT] in ["):
		// the timeline's marker of where the failure happened; the message follows the timeline
	case hasAnyPrefix(trimmed, "[FAILED]", "[PANICKED]", "[TIMEDOUT]"):
		d.start(ginkgoBlock, indent, trimmed)
		if d.spec != "" {
			d.block = append([]string{d.spec}, d.block...)
		}
	case strings.HasPrefix(trimmed, "--- FAIL:"):
		d.start(goTestBlock, indent, trimmed)
	case strings.HasPrefix(text, "panic: "):
		d.start(panicBlock, indent, trimmed)
	}
}

func (d *failureDigest) start(kind blockKind, indent int, first string) {
	d.kind, d.indent, d.block = kind, indent, []string{first}
}

func (d *failureDigest) add(line string) {
	if len(d.block) < maxLinesPerFailure {
		d.block = append(d.block, line)
	} else if len(d.block) == maxLinesPerFailure {
		d.block = append(d.block, "…")
	}
}

func (d *failureDigest) finish() {
	if d.kind == noBlock {
		return
	}
	text := strings.Join(d.block, "\n")
	headerOnly := d.kind == goTestBlock && len(d.block) == 1 // a ginkgo suite's "--- FAIL: TestX": its message is in the ginkgo blocks
	d.kind, d.block = noBlock, nil
	if headerOnly {
		return
	}
	if d.seen == nil {
		d.seen = map[string]bool{}
	}
	if d.seen[text] || len(d.failures) >= maxFailures {
		return
	}
	d.seen[text] = true
	d.failures = append(d.failures, text)
}

func hasAnyPrefix(s string, prefixes ...string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

// formatFailures lists, under the table, each failed package with the messages found in its
// output ("" when none failed).
func formatFailures(recs []record) string {
	var b strings.Builder
	for _, r := range recs {
		if r.Kind != kindPackage || r.Exit == 0 {
			continue
		}
		if b.Len() == 0 {
			b.WriteString("\ntesttime: why each failed package failed (from its output above)\n")
		}
		fmt.Fprintf(&b, "%s (%s):\n", r.Name, result(r.Exit))
		if len(r.Failures) == 0 {
			b.WriteString("    no failure message found in its output\n")
		}
		for _, f := range r.Failures {
			for _, l := range strings.Split(f, "\n") {
				fmt.Fprintf(&b, "    %s\n", l)
			}
		}
	}
	return b.String()
}
