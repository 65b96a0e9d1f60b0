package observe

import (
	"strings"
	"testing"
	"time"
)

func TestSubstitute(t *testing.T) {
	values := map[string]string{"job": "raygate-metrics", "namespace": "team-a", "rayservice": "fruit", "__rate_interval": "4s", "__range": "95s"}
	for _, tt := range []struct {
		expr, want, wantErr string
	}{
		{`sum(up{job=~"$job"})`, `sum(up{job=~"raygate-metrics"})`, ""},
		{`x{namespace=~"${namespace}", name=~"[[rayservice]]"}`, `x{namespace=~"team-a", name=~"fruit"}`, ""},
		{`x{namespace=~"${namespace:regex}"}`, `x{namespace=~"team-a"}`, ""},
		{`rate(a[$__rate_interval]) + increase(b[$__range])`, `rate(a[4s]) + increase(b[95s])`, ""},
		{`x{name=~"$rayservice", pod=~"$pod", c=~"$cluster"}`, "", "no value for $pod, $cluster"},
	} {
		got, err := substitute(tt.expr, values)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("substitute(%q) error = %v, want %q", tt.expr, err, tt.wantErr)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("substitute(%q) = %q, %v; want %q", tt.expr, got, err, tt.want)
		}
	}
}

func TestGrafanaBuiltins(t *testing.T) {
	for _, tt := range []struct {
		g    grafanaRange
		want map[string]string
	}{
		{grafanaRange{Range: 95 * time.Second, Step: time.Second, Scrape: time.Second},
			map[string]string{"__interval": "1s", "__rate_interval": "4s", "__range": "95s"}},
		// A dashboard over 3 hours at 15 s scrapes: the step wins once it exceeds 3 scrapes.
		{grafanaRange{Range: 3 * time.Hour, Step: time.Minute, Scrape: 15 * time.Second},
			map[string]string{"__interval": "60s", "__rate_interval": "75s", "__range": "10800s"}},
		{grafanaRange{Range: time.Minute, Step: 500 * time.Millisecond, Scrape: 250 * time.Millisecond},
			map[string]string{"__interval": "500ms", "__rate_interval": "1s", "__range": "60s"}},
	} {
		got := tt.g.builtins()
		for k, v := range tt.want {
			if got[k] != v {
				t.Errorf("%+v: $%s = %q, want %q", tt.g, k, got[k], v)
			}
		}
	}
}

func TestRegexValue(t *testing.T) {
	for in, want := range map[string]string{"team-a": "team-a", "a.b": `a\\.b`} {
		if got := regexValue(in); got != want {
			t.Errorf("regexValue(%q) = %q, want %q", in, got, want)
		}
	}
	if got := regexValue("a", "b"); got != "(a|b)" {
		t.Errorf("two values: %q", got)
	}
}

// The chart's dashboard, read as the suite reads it: every target with its panel's title,
// and each variable's label_values parts.
func TestReadTheChartDashboard(t *testing.T) {
	queries, vars, err := readDashboard("../../../charts/raygate/dashboards/raygate.json")
	if err != nil {
		t.Fatal(err)
	}
	if len(queries) != 27 {
		t.Errorf("%d panel queries, want 27", len(queries))
	}
	var instant []string
	for _, q := range queries {
		if q.Panel == "" || q.Target.Expr == "" || q.Target.RefID == "" {
			t.Errorf("incomplete query %+v", q)
		}
		if q.Target.Instant {
			instant = append(instant, q.Panel)
		}
	}
	if strings.Join(instant, ",") != "RayService readiness" {
		t.Errorf("instant queries: %q", instant)
	}
	want := []variable{
		{"job", `controller_runtime_reconcile_total{controller="rayservice"}`, "job"},
		{"namespace", "kuberay_service_info", "namespace"},
		{"rayservice", `kuberay_service_info{namespace=~"$namespace"}`, "name"},
	}
	if len(vars) != len(want) {
		t.Fatalf("variables %+v, want %+v", vars, want)
	}
	for i := range want {
		if vars[i] != want[i] {
			t.Errorf("variable %d = %+v, want %+v", i, vars[i], want[i])
		}
	}
}
