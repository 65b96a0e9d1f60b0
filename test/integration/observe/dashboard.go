package observe

import (
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"time"
)

// panelQuery is one query of a dashboard panel, named as a user would look for it.
type panelQuery struct {
	Panel  string // the panel's title, "Row / Panel" for panels inside a collapsed row
	Target target
}

func (q panelQuery) String() string { return fmt.Sprintf("%q (%s)", q.Panel, q.Target.RefID) }

// variable is a query variable of the dashboard: label_values(Selector, Label).
type variable struct {
	Name     string
	Selector string
	Label    string
}

// readDashboard returns every panel query of a Grafana dashboard (panels of collapsed rows
// included) and its query variables, in order.
func readDashboard(path string) ([]panelQuery, []variable, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, err
	}
	var d struct {
		Panels     []panel `json:"panels"`
		Templating struct {
			List []struct {
				Name  string `json:"name"`
				Type  string `json:"type"`
				Query any    `json:"query"`
			} `json:"list"`
		} `json:"templating"`
	}
	if err := json.Unmarshal(raw, &d); err != nil {
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	var vars []variable
	for _, v := range d.Templating.List {
		if v.Type != "query" {
			continue
		}
		q, _ := v.Query.(map[string]any)
		s, _ := q["query"].(string)
		m := labelValuesParts.FindStringSubmatch(s)
		if m == nil {
			return nil, nil, fmt.Errorf("%s: variable %s: query %q is not label_values(selector, label)", path, v.Name, s)
		}
		vars = append(vars, variable{Name: v.Name, Selector: m[1], Label: m[2]})
	}
	var queries []panelQuery
	var walk func(prefix string, ps []panel)
	walk = func(prefix string, ps []panel) {
		for _, p := range ps {
			for _, t := range p.Targets {
				queries = append(queries, panelQuery{Panel: prefix + p.Title, Target: t})
			}
			walk(prefix+p.Title+" / ", p.Panels)
		}
	}
	walk("", d.Panels)
	return queries, vars, nil
}

var labelValuesParts = regexp.MustCompile(`^label_values\((.+),\s*([A-Za-z_][A-Za-z0-9_]*)\)$`)

// grafanaRange is what Grafana substitutes for its built-in interval variables when it
// queries a time range with a step, the data source's scrape interval being scrape.
type grafanaRange struct {
	Range  time.Duration
	Step   time.Duration
	Scrape time.Duration
}

// builtins are $__interval (the step), $__rate_interval (max(step + scrape interval,
// 4 x scrape interval), Grafana's rule for a rate that always spans enough samples) and
// $__range (the whole time range), as Prometheus durations.
func (g grafanaRange) builtins() map[string]string {
	rate := max(g.Step+g.Scrape, 4*g.Scrape)
	return map[string]string{
		"__interval":      promDuration(g.Step),
		"__rate_interval": promDuration(rate),
		"__range":         promDuration(g.Range),
	}
}

func promDuration(d time.Duration) string {
	if d%time.Second == 0 {
		return fmt.Sprintf("%ds", d/time.Second)
	}
	return fmt.Sprintf("%dms", d/time.Millisecond)
}

var variableRef = regexp.MustCompile(`\$\{([A-Za-z0-9_]+)(?::[a-z]+)?\}|\[\[([A-Za-z0-9_]+)\]\]|\$([A-Za-z0-9_]+)`)

// substitute replaces Grafana's variable references ($name, ${name}, ${name:format},
// [[name]]) with values; a reference to a variable without a value is an error, so a
// query is never sent with a literal $ in it.
func substitute(expr string, values map[string]string) (string, error) {
	var missing []string
	out := variableRef.ReplaceAllStringFunc(expr, func(ref string) string {
		m := variableRef.FindStringSubmatch(ref)
		name := m[1] + m[2] + m[3]
		v, ok := values[name]
		if !ok {
			if !slices.Contains(missing, name) {
				missing = append(missing, name)
			}
			return ref
		}
		return v
	})
	if len(missing) > 0 {
		return "", fmt.Errorf("no value for $%s in %q", strings.Join(missing, ", $"), expr)
	}
	return out, nil
}

// regexValue is a multi-value variable's substitution in a =~ matcher: the values, regexp-
// quoted (and the backslashes escaped again inside a PromQL string, as Grafana does), as
// alternatives.
func regexValue(values ...string) string {
	quoted := make([]string, len(values))
	for i, v := range values {
		quoted[i] = strings.ReplaceAll(regexp.QuoteMeta(v), `\`, `\\`)
	}
	if len(quoted) == 1 {
		return quoted[0]
	}
	return "(" + strings.Join(quoted, "|") + ")"
}
