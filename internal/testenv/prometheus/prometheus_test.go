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
