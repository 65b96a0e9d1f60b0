package promscrape

import (
	"math"
	"testing"
	"time"
)

func TestCounterIncrease(t *testing.T) {
	for _, tt := range []struct {
		name   string
		points []float64
		want   float64
	}{
		{"none", nil, 0},
		{"one", []float64{5}, 0},
		{"steady", []float64{1, 3, 6}, 5},
		{"flat", []float64{4, 4, 4}, 0},
		{"born mid-window (absent is 0)", []float64{0, 0, 2, 7}, 7},
		{"reset", []float64{10, 12, 3, 5}, 2 + 3 + 2},
		{"removed then back", []float64{4, 6, 0, 1}, 2 + 0 + 1},
	} {
		if got := CounterIncrease(tt.points); got != tt.want {
			t.Errorf("%s: CounterIncrease(%v) = %v, want %v", tt.name, tt.points, got, tt.want)
		}
	}
}

// store builds a store with one scrape per second from t0, each a map of series name → value
// of a counter "req" with label svc=name.
func store(t0 time.Time, scrapes ...map[string]float64) *Store {
	s := NewStore(time.Hour)
	for i, sc := range scrapes {
		samples := map[string]Sample{}
		for svc, v := range sc {
			l := Labels{"__name__": "req", "svc": svc}
			samples[seriesKey(l)] = Sample{Labels: l, Value: v}
		}
		s.Add(t0.Add(time.Duration(i)*time.Second), samples)
	}
	return s
}

func TestIncreaseWindow(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	s := store(t0,
		map[string]float64{"a": 0},
		map[string]float64{"a": 10},
		map[string]float64{"a": 20, "b": 3},
		map[string]float64{"a": 30, "b": 4},
		map[string]float64{"a": 5, "b": 4}, // a reset
	)
	a, b, all := Match(Labels{"svc": "a"}), Match(Labels{"svc": "b"}), Match(Labels{"__name__": "req"})
	for _, tt := range []struct {
		name   string
		m      Matcher
		at     time.Duration
		window time.Duration
		want   float64
		ok     bool
	}{
		{"before the first scrape", a, -time.Second, 10 * time.Second, 0, false},
		{"window of one interval", a, 2 * time.Second, time.Second, 10, true},
		{"between scrapes: the last one at or before at decides", a, 2500 * time.Millisecond, time.Second, 10, true},
		{"base is the last scrape at or before at-window", a, 3 * time.Second, 2 * time.Second, 20, true},
		{"history shorter than the window: from the oldest", a, 3 * time.Second, time.Minute, 30, true},
		{"a reset counts the new value", a, 4 * time.Second, 2 * time.Second, 10 + 5, true},
		{"a series born in the window counts from 0", b, 3 * time.Second, 3 * time.Second, 4, true},
		{"sum of every matching series", all, 3 * time.Second, 3 * time.Second, 30 + 4, true},
		{"no growth", b, 4 * time.Second, time.Second, 0, true},
	} {
		got, ok := s.Increase(tt.m, t0.Add(tt.at), tt.window)
		if got != tt.want || ok != tt.ok {
			t.Errorf("%s: Increase = %v, %v; want %v, %v", tt.name, got, ok, tt.want, tt.ok)
		}
	}
}

func TestSeries(t *testing.T) {
	s := store(time.Unix(1_700_000_000, 0), map[string]float64{"b": 1}, map[string]float64{"a": 2})
	got := s.Series(Match(Labels{"__name__": "req"}))
	if len(got) != 2 || got[0]["svc"] != "a" || got[1]["svc"] != "b" {
		t.Errorf("Series = %v, want a and b (every series ever seen, in key order)", got)
	}
	if got := s.Series(Match(Labels{"svc": "c"})); len(got) != 0 {
		t.Errorf("Series(c) = %v", got)
	}
}

func TestRetention(t *testing.T) {
	s := NewStore(2 * time.Second)
	t0 := time.Unix(1_700_000_000, 0)
	for i := range 10 {
		s.Add(t0.Add(time.Duration(i)*time.Second), nil)
	}
	if n := s.Scrapes(); n != 3 {
		t.Errorf("kept %d scrapes, want the last 3 (2 s of retention)", n)
	}
	if at, _ := s.latest(); !at.Equal(t0.Add(9 * time.Second)) {
		t.Errorf("latest %v", at)
	}
}

func TestRatio(t *testing.T) {
	if _, ok := Ratio(0, 0); ok {
		t.Error("Ratio(0, 0) has data; want none (no requests)")
	}
	if v, ok := Ratio(3, 10); !ok || math.Abs(v-0.3) > 1e-12 {
		t.Errorf("Ratio(3, 10) = %v, %v", v, ok)
	}
	if v, ok := Ratio(0, 10); !ok || v != 0 {
		t.Errorf("Ratio(0, 10) = %v, %v", v, ok)
	}
}
