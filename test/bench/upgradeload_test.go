package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/raygate/raygate/internal/testenv/load"
)

// upgradeLoadReport is a 3 s load: 1 s on blue, 1 s split 50/50, 1 s on green, 20 requests
// a second, latencies 1-20 ms.
func upgradeLoadReport(failAt int) *load.Report {
	var rs []load.Result
	for i := 0; i < 60; i++ {
		c := "ns/blue"
		switch {
		case i >= 40, i >= 20 && i%2 == 1:
			c = "ns/green"
		}
		r := load.Result{At: time.Duration(i) * 50 * time.Millisecond, Latency: time.Duration(i%20+1) * time.Millisecond, Status: 200, Cluster: c}
		if i == failAt {
			r.Status, r.Cluster, r.Failed, r.Err = 503, "", true, "status 503"
		}
		rs = append(rs, r)
	}
	return &load.Report{Results: rs}
}

func TestFigures(t *testing.T) {
	t0 := time.Now()
	on := func(blue float64) map[string]float64 {
		m := map[string]float64{"blue": blue}
		if blue < 1 {
			m["green"] = 1 - blue
		}
		return m
	}
	following := []load.WeightSample{{At: t0, Shares: on(1)}, {At: t0.Add(time.Second), Shares: on(0.5)}, {At: t0.Add(2 * time.Second), Shares: on(0)}}
	// The route stays on blue: the last window's answers (all green) are a full 1.0 off.
	stuck := []load.WeightSample{{At: t0, Shares: on(1)}}

	cases := []struct {
		name      string
		rep       *load.Report
		samples   []load.WeightSample
		sent      int
		failed    int
		deviation *float64
	}{
		{"split follows the weights", upgradeLoadReport(-1), following, 60, 0, ptrTo(0.0)},
		{"split strays", upgradeLoadReport(-1), stuck, 60, 0, ptrTo(1.0)},
		{"a failure, not judged (in-cluster)", upgradeLoadReport(5), nil, 60, 1, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := figures("c", tc.rep, tc.samples, "ns")
			if f.Sent != tc.sent || f.Failed != tc.failed {
				t.Errorf("sent/failed = %d/%d, want %d/%d", f.Sent, f.Failed, tc.sent, tc.failed)
			}
			if f.P50Ms != 10 || f.P99Ms != 20 {
				t.Errorf("p50/p99 = %v/%v ms, want 10/20", f.P50Ms, f.P99Ms)
			}
			switch {
			case tc.deviation == nil && f.WorstSplitDeviation != nil:
				t.Errorf("deviation = %v, want none", *f.WorstSplitDeviation)
			case tc.deviation != nil && (f.WorstSplitDeviation == nil || *f.WorstSplitDeviation != *tc.deviation):
				t.Errorf("deviation = %v, want %v", f.WorstSplitDeviation, *tc.deviation)
			}
			if tc.failed == 0 && (f.ByCluster["blue"] != 30 || f.ByCluster["green"] != 30) {
				t.Errorf("by cluster = %v, want blue and green 30 each (namespace cut)", f.ByCluster)
			}
		})
	}
}

func ptrTo(f float64) *float64 { return &f }

func TestUpgradeLoadVerdictAndRendering(t *testing.T) {
	ok := &upgradeLoadResult{Scenario: "upgrade-load", Sample: "config/samples/x.yaml", MaxSurgePercent: 40, StepSizePercent: 20, IntervalSeconds: 10,
		RatePerClient: 20, WindowSeconds: 1, LagSeconds: 1.5, Tolerance: 0.1, WallSeconds: 61.2, TailSeconds: 3, WeightChanges: 6,
		Clients: []loadFigures{
			{Client: "through Traefik (Gateway)", Sent: 1300, P50Ms: 1.24, P99Ms: 7.5, WorstSplitDeviation: ptrTo(0.05)},
			{Client: "in-cluster (x-serve-svc)", Sent: 1301, P50Ms: 0.81, P99Ms: 3.0},
		}}
	// Results round-trip through results.json.
	b, err := json.Marshal(&results{UpgradeLoad: ok})
	if err != nil {
		t.Fatal(err)
	}
	var back results
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if back.UpgradeLoad == nil || back.UpgradeLoad.Clients[0].WorstSplitDeviation == nil || back.UpgradeLoad.Clients[1].WorstSplitDeviation != nil {
		t.Fatalf("round trip lost the figures: %s", b)
	}

	failed := *ok
	failed.Clients = []loadFigures{ok.Clients[0], {Client: "in-cluster (x-serve-svc)", Sent: 1301, Failed: 2, Errors: []string{"status 503 from http://127.64.0.9:8000/fruit"}}}
	strays := *ok
	strays.Clients = []loadFigures{{Client: "through Traefik (Gateway)", Sent: 1300, WorstSplitDeviation: ptrTo(0.2)}}
	cases := []struct {
		name   string
		u      *upgradeLoadResult
		status string
		want   []string
	}{
		{"not run", nil, "", []string{"## 2b. Upgrade under load: real gateway and in-cluster clients\n\nNot measured in this run."}},
		{"error", &upgradeLoadResult{Error: "Traefik did not start"}, "not run", []string{"**Not measured** — Traefik did not start"}},
		{"met", ok, "met", []string{
			"maxSurgePercent 40, stepSizePercent 20,\nintervalSeconds 10",
			"| through Traefik (Gateway) | 1300 | 0 | 1.24 | 7.50 | 0.050 |",
			"| in-cluster (x-serve-svc) | 1301 | 0 | 0.81 | 3.00 | n/a (follows the serve Service) |",
			"Spec change → promotion: **61.2 s**", "until 3.0 s after", "6 different weights", "deviation at most 0.10.",
		}},
		{"failed requests", &failed, "**missed**", []string{"| in-cluster (x-serve-svc) | 1301 | 2 |", "Failures of in-cluster (x-serve-svc): status 503 from"}},
		{"split strays", &strays, "**missed**", []string{"| 0.200 |"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var m md
			renderUpgradeLoad(&m, tc.u)
			for _, w := range tc.want {
				if !strings.Contains(m.String(), w) {
					t.Errorf("rendering lacks %q:\n%s", w, m.String())
				}
			}
			var got string
			for _, v := range verdicts(&results{UpgradeLoad: tc.u}) {
				if strings.HasPrefix(v.What, "Failed requests in an incremental upgrade") {
					got = v.Status
				}
			}
			if got != tc.status {
				t.Errorf("verdict = %q, want %q", got, tc.status)
			}
		})
	}
	if !strings.Contains(renderReport(&results{}, "", "benchmarks"), "## 2b. Upgrade under load") {
		t.Error("the report has no upgrade-load section")
	}
}
