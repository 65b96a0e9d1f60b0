package prometheus

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

func TestConfig(t *testing.T) {
	tests := []struct {
		name    string
		opts    Options
		want    []string // substrings of the YAML
		wantErr string
	}{{
		name: "one job per Job, labels per target, rules",
		opts: Options{
			ScrapeInterval: 250 * time.Millisecond,
			RuleFiles:      []string{"/tmp/rules.yaml"},
			Targets: []Target{
				{Job: "traefik", URL: "http://127.0.0.1:9100/metrics"},
				{Job: "ray", URL: "http://127.64.0.5:8080/metrics", Labels: map[string]string{"namespace": "team-a", "pod": "svc-head-x"}},
				{Job: "ray", URL: "http://127.64.0.6:8080/metrics", Labels: map[string]string{"namespace": "team-a", "pod": "svc-worker-y"}},
			},
		},
		want: []string{"scrape_interval: 250ms", "evaluation_interval: 1s", "job_name: traefik", "job_name: ray",
			"127.64.0.5:8080", "pod: svc-worker-y", "metrics_path: /metrics", "/tmp/rules.yaml"},
	}, {
		name: "honor labels, per job",
		opts: Options{Targets: []Target{{Job: "raygate", URL: "http://127.0.0.1:8080/metrics", HonorLabels: true, Labels: map[string]string{"namespace": "raygate-system"}}}},
		want: []string{"honor_labels: true", "namespace: raygate-system"},
	}, {
		name: "one job, honor labels on one target only",
		opts: Options{Targets: []Target{
			{Job: "a", URL: "http://127.0.0.1:1/metrics", HonorLabels: true},
			{Job: "a", URL: "http://127.0.0.1:2/metrics"},
		}},
		wantErr: "HonorLabels",
	}, {
		name:    "private address refused",
		opts:    Options{Targets: []Target{{Job: "ray", URL: "http://10.0.0.4:8080/metrics"}}},
		wantErr: "loopback",
	}, {
		name:    "host name refused",
		opts:    Options{Targets: []Target{{Job: "ray", URL: "http://localhost:8080/metrics"}}},
		wantErr: "loopback",
	}, {
		name:    "no port",
		opts:    Options{Targets: []Target{{Job: "ray", URL: "http://127.0.0.1/metrics"}}},
		wantErr: "port",
	}, {
		name:    "job name required",
		opts:    Options{Targets: []Target{{URL: "http://127.0.0.1:1/metrics"}}},
		wantErr: "Job is required",
	}, {
		name: "one job, two paths",
		opts: Options{Targets: []Target{
			{Job: "a", URL: "http://127.0.0.1:1/metrics"},
			{Job: "a", URL: "http://127.0.0.1:2/other"},
		}},
		wantErr: `job "a"`,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Config(tt.opts)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Config() error = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range tt.want {
				if !strings.Contains(string(got), w) {
					t.Errorf("config lacks %q:\n%s", w, got)
				}
			}
		})
	}
}

