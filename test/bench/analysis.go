package main

import (
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"text/template"

	"github.com/raygate/raygate/controllers/raycluster"
	"github.com/raygate/raygate/internal/app"
)

// The analysis (test/bench/analysis.md) is a text/template over the run's results, so every
// figure in its prose is the one in the tables of the same run: the hand-written text says
// how things work, the template fills in how much. TestAnalysisHasNoHandWrittenFigures
// refuses a digit written outside a template action.

// notMeasured stands in for a figure the results do not have (a scenario not run, or a
// results.json from before the field existed): never an invented figure.
const notMeasured = "not measured in this run"

// renderAnalysis executes the analysis template over r.
func renderAnalysis(text string, r *results) (string, error) {
	doc, err := resultsDoc(r)
	if err != nil {
		return "", err
	}
	t, err := template.New("analysis.md").Option("missingkey=error").Funcs(analysisFuncs(doc)).Parse(text)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	if err := t.Execute(&b, doc); err != nil {
		return "", err
	}
	return b.String(), nil
}

// resultsDoc is r in its JSON form, which the template's paths name.
func resultsDoc(r *results) (any, error) {
	b, err := json.Marshal(r)
	if err != nil {
		return nil, err
	}
	var doc any
	return doc, json.Unmarshal(b, &doc)
}

// analysisFuncs are the template's functions. A path names a value in results.json by its
// JSON keys, separated by dots; in a list, a segment selects by the element's "clusters"
// (scale runs: "1000" is the general-stages run, "1000-fast" the fast one), "concurrency"
// (sweep runs) or "name" (Go benchmarks).
//
//	{{fig "scale.1000.raygate.seconds" 1 "s"}}      63.8 s
//	{{ratio "scale.1000.raygate.seconds" "scale.1000.reference.seconds"}}   1.53×
//	{{count "scale.1000.clusters"}}                 1,000
func analysisFuncs(doc any) template.FuncMap {
	num := func(path string) (float64, bool) { return lookupNumber(doc, path) }
	return template.FuncMap{
		// fig is the value at path with prec decimals and an optional unit.
		"fig": func(path string, prec int, unit ...string) string {
			v, ok := num(path)
			if !ok {
				return notMeasured
			}
			return withUnit(strconv.FormatFloat(v, 'f', prec, 64), unit)
		},
		// count is an integer with thousands separators.
		"count": func(path string) string {
			v, ok := num(path)
			if !ok {
				return notMeasured
			}
			return thousands(int64(math.Round(v)))
		},
		// ratio is a ÷ b with two decimals and ×.
		"ratio": func(a, b string) string {
			x, okA := num(a)
			y, okB := num(b)
			if !okA || !okB || y == 0 {
				return notMeasured
			}
			return f2(x/y) + "×"
		},
		// ms is a value in nanoseconds (a Go benchmark's) in milliseconds, with prec decimals.
		"ms": func(path string, prec int) string {
			v, ok := num(path)
			if !ok {
				return notMeasured
			}
			return strconv.FormatFloat(v/1e6, 'f', prec, 64) + " ms"
		},
		// diff is a − b with prec decimals and an optional unit.
		"diff": func(a, b string, prec int, unit ...string) string {
			x, okA := num(a)
			y, okB := num(b)
			if !okA || !okB {
				return notMeasured
			}
			return withUnit(strconv.FormatFloat(x-y, 'f', prec, 64), unit)
		},
		// percent is a ÷ b as a percentage with no decimals.
		"percent": func(a, b string) string {
			x, okA := num(a)
			y, okB := num(b)
			if !okA || !okB || y == 0 {
				return notMeasured
			}
			return fmt.Sprintf("%.0f%%", 100*x/y)
		},
		// has reports whether path holds a number: for prose that only makes sense when a
		// scenario ran.
		"has": func(path string) bool { _, ok := num(path); return ok },
		// constant is a setting of the operator or the harness the prose names.
		"constant": func(name string) string {
			v, ok := analysisConstants()[name]
			if !ok {
				return notMeasured
			}
			return v
		},
	}
}

