package load

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"time"
)

// Report is every request of a run, in the order they finished.
type Report struct {
	Results []Result
}

// Summary condenses a set of requests.
type Summary struct {
	Sent   int
	Failed int
	// P50 and P99 are nearest-rank latency percentiles over requests that got a response.
	P50, P99 time.Duration
	// ByCluster counts successful answers per cluster that answered.
	ByCluster map[string]int
	// ByStatus counts responses per HTTP status (0: no response).
	ByStatus map[int]int
	// Errors holds up to five distinct failure reasons, for a test's failure message.
	Errors []string
}

// Share is the fraction of successful answers that came from cluster (0 when none succeeded).
func (s Summary) Share(cluster string) float64 {
	ok := s.Sent - s.Failed
	if ok == 0 {
		return 0
	}
	return float64(s.ByCluster[cluster]) / float64(ok)
}

// String is one line: sent, failed, p50/p99 and the split.
func (s Summary) String() string {
	clusters := make([]string, 0, len(s.ByCluster))
	for c := range s.ByCluster {
		clusters = append(clusters, c)
	}
	sort.Strings(clusters)
	split := make([]string, 0, len(clusters))
	for _, c := range clusters {
		split = append(split, fmt.Sprintf("%s=%.0f%%", c, 100*s.Share(c)))
	}
	return fmt.Sprintf("sent=%d failed=%d p50=%s p99=%s split=[%s]", s.Sent, s.Failed,
		s.P50.Round(10*time.Microsecond), s.P99.Round(10*time.Microsecond), strings.Join(split, " "))
}

// Summarize condenses results.
func Summarize(results []Result) Summary {
	s := Summary{ByCluster: map[string]int{}, ByStatus: map[int]int{}}
	var lat []time.Duration
	for _, r := range results {
		s.Sent++
		s.ByStatus[r.Status]++
		if r.Status != 0 {
			lat = append(lat, r.Latency)
		}
		if r.Failed {
			s.Failed++
			if len(s.Errors) < 5 && !slices.Contains(s.Errors, r.Err) {
				s.Errors = append(s.Errors, r.Err)
			}
			continue
		}
		s.ByCluster[r.Cluster]++
	}
	slices.Sort(lat)
	s.P50, s.P99 = Percentile(lat, 50), Percentile(lat, 99)
	return s
}

// Percentile is the nearest-rank percentile p (0-100) of sorted durations.
func Percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(p/100*float64(len(sorted)))) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}

// Summary condenses the whole run.
func (r *Report) Summary() Summary { return Summarize(r.Results) }

// Interval is the summary of the requests sent in [From, To) from the start of the run.
type Interval struct {
	From, To time.Duration
	Summary
}

// Intervals splits the run into consecutive windows of width by send time; windows in
// which no request was sent are left out.
func (r *Report) Intervals(width time.Duration) []Interval {
	if width <= 0 {
		return nil
	}
	byWindow := map[int][]Result{}
	for _, res := range r.Results {
		i := int(res.At / width)
		byWindow[i] = append(byWindow[i], res)
	}
	keys := make([]int, 0, len(byWindow))
	for k := range byWindow {
		keys = append(keys, k)
	}
	sort.Ints(keys)
	out := make([]Interval, 0, len(keys))
	for _, k := range keys {
		out = append(out, Interval{From: time.Duration(k) * width, To: time.Duration(k+1) * width, Summary: Summarize(byWindow[k])})
	}
	return out
}

// Between is the summary of the requests sent in [from, to) from the start of the run.
func (r *Report) Between(from, to time.Duration) Summary {
	var in []Result
	for _, res := range r.Results {
		if res.At >= from && res.At < to {
			in = append(in, res)
		}
	}
	return Summarize(in)
}

// Table renders the per-interval summaries, one line each, for a test log or a benchmark.
func (r *Report) Table(width time.Duration) string {
	var b strings.Builder
	for _, iv := range r.Intervals(width) {
		fmt.Fprintf(&b, "%6.1fs-%6.1fs %s\n", iv.From.Seconds(), iv.To.Seconds(), iv.Summary)
	}
	fmt.Fprintf(&b, "total          %s\n", r.Summary())
	return b.String()
}
