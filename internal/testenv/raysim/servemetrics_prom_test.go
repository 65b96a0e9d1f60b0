package raysim

import (
	"context"
	"net/http"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/raygate/raygate/internal/promgate"
	"github.com/raygate/raygate/internal/testenv/prometheus"
)

// docsWithServeQueries are the pages whose ray_serve_* PromQL examples the real Prometheus
// evaluates against the simulator's series.
var docsWithServeQueries = []string{"../../../docs/monitoring.md", "../../../docs/rayservice.md"}

var (
	promqlBlockRE = regexp.MustCompile("(?s)```promql\n(.*?)```")
	curlQueryRE   = regexp.MustCompile(`'query=([^']*)'`)
)

// serveQueries are a page's PromQL examples that read ray_serve_* series: fenced promql
// blocks, curl --data-urlencode 'query=...' arguments and UpgradePolicy `query: |` values.
func serveQueries(page string) []string {
	var out []string
	for _, m := range promqlBlockRE.FindAllStringSubmatch(page, -1) {
		out = append(out, m[1])
	}
	for _, m := range curlQueryRE.FindAllStringSubmatch(page, -1) {
		out = append(out, m[1])
	}
	out = append(out, yamlBlockQueries(page)...)
	var serve []string
	for _, q := range out {
		if strings.Contains(q, "ray_serve_") {
			serve = append(serve, strings.TrimSpace(q))
		}
	}
	return serve
}

// yamlBlockQueries are the values of `query: |` block scalars: the lines indented deeper
// than the key that follow it.
func yamlBlockQueries(page string) []string {
	var out []string
	lines := strings.Split(page, "\n")
	for i, l := range lines {
		key := strings.TrimLeft(l, " ")
		if key != "query: |" && key != "- query: |" {
			continue
		}
		indent := len(l) - len(key)
		var b strings.Builder
		for _, next := range lines[i+1:] {
			if len(next)-len(strings.TrimLeft(next, " ")) <= indent || strings.TrimSpace(next) == "" {
				break
			}
			b.WriteString(next + "\n")
		}
		out = append(out, b.String())
	}
	return out
}

func TestServeQueries(t *testing.T) {
	page := "```promql\nsum(rate(ray_serve_a_total[1m]))\n```\n" +
		"curl --data-urlencode \\\n  'query=count by (namespace) (ray_serve_b_total)'\n" +
		"gates:\n  - name: x\n    query: |\n      sum(ray_serve_c)\n      / 2\n    max: \"1\"\n" +
		"```promql\nup\n```\n"
	got := serveQueries(page)
	want := []string{"sum(rate(ray_serve_a_total[1m]))", "count by (namespace) (ray_serve_b_total)", "sum(ray_serve_c)\n      / 2"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("serveQueries = %q, want %q", got, want)
	}
}

// TestDocumentedServeQueriesOnPrometheus scrapes two simulated nodes of a pending cluster
// (one application failing 1 request in 5, each taking 120 ms) and a node of the active
// cluster (healthy, fast) with the real Prometheus, labelled as the chart's PodMonitor labels
// them, and evaluates every ray_serve_* example of the docs, placeholders rendered as an
// UpgradePolicy gate renders them.
func TestDocumentedServeQueriesOnPrometheus(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Prometheus")
	}
	const namespace = "ns"
	pendingCluster := types.NamespacedName{Namespace: namespace, Name: "svc-abcde"}
	activeCluster := types.NamespacedName{Namespace: namespace, Name: "svc-fghij"}
	var queries []string
	for _, path := range docsWithServeQueries {
		page, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		q := serveQueries(string(page))
		if len(q) == 0 {
			t.Fatalf("%s has no ray_serve_* example any more: update docsWithServeQueries", path)
		}
		queries = append(queries, q...)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var targets []prometheus.Target
	var load []string
	for _, c := range []struct {
		cluster types.NamespacedName
		nodes   []string
		slow    bool
	}{
		{pendingCluster, []string{"svc-abcde-head-x1x1x", "svc-abcde-worker-y2y2y"}, true},
		{activeCluster, []string{"svc-fghij-head-z3z3z"}, false},
	} {
		s, err := NewServer(c.cluster, Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		s.apply(&deployConfig{Applications: []appConfig{{Name: "fruit", RoutePrefix: ptr.To("/fruit"), ImportPath: "fruit:app", Deployments: []string{"MangoStand"}}}}, []byte(`{}`))
		if c.slow {
			s.SetUserErrorRatio(0.2)
			s.SetUserLatency(120 * time.Millisecond)
		}
		for _, name := range c.nodes {
			n := startNode(t, s, name)
			load = append(load, n.proxy+"/fruit/mango")
			targets = append(targets, prometheus.Target{Job: "ray", URL: n.metrics + "/metrics", Labels: map[string]string{
				"namespace": namespace, "pod": name, "container": "ray-head", "ray_io_cluster": c.cluster.Name,
			}})
		}
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	defer func() { close(stop); wg.Wait() }()
	for _, url := range load {
		for range 3 { // three clients per node: ~25 requests a second on a slow node
			wg.Go(func() {
				for {
					select {
					case <-stop:
						return
					default:
					}
					if resp, err := http.Get(url); err == nil {
						_ = resp.Body.Close()
					}
				}
			})
		}
	}

	p, err := prometheus.Start(ctx, prometheus.Options{Targets: targets, ScrapeInterval: 250 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := p.Stop(); err != nil {
			t.Error(err)
		}
	}()
	vars := promgate.Vars{Namespace: namespace, RayService: "svc", Pending: pendingCluster.Name, Active: activeCluster.Name}
	for _, doc := range queries {
		q, err := promgate.Render(doc, vars)
		if err != nil {
			t.Fatal(err)
		}
		check := expectation(q)
		if check == nil {
			t.Errorf("no expectation for the documented query %s: add one to expectation()", q)
			continue
		}
		var last string
		for {
			vec, err := p.Vector(ctx, q)
			if err == nil {
				if last = check(vec); last == "" {
					t.Logf("%s = %s", q, vec)
					break
				}
			} else {
				last = err.Error()
			}
			if ctx.Err() != nil {
				t.Fatalf("%s never answered as expected: %s", q, last)
			}
			time.Sleep(250 * time.Millisecond)
		}
	}
}

// expectation is what a documented query must answer over the test's series ("" from the
// returned check: it does); nil for a query the test does not know.
func expectation(q string) func(vec model.Vector) string {
	one := func(vec model.Vector, lo, hi float64) string {
		if len(vec) != 1 {
			return "want one series, got " + vec.String()
		}
		if v := float64(vec[0].Value); v < lo || v > hi {
			return vec.String() + " is outside the expected range"
		}
		return ""
	}
	switch {
	case strings.Contains(q, "histogram_quantile(0.99") && strings.Contains(q, "ray_serve_http_request_latency_ms_bucket"):
		// The pending cluster's requests take 120 ms (more on a loaded machine): the 100-200
		// ms bucket or above, never the ~1 ms of the active cluster.
		return func(vec model.Vector) string { return one(vec, 100, 2000) }
	case strings.Contains(q, "ray_serve_num_http_error_requests_total") && strings.Contains(q, "/ sum(rate(ray_serve_num_http_requests_total"):
		// 1 in 5 of the pending cluster's user requests fail.
		return func(vec model.Vector) string { return one(vec, 0.15, 0.25) }
	case strings.HasPrefix(q, "count by (namespace) (ray_serve_num_http_requests_total)"):
		// Three nodes' series, all answering 200 and some 500.
		return func(vec model.Vector) string { return one(vec, 4, 100) }
	}
	return nil
}