// analysisConstants are settings of the harness and the operator that the prose names; they
// come from the code, not from the run.
func analysisConstants() map[string]string {
	return map[string]string{
		"defaultConcurrency":     strconv.Itoa(defaultConcurrency()),
		"admissionConcurrency":   strconv.Itoa(admissionConcurrency),
		"statusCoalesce":         fmt.Sprintf("%.0f s", raycluster.DefaultStatusCoalesce.Seconds()),
		"bringUpCoalesce":        fmt.Sprintf("%.0f s", raycluster.DefaultBringUpCoalesce.Seconds()),
		"bringUpMaxWait":         fmt.Sprintf("%.0f min", raycluster.DefaultBringUpMaxWait.Minutes()),
		"targetTimeRatio":        fmt.Sprintf("≤ %s× the ReplicaSet reference", ratioText(targetTimeRatio)),
		"targetKubeRayTimeRatio": fmt.Sprintf("≤ %s× KubeRay", ratioText(targetKubeRayTimeRatio)),
		"targetWritesRatio":      fmt.Sprintf("≤ %s× the minimum", ratioText(targetWritesRatio)),
		"targetRSSMB":            fmt.Sprintf("≤ %.0f MB at %s pods", targetRSSMB, thousands(targetRSSPods)),
		"targetRSSKubeRayRatio":  fmt.Sprintf("≤ %s× KubeRay's", ratioText(targetRSSKubeRayRatio)),
		"targetConflicts":        fmt.Sprintf("%d conflicts at `--reconcile-concurrency=%d`", targetConflicts, targetConflictsAt),
		"targetAddedP99Ms":       fmt.Sprintf("≤ %.0f ms", targetAddedP99Ms),
		"targetAddedP99MsOne":    fmt.Sprintf("≤ %.0f ms", targetAddedP99MsOne),
		"targetHandlerAllocs":    fmt.Sprintf("≤ %d allocations per review", targetHandlerAllocs),
		"scale10kFlags":          "`-scenarios=scale-10k -partial`",
		"targetFleetCPURatio":    fmt.Sprintf("≤ %s× KubeRay's", ratioText(fleetCPUTarget)),
		"hog":                    hogDescription,
		"notMeasured":            notMeasured,
	}
}

func withUnit(s string, unit []string) string {
	if len(unit) > 0 && unit[0] != "" {
		if unit[0] == "×" || unit[0] == "%" {
			return s + unit[0]
		}
		return s + " " + unit[0]
	}
	return s
}

// thousands writes n with commas between groups of three digits.
func thousands(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// lookupNumber resolves a dotted path in the results' JSON form to a number.
func lookupNumber(doc any, path string) (float64, bool) {
	v, ok := lookup(doc, path)
	if !ok {
		return 0, false
	}
	f, ok := v.(float64)
	return f, ok
}

func lookup(doc any, path string) (any, bool) {
	v := doc
	for _, seg := range strings.Split(path, ".") {
		switch cur := v.(type) {
		case map[string]any:
			next, ok := cur[seg]
			if !ok {
				return nil, false
			}
			v = next
		case []any:
			next, ok := selectElement(cur, seg)
			if !ok {
				return nil, false
			}
			v = next
		default:
			return nil, false
		}
	}
	return v, true
}

// selectElement picks a list element by its clusters (with an optional -stages suffix),
// concurrency or name.
func selectElement(list []any, seg string) (any, bool) {
	want, stages, _ := strings.Cut(seg, "-")
	n, numeric := strconv.Atoi(want)
	for _, e := range list {
		m, ok := e.(map[string]any)
		if !ok {
			continue
		}
		if name, ok := m["name"].(string); ok && name == seg {
			return m, true
		}
		// admission cases by kind and operation ("RayCluster-update"), latency runs by stages
		if k, ok := m["kind"].(string); ok && k+"-"+fmt.Sprint(m["operation"]) == seg {
			return m, true
		}
		if st, ok := m["stages"].(string); ok && st == seg && m["clusters"] == nil {
			return m, true
		}
		if numeric != nil {
			continue
		}
		if c, ok := m["clusters"].(float64); ok && int(c) == n {
			st, _ := m["stages"].(string)
			if st == stages || (stages == "" && st == "general") {
				return m, true
			}
			continue
		}
		if c, ok := m["concurrency"].(float64); ok && int(c) == n && stages == "" {
			return m, true
		}
	}
	return nil, false
}

// handWritten finds digits in the analysis template outside its actions: figures that did
// not come from the run. Names that contain digits but are not figures (the percentile
// names, the HTTP status of a conflict) are allowed.
func handWritten(text string) []string {
	prose := actionRE.ReplaceAllString(text, " ")
	var found []string
	for _, w := range digitWordRE.FindAllString(prose, -1) {
		if !allowedDigitWords[strings.Trim(w, ".,;:()`*")] {
			found = append(found, w)
		}
	}
	return found
}

var (
	actionRE          = regexp.MustCompile(`(?s)\{\{.*?\}\}`)
	digitWordRE       = regexp.MustCompile(`\S*[0-9]\S*`)
	allowedDigitWords = map[string]bool{"p50": true, "p90": true, "p95": true, "p99": true, "409": true}
)

// defaultConcurrency is the operator's default --reconcile-concurrency.
func defaultConcurrency() int { return app.DefaultOptions().ReconcileConcurrency }
