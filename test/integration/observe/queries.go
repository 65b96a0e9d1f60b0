// Package observe checks that what the chart ships for monitoring (the Grafana dashboard and
// the PrometheusRule) queries only metrics the operator registers and serves on /metrics.
package observe

import (
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
)

// Expressions of the dashboard (every panel target, rows included) and of the rule template.
func dashboardExprs(path string) ([]string, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var d struct {
		Panels     []panel `json:"panels"`
		Templating struct {
			List []struct {
				Type  string `json:"type"`
				Query any    `json:"query"`
			} `json:"list"`
		} `json:"templating"`
	}
	if err := json.Unmarshal(raw, &d); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	var out []string
	// Query variables: label_values(<series selector>, <label>) reads the selector's metric.
	for _, v := range d.Templating.List {
		q, _ := v.Query.(map[string]any)
		if v.Type != "query" || q == nil {
			continue
		}
		s, _ := q["query"].(string)
		if m := labelValues.FindStringSubmatch(s); m != nil {
			out = append(out, m[1])
		} else {
			return nil, fmt.Errorf("%s: variable query %q is not label_values(selector, label)", path, s)
		}
	}
	var walk func([]panel)
	walk = func(ps []panel) {
		for _, p := range ps {
			for _, t := range p.Targets {
				out = append(out, t.Expr)
			}
			walk(p.Panels)
		}
	}
	walk(d.Panels)
	return out, nil
}

type panel struct {
	Title   string   `json:"title"`
	Targets []target `json:"targets"`
	Panels  []panel  `json:"panels"`
}

// target is a panel's query: Grafana runs it as a range query over the dashboard's time
// range, or at its end when Instant.
type target struct {
	RefID   string `json:"refId"`
	Expr    string `json:"expr"`
	Instant bool   `json:"instant"`
}

var (
	templateAction = regexp.MustCompile(`\{\{.*?\}\}`)
	labelValues    = regexp.MustCompile(`^label_values\((.+),\s*[A-Za-z_][A-Za-z0-9_]*\)$`)
)

// ruleExprs reads the expr fields of a PrometheusRule template (one line, or a |- block),
// with Helm's template actions removed: what is left is the PromQL around them.
func ruleExprs(path string) ([]string, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out []string
	lines := strings.Split(string(raw), "\n")
	for i := 0; i < len(lines); i++ {
		l := strings.TrimSpace(lines[i])
		rest, ok := strings.CutPrefix(l, "expr:")
		if !ok {
			continue
		}
		rest = strings.TrimSpace(rest)
		if rest == "|-" || rest == "|" {
			indent := -1
			var block []string
			for i+1 < len(lines) {
				next := lines[i+1]
				n := len(next) - len(strings.TrimLeft(next, " "))
				if strings.TrimSpace(next) != "" && indent < 0 {
					indent = n
				}
				if strings.TrimSpace(next) != "" && n < indent {
					break
				}
				block = append(block, next)
				i++
			}
			rest = strings.Join(block, "\n")
		}
		out = append(out, templateAction.ReplaceAllString(rest, ""))
	}
	return out, nil
}

var (
	quoted    = regexp.MustCompile(`"(?:[^"\\]|\\.)*"`)
	matchers  = regexp.MustCompile(`\{[^{}]*\}`)
	ranges    = regexp.MustCompile(`\[[^\]]*\]`)
	grouping  = regexp.MustCompile(`\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)`)
	ident     = regexp.MustCompile(`[A-Za-z_:][A-Za-z0-9_:]*`)
	keywords  = []string{"and", "or", "unless", "bool", "offset", "by", "without", "on", "ignoring", "group_left", "group_right", "inf", "nan"}
	histogram = regexp.MustCompile(`_(bucket|count|sum)$`)
)

// metricNames are the metric names a PromQL expression selects: what is left once strings,
// label matchers, ranges, grouping clauses, function calls, keywords and numbers are taken
// out. (Prometheus's parser is not a dependency of this module.)
func metricNames(expr string) []string {
	e := quoted.ReplaceAllString(expr, `""`)
	for prev := ""; prev != e; {
		prev, e = e, matchers.ReplaceAllString(e, " ")
	}
	e = ranges.ReplaceAllString(e, " ")
	e = grouping.ReplaceAllString(e, " ")
	var out []string
	for _, loc := range ident.FindAllStringIndex(e, -1) {
		name := e[loc[0]:loc[1]]
		if loc[0] > 0 && (e[loc[0]-1] == '$' || (e[loc[0]-1] >= '0' && e[loc[0]-1] <= '9') || e[loc[0]-1] == '.') {
			continue // a Grafana variable, or the exponent/unit of a number
		}
		if after := strings.TrimLeft(e[loc[1]:], " \t\n"); strings.HasPrefix(after, "(") {
			continue // a function
		}
		if slices.Contains(keywords, strings.ToLower(name)) {
			continue
		}
		if !slices.Contains(out, name) {
			out = append(out, name)
		}
	}
	return out
}

// family is the metric family a sample name belongs to (a histogram's _bucket, _count and
// _sum belong to the histogram).
func family(name string, served map[string]bool) string {
	if served[name] {
		return name
	}
	if base := histogram.ReplaceAllString(name, ""); base != name {
		return base
	}
	return name
}
