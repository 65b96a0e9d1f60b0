// Package promscrape is a stand-in for Prometheus in tests: it scrapes one /metrics URL on
// loopback every Interval with the Prometheus text parser, keeps the samples with the time
// of their scrape, and answers Prometheus' instant query API (/api/v1/query) in the JSON
// the official Go client decodes.
//
// It is not a PromQL engine. It answers only the query strings a test registered, each with
// a Go function that computes the value from the scraped series (e.g. a backend's share of
// 5xx answers over the last 20 s from Traefik's request counters); any other query is
// refused with bad_data, which a metric gate treats as missing data. What it does take
// seriously is the data: real counters, scraped from a real process, with counter resets
// and series that appear mid-window handled as Prometheus' increase() would (without its
// extrapolation to the window's edges).
package promscrape

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"
)

// Labels are a series' labels, the metric name under "__name__".
type Labels map[string]string

// seriesKey is a canonical text of a series' labels.
func seriesKey(l Labels) string {
	keys := slices.Sorted(maps.Keys(l))
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "%s=%q,", k, l[k])
	}
	return b.String()
}

// snapshot is one scrape: every kept series' value at a time.
type snapshot struct {
	at     time.Time
	values map[string]float64 // by seriesKey
}

// Store holds scrapes, oldest first, for at most retention.
type Store struct {
	retention time.Duration

	mu     sync.Mutex
	series map[string]Labels // by seriesKey, every series ever seen
	snaps  []snapshot
}

// NewStore keeps scrapes for retention.
func NewStore(retention time.Duration) *Store {
	return &Store{retention: retention, series: map[string]Labels{}}
}

// Add records a scrape taken at at; scrapes older than the retention (relative to at) are
// dropped. Scrapes must be added in time order.
func (s *Store) Add(at time.Time, samples map[string]Sample) {
	s.mu.Lock()
	defer s.mu.Unlock()
	snap := snapshot{at: at, values: make(map[string]float64, len(samples))}
	for k, smp := range samples {
		if _, ok := s.series[k]; !ok {
			s.series[k] = smp.Labels
		}
		snap.values[k] = smp.Value
	}
	s.snaps = append(s.snaps, snap)
	cut := 0
	for cut < len(s.snaps)-1 && at.Sub(s.snaps[cut].at) > s.retention {
		cut++
	}
	s.snaps = slices.Delete(s.snaps, 0, cut)
}

// Sample is one series' value in a scrape.
type Sample struct {
	Labels Labels
	Value  float64
}

// Scrapes is how many scrapes are held.
func (s *Store) Scrapes() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.snaps)
}

// Matcher selects series by their labels.
type Matcher func(Labels) bool

// Match is a Matcher of exact label values (the metric name under "__name__").
func Match(want Labels) Matcher {
	return func(l Labels) bool {
		for k, v := range want {
			if l[k] != v {
				return false
			}
		}
		return true
	}
}

// Increase is how much the counters matching m grew over (at-window, at], summed: the
// scrapes from the last one at or before at-window (the base) to the last one at or before
// at. A series absent from a scrape counts as 0 there (a counter that did not exist yet, or
// was removed); a value lower than the one before is a reset, after which the new value is
// all growth. ok is false when no scrape is at or before at; when the history is shorter
// than the window, the oldest scrape is the base.
func (s *Store) Increase(m Matcher, at time.Time, window time.Duration) (float64, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	end := -1
	for i, sn := range s.snaps {
		if !sn.at.After(at) {
			end = i
		}
	}
	if end < 0 {
		return 0, false
	}
	base := 0
	for i := 0; i <= end; i++ {
		if !s.snaps[i].at.After(at.Add(-window)) {
			base = i
		}
	}
	var total float64
	for key, l := range s.series {
		if !m(l) {
			continue
		}
		points := make([]float64, 0, end-base+1)
		for _, sn := range s.snaps[base : end+1] {
			points = append(points, sn.values[key]) // absent: 0
		}
		total += CounterIncrease(points)
	}
	return total, true
}

// CounterIncrease is a counter's growth over consecutive values: the sum of the steps up,
// and, at a reset (a value below the one before), the value after it.
func CounterIncrease(points []float64) float64 {
	var inc float64
	for i := 1; i < len(points); i++ {
		if d := points[i] - points[i-1]; d >= 0 {
			inc += d
		} else {
			inc += points[i]
		}
	}
	return inc
}

// Ratio is num/den, with ok false when den is 0 (no requests: a ratio of nothing).
func Ratio(num, den float64) (float64, bool) {
	if den == 0 {
		return 0, false
	}
	return num / den, true
}

// latest is the time of the newest scrape.
func (s *Store) latest() (time.Time, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.snaps) == 0 {
		return time.Time{}, false
	}
	return s.snaps[len(s.snaps)-1].at, true
}

// Series are the labels of every series seen that m selects, in key order.
func (s *Store) Series(m Matcher) []Labels {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Labels
	for _, k := range slices.Sorted(maps.Keys(s.series)) {
		if l := s.series[k]; m(l) {
			out = append(out, maps.Clone(l))
		}
	}
	return out
}
