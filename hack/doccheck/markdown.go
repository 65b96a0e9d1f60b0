package main

import (
	"regexp"
	"strconv"
	"strings"
	"unicode"
)

// line is one line of a document as the checks see it.
type line struct {
	// n is the 1-based line number in the file.
	n int
	// text is the line (for values.yaml: only its comment).
	text string
	// fenced: the line is inside a fenced code block.
	fenced bool
	// heading: the line is a Markdown heading (its anchor is in doc.anchors).
	heading bool
}

// doc is one checked file.
type doc struct {
	// path is relative to the repository root, with slashes.
	path  string
	lines []line
	// anchors are the fragment names a link to this file may use.
	anchors map[string]bool
}

var (
	fence       = regexp.MustCompile("^\\s*(```|~~~)")
	atxHeading  = regexp.MustCompile(`^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$`)
	htmlAnchor  = regexp.MustCompile(`<a\s+(?:id|name)="([^"]+)"`)
	inlineLink  = regexp.MustCompile(`!?\[([^\]]*)\]\(([^)\s]*)(?:\s+"[^"]*")?\)`)
	htmlTag     = regexp.MustCompile(`<[^>]+>`)
	codeSpan    = regexp.MustCompile("`+([^`]+)`+")
	yamlComment = regexp.MustCompile(`(^|\s)#(.*)$`)
)

// parseMarkdown splits a Markdown file into lines and collects its anchors.
func parseMarkdown(path, text string) doc {
	d := doc{path: path, anchors: map[string]bool{}}
	slugs := map[string]int{}
	inFence := false
	for i, t := range strings.Split(text, "\n") {
		l := line{n: i + 1, text: t}
		if fence.MatchString(t) {
			inFence = !inFence
			l.fenced = true
		} else if inFence {
			l.fenced = true
		} else if m := atxHeading.FindStringSubmatch(t); m != nil {
			l.heading = true
			d.anchors[uniqueSlug(slugs, headingSlug(m[2]))] = true
		}
		if !l.fenced {
			for _, m := range htmlAnchor.FindAllStringSubmatch(t, -1) {
				d.anchors[m[1]] = true
			}
		}
		d.lines = append(d.lines, l)
	}
	return d
}

// parseValuesComments keeps only the comments of a YAML file: they are prose.
func parseValuesComments(path, text string) doc {
	d := doc{path: path, anchors: map[string]bool{}}
	for i, t := range strings.Split(text, "\n") {
		l := line{n: i + 1}
		if m := yamlComment.FindStringSubmatch(t); m != nil && !insideQuotes(t, len(t)-len(m[0])) {
			l.text = m[2]
		}
		d.lines = append(d.lines, l)
	}
	return d
}

// insideQuotes: position i of t is inside a quoted YAML scalar (a '#' there is no comment).
func insideQuotes(t string, i int) bool {
	return strings.Count(t[:i], `"`)%2 == 1 || strings.Count(t[:i], `'`)%2 == 1
}

// headingSlug is GitHub's anchor of a heading: the rendered text, lower-cased, without
// characters other than letters, marks, digits, connector punctuation, spaces and hyphens,
// each space a hyphen.
func headingSlug(heading string) string {
	text := inlineLink.ReplaceAllString(heading, "$1")
	text = htmlTag.ReplaceAllString(text, "")
	var b strings.Builder
	for _, r := range strings.ToLower(text) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.Is(unicode.Mn, r) ||
			unicode.Is(unicode.Mc, r) || unicode.Is(unicode.Pc, r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// uniqueSlug numbers repeated headings as GitHub does: x, x-1, x-2.
func uniqueSlug(seen map[string]int, slug string) string {
	n, ok := seen[slug]
	seen[slug] = n + 1
	if !ok {
		return slug
	}
	return slug + "-" + strconv.Itoa(n)
}

// withoutCode blanks the code spans of prose (links inside code are not links), keeping
// every offset and line break.
func withoutCode(text string) string {
	return codeSpan.ReplaceAllStringFunc(text, func(s string) string {
		b := []byte(s)
		for i := range b {
			if b[i] != '\n' {
				b[i] = ' '
			}
		}
		return string(b)
	})
}
