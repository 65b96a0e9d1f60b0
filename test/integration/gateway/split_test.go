package gateway

import (
	"testing"
	"time"

	"github.com/raygate/raygate/internal/testenv/load"
)

func TestShareRange(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	samples := []weightSample{
		{At: at(0), Shares: map[string]float64{"a": 1}},
		{At: at(2), Shares: map[string]float64{"a": 0.75, "b": 0.25}},
		{At: at(5), Shares: map[string]float64{"a": 0.5, "b": 0.5}},
	}
	cases := []struct {
		name     string
		from, to float64
		lo, hi   map[string]float64
	}{
		{"before any change", 0, 1, map[string]float64{"a": 1}, map[string]float64{"a": 1}},
		{"the sample in effect at from", 3, 4, map[string]float64{"a": 0.75, "b": 0.25}, map[string]float64{"a": 0.75, "b": 0.25}},
		{"a change inside", 1, 3, map[string]float64{"a": 0.75, "b": 0}, map[string]float64{"a": 1, "b": 0.25}},
		{"two changes inside", 1, 6, map[string]float64{"a": 0.5, "b": 0}, map[string]float64{"a": 1, "b": 0.5}},
		{"from before the first sample", -2, 1, map[string]float64{"a": 1}, map[string]float64{"a": 1}},
	}
	for _, tc := range cases {
		lo, hi := shareRange(samples, at(tc.from), at(tc.to))
		if !load.SameShares(lo, tc.lo) || !load.SameShares(hi, tc.hi) {
			t.Errorf("%s: lo %v hi %v, want lo %v hi %v", tc.name, lo, hi, tc.lo, tc.hi)
		}
	}
}

func TestSplitDeviation(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	samples := []weightSample{
		{At: t0, Shares: map[string]float64{"a": 1}},
		{At: t0.Add(2 * time.Second), Shares: map[string]float64{"a": 0.5, "b": 0.5}},
	}
	window := func(from int, sent, a, b int) load.Interval {
		return load.Interval{From: time.Duration(from) * time.Second, To: time.Duration(from+1) * time.Second,
			Summary: load.Summary{Sent: sent, ByCluster: map[string]int{"ns/a": a, "ns/b": b}}}
	}
	cases := []struct {
		name string
		w    load.Interval
		want float64
	}{
		{"all on a before the change", window(0, 40, 40, 0), 0},
		{"b answers before any weight", window(0, 40, 30, 10), 0.25},
		{"within the lag after the change either split passes", window(2, 40, 40, 0), 0},
		{"past the lag: 50/50 expected, 80/20 measured", window(4, 40, 32, 8), 0.3},
		{"too few answers are not judged", window(4, 5, 5, 0), 0},
	}
	for _, tc := range cases {
		got, lines := splitDeviation([]load.Interval{tc.w}, samples, "ns", time.Second)
		if d := got - tc.want; d > 1e-9 || d < -1e-9 {
			t.Errorf("%s: deviation %.3f, want %.3f (%v)", tc.name, got, tc.want, lines)
		}
	}
}