// TestScrapeAndQuery runs the real Prometheus against a counter served here and checks a
// rate() over the labels the target was given.
func TestScrapeAndQuery(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Prometheus")
	}
	reg := prometheus.NewRegistry()
	requests := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "demo_requests_total"}, []string{"code"})
	reg.MustRegister(requests)
	srv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	defer srv.Close()
	stop := make(chan struct{})
	defer close(stop)
	go func() { // a steady 20 requests a second, 1 in 4 failing
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			case <-tick.C:
				code := "200"
				if i%4 == 0 {
					code = "500"
				}
				requests.WithLabelValues(code).Inc()
			}
		}
	}()

	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	p, err := Start(ctx, Options{
		ScrapeInterval: 200 * time.Millisecond,
		Targets:        []Target{{Job: "demo", URL: srv.URL + "/metrics", Labels: map[string]string{"namespace": "team-a"}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := p.Stop(); err != nil {
			t.Error(err)
		}
	}()
	const ratio = `sum(rate(demo_requests_total{namespace="team-a",code=~"5.."}[2s])) / sum(rate(demo_requests_total{namespace="team-a"}[2s]))`
	var last string
	for ctx.Err() == nil {
		vec, err := p.Vector(ctx, ratio)
		if err == nil && len(vec) == 1 {
			if v := float64(vec[0].Value); v > 0.1 && v < 0.4 {
				return
			}
		}
		last = vec.String()
		if err != nil {
			last = err.Error()
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("the error ratio never reached ~0.25; last answer: %s", last)

}

func TestParseQueryLog(t *testing.T) {
	log := `{"time":"2026-11-29T12:00:01.5Z","level":"INFO","msg":"promql query logged","params":{"end":"2026-11-29T12:00:01.234Z","query":"sum(up)","start":"2026-11-29T12:00:01.234Z","step":0},"stats":{}}
{"time":"2026-11-29T12:00:02Z","level":"INFO","msg":"promql query logged","params":{"end":"2026-11-29T12:00:02.000Z","query":"bad(","start":"2026-11-29T12:00:02.000Z","step":0},"error":"parse error"}
{"time":"2026-11-29T12:00:03Z","params":{"qu`
	got, err := ParseQueryLog(strings.NewReader(log))
	if err != nil {
		t.Fatal(err)
	}
	want := []LoggedQuery{
		{Query: "sum(up)", At: time.Date(2026, 11, 29, 12, 0, 1, 234e6, time.UTC)},
		{Query: "bad(", At: time.Date(2026, 11, 29, 12, 0, 2, 0, time.UTC), Err: "parse error"},
	}
	if len(got) != len(want) {
		t.Fatalf("got %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i].Query != want[i].Query || !got[i].At.Equal(want[i].At) || got[i].Err != want[i].Err {
			t.Errorf("query %d: got %+v, want %+v", i, got[i], want[i])
		}
	}
}

// TestFaultsAndQueryLog stalls, kills and restarts the real Prometheus: stalled it accepts
// connections and answers nothing; killed its port refuses them; restarted it answers on
// the same URL with what its TSDB kept; its query log holds what it was asked.
func TestFaultsAndQueryLog(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Prometheus")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	reg := prometheus.NewRegistry()
	reg.MustRegister(prometheus.NewGauge(prometheus.GaugeOpts{Name: "demo_up"}))
	srv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	defer srv.Close()
	p, err := Start(ctx, Options{QueryLog: true, ScrapeInterval: 200 * time.Millisecond,
		Targets: []Target{{Job: "demo", URL: srv.URL + "/metrics"}}})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := p.Stop(); err != nil {
			t.Error(err)
		}
	}()
	answers := func(timeout time.Duration) error {
		ctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		_, err := p.Query(ctx, "count(demo_up)")
		return err
	}
	if err := answers(10 * time.Second); err != nil {
		t.Fatal(err)
	}

	if err := p.Pause(); err != nil {
		t.Fatal(err)
	}
	if err := answers(time.Second); err == nil || !strings.Contains(err.Error(), "deadline exceeded") {
		t.Errorf("stalled: %v, want a timeout", err)
	}
	if err := p.Resume(); err != nil {
		t.Fatal(err)
	}
	if err := answers(10 * time.Second); err != nil {
		t.Errorf("resumed: %v", err)
	}

	if err := p.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := answers(time.Second); err == nil || !strings.Contains(err.Error(), "connection refused") {
		t.Errorf("killed: %v, want connection refused", err)
	}
	if err := p.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	if err := answers(10 * time.Second); err != nil {
		t.Errorf("restarted: %v", err)
	}

	logged, err := p.LoggedQueries()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, q := range logged {
		if q.Query == "count(demo_up)" && time.Since(q.At) < time.Minute {
			n++
		}
	}
	// Answered before the stall, after the resume and after the restart (the stalled query
	// may be evaluated on resume too; the one sent while it was killed never arrived).
	if n < 3 {
		t.Errorf("logged %d evaluations of count(demo_up), want at least 3: %+v", n, logged)
	}
}
