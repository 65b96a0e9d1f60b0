package main

import (
	"fmt"
	"go/ast"
	"path"
	"regexp"
	"slices"
	"strings"
)

// finding is one stale claim.
type finding struct {
	path string
	line int
	msg  string
}

func (f finding) String() string { return fmt.Sprintf("%s:%d: %s", f.path, f.line, f.msg) }

// checker checks documents against the facts.
type checker struct {
	facts facts
	// doc returns a Markdown file of the repository by path (for the anchors of links to it).
	doc func(path string) (doc, bool)
	out []finding
}

// check returns the stale claims of docs, in document order.
func check(docs []doc, f facts, load func(path string) (doc, bool)) []finding {
	c := &checker{facts: f, doc: load}
	for _, d := range docs {
		c.checkDoc(d)
	}
	return c.out
}

func (c *checker) report(d doc, l line, format string, args ...any) {
	c.out = append(c.out, finding{path: d.path, line: l.n, msg: fmt.Sprintf(format, args...)})
}

// checkDoc checks one document: fenced lines as commands, paragraphs (links, code spans,
// flags) as blocks, and every line for paths, Helm values, keys and tests.
func (c *checker) checkDoc(d doc) {
	lines := maskKubeRayColumns(d.lines)
	var cont string    // the program a fenced line continued with `\` belongs to
	var heading string // the section's heading: context for bare flags
	for i := 0; i < len(lines); {
		l := lines[i]
		end := i + 1
		switch {
		case l.heading:
			heading = l.text
		case l.fenced:
			cmd := l.text
			if strings.HasPrefix(strings.TrimSpace(cmd), "#") {
				cont = "" // a shell comment: prose, checked for paths and keys below
			} else {
				last := c.checkCommand(d, l, cmd, cont, heading)
				cont = ""
				if strings.HasSuffix(strings.TrimSpace(cmd), `\`) {
					cont = last
				}
			}
		case l.text != "":
			// A paragraph (or a table row): code spans may continue on the next line.
			for end < len(lines) && inParagraph(lines[end]) {
				end++
			}
			c.checkBlock(d, lines[i:end], heading)
		}
		for _, l := range lines[i:end] {
			c.checkPaths(d, l)
			c.checkValues(d, l)
			c.checkKeys(d, l)
			c.checkTests(d, l)
		}
		i = end
	}
}

// inParagraph: l continues the paragraph above it (a table row starts a block of its own).
func inParagraph(l line) bool {
	return l.text != "" && !l.fenced && !l.heading && !strings.HasPrefix(strings.TrimSpace(l.text), "|")
}

// checkBlock checks a paragraph's links, code spans and flags; findings name the line the
// link, span or flag starts on.
func (c *checker) checkBlock(d doc, block []line, heading string) {
	var text strings.Builder
	starts := make([]int, len(block))
	for k, l := range block {
		starts[k] = text.Len()
		text.WriteString(l.text)
		text.WriteByte('\n')
	}
	all := text.String()
	lineAt := func(offset int) line {
		k := len(starts) - 1
		for k > 0 && starts[k] > offset {
			k--
		}
		return block[k]
	}
	context := heading + "\n" + all
	prose := withoutCode(all)
	for _, m := range inlineLink.FindAllStringSubmatchIndex(prose, -1) {
		c.checkLink(d, lineAt(m[0]), all[m[4]:m[5]])
	}
	for _, m := range codeSpan.FindAllStringSubmatchIndex(all, -1) {
		span := strings.ReplaceAll(all[m[2]:m[3]], "\n", " ")
		c.checkCommand(d, lineAt(m[0]), span, "", context)
	}
	for _, m := range flagToken.FindAllStringSubmatchIndex(prose, -1) {
		c.checkFlag(d, lineAt(m[0]), flagUseAt(prose, m), "", context)
	}
}

var scheme = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9+.-]*:`)

// checkLink: a relative link names an existing file, and its anchor a heading of it.
func (c *checker) checkLink(d doc, l line, target string) {
	if target == "" || scheme.MatchString(target) {
		return
	}
	file, anchor, _ := strings.Cut(target, "#")
	resolved := d.path
	if file != "" {
		resolved = path.Join(path.Dir(d.path), file)
		if strings.HasPrefix(resolved, "../") || !c.facts.exists(resolved) {
			c.report(d, l, "link %s: no file %s in the repository", target, resolved)
			return
		}
	}
	c.checkAnchor(d, l, target, resolved, anchor)
}

// checkAnchor: the anchor of a link or path to a Markdown file is one of its headings'.
func (c *checker) checkAnchor(d doc, l line, named, file, anchor string) {
	if anchor == "" || !strings.HasSuffix(file, ".md") {
		return
	}
	if anchor != strings.ToLower(anchor) {
		c.report(d, l, "%s: GitHub's anchors are lower case", named)
		return
	}
	target, ok := d, true
	if file != d.path {
		target, ok = c.doc(file)
	}
	if !ok || !target.anchors[anchor] {
		c.report(d, l, "%s: %s has no heading with anchor #%s", named, file, anchor)
	}
}

var repoPath = regexp.MustCompile(`(?:^|[\s(\x60"'\[=,])(?:\./)?((?:cmd|apis|webhooks|controllers|config|charts|test|hack|internal|docs)/[A-Za-z0-9_./*{}<>$#@-]*)`)

var goSymbol = regexp.MustCompile(`\.[A-Z]\w*$`)

// linkTarget blanks link targets, which checkLink checks relative to the document.
var linkTarget = regexp.MustCompile(`\]\([^)]*\)`)

// checkPaths: every repository path named exists (globs allowed; a Markdown file's anchor too).
func (c *checker) checkPaths(d doc, l line) {
	text := linkTarget.ReplaceAllString(l.text, "]()")
	for _, m := range repoPath.FindAllStringSubmatch(text, -1) {
		p := strings.TrimRight(m[1], ".,:;")
		p = strings.TrimSuffix(strings.TrimSuffix(p, "..."), "/")
		if p == "" || strings.ContainsAny(p, "<>{}$@") {
			continue // a placeholder or a pattern, not a path
		}
		p = goSymbol.ReplaceAllString(p, "") // internal/version.Version: a package's identifier
		file, anchor, _ := strings.Cut(p, "#")
		if !c.facts.exists(file) {
			c.report(d, l, "%s: no such file or directory in the repository", file)
			continue
		}
		c.checkAnchor(d, l, p, file, anchor)
	}
}

var (
	makeCall = regexp.MustCompile(`(?:^|[\s;&|(])make((?:\s+[^\s;&|)]+)*)`)
	word     = regexp.MustCompile(`^[a-z][a-z0-9_-]*$`)
)

// makeTargetsOf are the targets of the make invocations in a command line.
func makeTargetsOf(cmd string) []string {
	var out []string
	for _, m := range makeCall.FindAllStringSubmatch(cmd, -1) {
		for _, f := range strings.Fields(m[1]) {
			if strings.HasPrefix(f, "-") {
				continue
			}
			if !word.MatchString(f) {
				break
			}
			out = append(out, f)
		}
	}
	return out
}

// checkCommand checks one command line (a fenced line or a code span): its make targets and
// flags. It returns the program of its last command (for a continued line).
func (c *checker) checkCommand(d doc, l line, cmd, inherited, context string) string {
	for _, t := range makeTargetsOf(cmd) {
		if !c.facts.targets[t] {
			c.report(d, l, "make %s: the Makefile has no target %s", t, t)
		}
	}
	if code, comment, ok := strings.Cut(cmd, " #"); ok {
		cmd = code // a shell comment is prose: its flags are bare mentions
		for _, m := range flagToken.FindAllStringSubmatchIndex(comment, -1) {
			c.checkFlag(d, l, flagUseAt(comment, m), "", context)
		}
	}
	last := inherited
	for i, seg := range segments(cmd) {
		prog := programOf(seg)
		if i == 0 && inherited != "" {
			prog = inherited
		}
		last = prog
		for _, m := range flagToken.FindAllStringSubmatchIndex(seg, -1) {
			p, use := prog, flagUseAt(seg, m)
			if m[2] >= 3 && strings.ContainsAny(seg[m[2]-3:m[2]-2], `"'`) && !c.hasFlag(prog, use.name) {
				p = "" // a quoted flag may be an argument for another program ("value":"--flag")
			}
			c.checkFlag(d, l, use, p, context)
		}
	}
	return last
}

// checkFlag: a flag of prog, or (prog "": a bare mention) of the manager or of a program the
// paragraph or its section's heading is about. A value given to a manager flag must be one
// the manager accepts.
func (c *checker) checkFlag(d doc, l line, use flagUse, prog, context string) {
	progs := []string{prog}
	if prog == "" {
		progs = append([]string{manager}, mentioned(context)...)
	}
	for _, p := range progs {
		if !c.hasFlag(p, use.name) {
			continue
		}
		if p == manager && literalValue.MatchString(use.value) && !placeholder.MatchString(use.value) && c.facts.flagValue != nil {
			if problem := c.facts.flagValue(use.name, use.value); problem != "" {
				c.report(d, l, "--%s=%s: %s", use.name, use.value, problem)
			}
		}
		return
	}
	c.report(d, l, "--%s is not a flag of %s", use.name, strings.Join(progs, " or "))
}

// literalValue is a flag value written out, not a placeholder (<name>, …, {a,b}, $VAR).
// placeholder: an upper-case word (N, NAME) stands for a value.
var (
	literalValue = regexp.MustCompile(`^[A-Za-z0-9_.:/,=-]+$`)
	placeholder  = regexp.MustCompile(`^[A-Z]+$`)
)

// hasFlag: prog has the flag; a name ending in "-" (--max-pods-per-*) is a prefix of one.
func (c *checker) hasFlag(prog, flag string) bool {
	if flag == "help" {
		return true // every program has --help
	}
	set := c.facts.flags[prog]
	if set == nil {
		set = externalFlags[prog]
	}
	if prefix, ok := strings.CutSuffix(flag, "-"); ok {
		for f := range set {
			if strings.HasPrefix(f, prefix+"-") {
				return true
			}
		}
		return false
	}
	return set[flag]
}

// flagToken is a long flag and the value written after "=", if any; dots are part of some
// programs' flag names (Traefik's --metrics.prometheus).
var flagToken = regexp.MustCompile(`(?:^|[^\w-])--([a-z][a-z0-9.-]*)(?:=([^\s\x60"'(),;|\]]*))?`)

// flagUse is a flag named in a document, with the value it is given ("" when none).
type flagUse struct{ name, value string }

// flagUseAt reads the flagToken match m of text.
func flagUseAt(text string, m []int) flagUse {
	use := flagUse{name: strings.TrimRight(text[m[2]:m[3]], ".")}
	if m[4] >= 0 {
		use.value = strings.TrimRight(text[m[4]:m[5]], ".")
	}
	return use
}

var (
	setFlag     = regexp.MustCompile(`--set(?:-string|-json|-file|-literal)?[= ]+['"]?([^\s'"]+)`)
	valuesRef   = regexp.MustCompile(`\.Values\.([a-zA-Z][\w.]*)`)
	helmValue   = regexp.MustCompile("(?i:helm|chart) (?i:values?) (?:\x60([a-zA-Z][\\w.\\[\\]]*)|([a-z]+[A-Z.][\\w.\\[\\]]*))")
	dottedPath  = regexp.MustCompile(`(?:^|[^\w.$/-])([a-z][a-zA-Z0-9]*(?:\[\d+\])?(?:\.[a-zA-Z][a-zA-Z0-9]*(?:\[\d+\])?)+)`)
	listIndex   = regexp.MustCompile(`\[\d+\]`)
	valueAssign = regexp.MustCompile(`^[a-zA-Z][\w.\[\]-]*$`)
)

// checkValues: every Helm value path named exists in values.yaml or values.schema.json.
func (c *checker) checkValues(d doc, l line) {
	var named []string
	for _, m := range setFlag.FindAllStringSubmatch(l.text, -1) {
		for _, a := range strings.Split(m[1], ",") {
			if key, _, ok := strings.Cut(a, "="); ok && valueAssign.MatchString(key) {
				named = append(named, key)
			}
		}
	}
	for _, re := range []*regexp.Regexp{valuesRef, helmValue} {
		for _, m := range re.FindAllStringSubmatch(l.text, -1) {
			named = append(named, strings.TrimRight(m[1]+m[len(m)-1], "."))
		}
	}
	for _, m := range dottedPath.FindAllStringSubmatch(l.text, -1) {
		// A fenced block shows manifests and output, whose dotted names are fields.
		if !l.fenced && c.looksLikeValue(m[1]) {
			named = append(named, m[1])
		}
	}
	seen := map[string]bool{}
	for _, p := range named {
		p = listIndex.ReplaceAllString(p, "")
		if seen[p] {
			continue
		}
		seen[p] = true
		if !c.isValue(p) {
			c.report(d, l, "Helm value %s: not in charts/raygate/values.yaml or values.schema.json", p)
		}
	}
}

// looksLikeValue: a dotted name whose first part is a top-level value (or one with an "s"
// added or dropped, the commonest slip) and whose parts are not Go identifiers
// (webhooks.DefaultBudget).
func (c *checker) looksLikeValue(p string) bool {
	p = listIndex.ReplaceAllString(p, "")
	for _, part := range strings.Split(p, ".") {
		if ast.IsExported(part) {
			return false
		}
	}
	first, _, _ := strings.Cut(p, ".")
	return c.facts.values[first] || c.facts.values[first+"s"] || c.facts.values[strings.TrimSuffix(first, "s")]
}

func (c *checker) isValue(p string) bool {
	if c.facts.values[p] {
		return true
	}
	for prefix := p; strings.Contains(prefix, "."); {
		prefix = prefix[:strings.LastIndex(prefix, ".")]
		if c.facts.open[prefix] {
			return true
		}
	}
	return false
}

var (
	rayKey     = regexp.MustCompile(`(?:^|[^a-zA-Z0-9.\-/])((?:raygate\.)?ray\.io/[a-zA-Z0-9][a-zA-Z0-9._-]*)(\*?)`)
	apiVersion = regexp.MustCompile(`/v\d+((alpha|beta)\d+)?$`)
)

// checkKeys: every ray.io/ and raygate.ray.io/ annotation or label named is a constant of
// the code.
func (c *checker) checkKeys(d doc, l line) {
	for _, m := range rayKey.FindAllStringSubmatch(l.text, -1) {
		key := strings.TrimRight(m[1], ".-_")
		if m[2] == "*" || apiVersion.MatchString(key) {
			continue
		}
		if !c.facts.keys[key] && !notKeys[key] {
			c.report(d, l, "%s: no constant of the code has this key", key)
		}
	}
}

var testName = regexp.MustCompile(`\b((?:Test|Benchmark|Fuzz)[A-Z]\w*)`)

// checkTests: every Go test function named exists.
func (c *checker) checkTests(d doc, l line) {
	for _, m := range testName.FindAllStringSubmatch(l.text, -1) {
		if !c.facts.tests[m[1]] && !kubeRayTests[m[1]] {
			c.report(d, l, "%s: no Go test function of the repository has this name", m[1])
		}
	}
}

// sortFindings orders findings by file and line.
func sortFindings(fs []finding) {
	slices.SortStableFunc(fs, func(a, b finding) int {
		if a.path != b.path {
			return strings.Compare(a.path, b.path)
		}
		return a.line - b.line
	})
}

var tableDelimiter = regexp.MustCompile(`^\s*\|(\s*:?-+:?\s*\|)+\s*$`)

// maskKubeRayColumns blanks the cells of table columns whose header starts with "KubeRay"
// (the migration guide's "KubeRay value | raygate value"): they name KubeRay's flags, values
// and tests, not raygate's.
func maskKubeRayColumns(lines []line) []line {
	out := slices.Clone(lines)
	var masked []bool
	for i, l := range out {
		if !strings.HasPrefix(strings.TrimSpace(l.text), "|") || l.fenced {
			masked = nil
			continue
		}
		if i+1 < len(out) && tableDelimiter.MatchString(out[i+1].text) {
			masked = nil
			for _, cell := range tableCells(l.text) {
				masked = append(masked, strings.HasPrefix(strings.TrimSpace(cell), "KubeRay"))
			}
			continue
		}
		if !slices.Contains(masked, true) {
			continue
		}
		cells := tableCells(l.text)
		for k, cell := range cells {
			if k < len(masked) && masked[k] {
				cells[k] = strings.Repeat(" ", len(cell))
			}
		}
		out[i].text = "|" + strings.Join(cells, "|") + "|"
	}
	return out
}

// tableCells splits a table row at its unescaped pipes (outside code spans `a \| b`).
func tableCells(row string) []string {
	row = strings.TrimSpace(row)
	row = strings.TrimSuffix(strings.TrimPrefix(row, "|"), "|")
	var cells []string
	start := 0
	for i := 0; i < len(row); i++ {
		if row[i] == '\\' {
			i++
			continue
		}
		if row[i] == '|' {
			cells = append(cells, row[start:i])
			start = i + 1
		}
	}
	return append(cells, row[start:])
}
