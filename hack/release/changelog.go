package main

import (
	"fmt"
	"regexp"
	"strings"
)

// The CHANGELOG.md shape the release step reads and writes (Keep a Changelog 1.1): a
// "## [Unreleased]" section, then one "## [X.Y.Z] - YYYY-MM-DD" section per release, newest
// first, and link references at the bottom.
const unreleasedHeading = "## [Unreleased]"

var (
	semverRE  = regexp.MustCompile(`^v(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(-[0-9A-Za-z.-]+)?$`)
	dateRE    = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}$`)
	headingRE = regexp.MustCompile(`(?m)^## `)
	linkRefRE = regexp.MustCompile(`(?m)^\[[^\]]+\]: \S+[ \t]*$`)
	compareRE = regexp.MustCompile(`(?m)^\[Unreleased\]: (\S+)/compare/(\S+)\.\.\.HEAD[ \t]*$`)
	firstRE   = regexp.MustCompile(`(?m)^\[Unreleased\]: (\S+)/commits/HEAD[ \t]*$`)
)

// ChartVersion is the chart's SemVer for a release tag vX.Y.Z[-pre] (Helm wants no "v").
func ChartVersion(version string) (string, error) {
	if !semverRE.MatchString(version) {
		return "", fmt.Errorf("VERSION %q is not a release version: want vMAJOR.MINOR.PATCH (e.g. v0.2.0 or v0.2.0-rc.1)", version)
	}
	return strings.TrimPrefix(version, "v"), nil
}

// ReleaseChangelog turns the Unreleased section of a changelog into version's section dated
// date, under a new empty Unreleased section, and returns the new text and the version's
// section (the release notes). A changelog that already has the version's section is
// returned unchanged with that section, so a release can be re-run; an empty Unreleased
// section is an error (a release says what changed).
func ReleaseChangelog(text, version, date string) (string, string, error) {
	if !dateRE.MatchString(date) {
		return "", "", fmt.Errorf("release date %q: want YYYY-MM-DD", date)
	}
	heading := "## [" + version + "]"
	if start, end, ok := section(text, heading); ok {
		return text, strings.TrimRight(text[start:end], "\n") + "\n", nil
	}
	start, end, ok := section(text, unreleasedHeading)
	if !ok {
		return "", "", fmt.Errorf("no %q section line in the changelog", unreleasedHeading)
	}
	body := strings.Trim(text[start+len(unreleasedHeading):end], "\n")
	if strings.TrimSpace(body) == "" {
		return "", "", fmt.Errorf("the changelog's %s section is empty: say what %s changes", unreleasedHeading, version)
	}
	released := heading + " - " + date + "\n\n" + body + "\n"
	out := text[:start] + unreleasedHeading + "\n\n" + released + "\n" + text[end:]
	return relink(out, version), released, nil
}

// section finds the section whose heading line is exactly heading (or heading followed by
// " - date"): from its heading to the next "## " heading or the link references.
func section(text, heading string) (int, int, bool) {
	start := -1
	for i := 0; i < len(text); {
		line, _, _ := strings.Cut(text[i:], "\n")
		if line == heading || strings.HasPrefix(line, heading+" - ") {
			start = i
			break
		}
		i += len(line) + 1
	}
	if start < 0 {
		return 0, 0, false
	}
	after := start + len(heading)
	end := len(text)
	if loc := headingRE.FindStringIndex(text[after:]); loc != nil {
		end = after + loc[0]
	}
	if loc := linkRefRE.FindStringIndex(text[after:end]); loc != nil {
		end = after + loc[0]
	}
	return start, end, true
}

// relink points the Unreleased link reference at the comparison from the new version, and
// adds the version's own: "[Unreleased]: <repo>/compare/<prev>...HEAD" (or, before the first
// release, "<repo>/commits/HEAD") becomes "[Unreleased]: <repo>/compare/v<new>...HEAD" and
// "[<new>]: <repo>/compare/<prev>...v<new>" (or "<repo>/releases/tag/v<new>").
func relink(text, version string) string {
	var m []int
	var own string
	if m = compareRE.FindStringSubmatchIndex(text); m != nil {
		own = fmt.Sprintf("%s/compare/%s...v%s", text[m[2]:m[3]], text[m[4]:m[5]], version)
	} else if m = firstRE.FindStringSubmatchIndex(text); m != nil {
		own = fmt.Sprintf("%s/releases/tag/v%s", text[m[2]:m[3]], version)
	} else {
		return text
	}
	line := fmt.Sprintf("[Unreleased]: %s/compare/v%s...HEAD\n[%s]: %s", text[m[2]:m[3]], version, version, own)
	return text[:m[0]] + line + text[m[1]:]
}
