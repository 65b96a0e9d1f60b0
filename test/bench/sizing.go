package main

import (
	"fmt"
	"math"
	"strconv"
)

// Sizing guidance derived from the run (docs/install.md links to it): memory from a line
// through the operator's peak RSS at two pod counts, CPU from what bringing clusters up cost,
// --reconcile-concurrency from the sweep.

// sizingClusters are the cluster counts the guidance is given for.
var sizingClusters = []int{100, 1000, 2000, 5000, 10000}

const (
	memoryRequestStepMi = 32
	memoryLimitStepMi   = 64
	memoryLimitFactor   = 1.5 // GC headroom above the peak; the chart's GOMEMLIMIT follows the limit
	minMemoryLimitMi    = 256
	minCPURequestMilli  = 100
	cpuRequestStepMilli = 50
)

// sizingGuide is the guidance, or why there is none.
type sizingGuide struct {
	Rows []sizingRow
	// BaseMB + SlopeMBPer1000Pods × pods / 1,000 is the peak RSS line, through the points
	// at LoPods and HiPods, from Source.
	BaseMB, SlopeMBPer1000Pods float64
	LoPods, HiPods             int
	Source                     string
	Reason                     string // set when there are no rows
}

type sizingRow struct {
	Clusters, Pods int
	PeakMB         float64
	Extrapolated   bool
	RequestMi      int
	LimitMi        int
	CPUMilli       int // 0: not measured
	Concurrency    int
}

// peakPoint is the operator's peak RSS and bring-up cost at one pod count.
type peakPoint struct {
	Pods       int
	PeakMB     float64
	CPUSeconds float64
	Seconds    float64
}

// sizing derives the guidance from r: the memory scenario's points when it ran, else the
// scale runs' (raygate's peak RSS at each size, general stages preferred).
func sizing(r *results, defaultConcurrency int) sizingGuide {
	var g sizingGuide
	points, source := memoryPeakPoints(r.Memory), "the memory scenario (peak RSS)"
	if _, _, ok := peakEnds(points); !ok {
		points, source = scalePeakPoints(r.Scale), "the scale scenario (raygate's peak RSS)"
	}
	lo, hi, ok := peakEnds(points)
	if !ok {
		g.Reason = "the run has the operator's peak RSS at fewer than two pod counts"
		return g
	}
	slope := (hi.PeakMB - lo.PeakMB) / float64(hi.Pods-lo.Pods)
	g.BaseMB, g.SlopeMBPer1000Pods = lo.PeakMB-slope*float64(lo.Pods), slope*1000
	g.LoPods, g.HiPods, g.Source = lo.Pods, hi.Pods, source
	cpuPoints := scalePeakPoints(r.Scale)
	if len(cpuPoints) == 0 {
		cpuPoints = memoryPeakPoints(r.Memory)
	}
	for _, n := range sizingClusters {
		pods := n * podsPerCluster
		peak := g.BaseMB + slope*float64(pods)
		row := sizingRow{Clusters: n, Pods: pods, PeakMB: peak, Extrapolated: pods > hi.Pods || pods < lo.Pods,
			RequestMi: roundUp(peak, memoryRequestStepMi), LimitMi: max(roundUp(peak*memoryLimitFactor, memoryLimitStepMi), minMemoryLimitMi),
			Concurrency: concurrencyFor(r.Scale, n, defaultConcurrency)}
		if p, ok := nearest(cpuPoints, pods); ok && p.Seconds > 0 {
			row.CPUMilli = max(roundUp(1000*p.CPUSeconds/p.Seconds, cpuRequestStepMilli), minCPURequestMilli)
		}
		g.Rows = append(g.Rows, row)
	}
	return g
}

func roundUp(v float64, step int) int {
	return int(math.Ceil(v/float64(step))) * step
}

func memoryPeakPoints(m *memoryResult) []peakPoint {
	if m == nil {
		return nil
	}
	var out []peakPoint
	for _, p := range m.Points {
		if p.Error == "" && p.PeakRSSMB > 0 {
			out = append(out, peakPoint{Pods: p.Pods, PeakMB: p.PeakRSSMB, CPUSeconds: p.CPUSeconds, Seconds: p.Seconds})
		}
	}
	return out
}

// scalePeakPoints are raygate's main scale runs, one per pod count: the general-stages run
// where both were measured.
func scalePeakPoints(runs []scaleResult) []peakPoint {
	byPods := map[int]peakPoint{}
	general := map[int]bool{}
	for _, s := range runs {
		g := s.Raygate
		if g.Error != "" || g.Usage == nil || g.Usage.PeakRSSMB <= 0 {
			continue
		}
		isGeneral := s.Stages == "" || s.Stages == "general"
		if _, seen := byPods[s.Pods]; seen && (general[s.Pods] || !isGeneral) {
			continue
		}
		byPods[s.Pods] = peakPoint{Pods: s.Pods, PeakMB: g.Usage.PeakRSSMB, CPUSeconds: g.Usage.CPUSeconds, Seconds: g.Seconds}
		general[s.Pods] = isGeneral
	}
	out := make([]peakPoint, 0, len(byPods))
	for _, p := range byPods {
		out = append(out, p)
	}
	return out
}

func peakEnds(points []peakPoint) (lo, hi peakPoint, ok bool) {
	for i, p := range points {
		if i == 0 || p.Pods < lo.Pods {
			lo = p
		}
		if i == 0 || p.Pods > hi.Pods {
			hi = p
		}
	}
	return lo, hi, len(points) > 1 && hi.Pods > lo.Pods
}

// nearest is the point whose pod count is closest to pods.
func nearest(points []peakPoint, pods int) (peakPoint, bool) {
	var best peakPoint
	found := false
	for _, p := range points {
		if !found || abs(p.Pods-pods) < abs(best.Pods-pods) || (abs(p.Pods-pods) == abs(best.Pods-pods) && p.Pods > best.Pods) {
			best, found = p, true
		}
	}
	return best, found
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}

// concurrencyFor is the sweep's recommendation for clusters at least as many as the swept
// size, else the default.
func concurrencyFor(runs []scaleResult, clusters, def int) int {
	for _, s := range runs {
		if len(s.Sweep) == 0 || clusters < s.Clusters {
			continue
		}
		if c, ok := recommendConcurrency(append([]scaleRun{s.Raygate}, s.Sweep...)); ok {
			return c
		}
	}
	return def
}

func renderSizing(m *md, r *results, defaultConcurrency int) {
	m.WriteString("## Sizing\n\n")
	g := sizing(r, defaultConcurrency)
	if len(g.Rows) == 0 {
		m.p("No guidance from this run: %s.", g.Reason)
		return
	}
	m.p("Derived from this run, for RayClusters like the benchmark's (%d pods each). The operator's peak RSS\n"+
		"follows **%.0f MB + %.1f MB per 1,000 pods**: the line through its peak at %s and %s pods, from %s.\n"+
		"Memory request: the predicted peak, rounded up to %d Mi. Memory limit: %.1f× the predicted peak, rounded\n"+
		"up to %d Mi, at least %d Mi — the chart sets `GOMEMLIMIT` from the limit, so near it the GC works harder\n"+
		"instead of the container being killed. CPU request: the mean CPU while the nearest measured count came\n"+
		"up (at least %dm); set no CPU limit — throttling only slows reconciles, and steady state is near zero.\n"+
		"`--reconcile-concurrency` (`reconcileConcurrency`): the default unless the concurrency sweep found a\n"+
		"value at least 10%% faster at that size. Rows outside the measured counts are extrapolated.",
		podsPerCluster, g.BaseMB, g.SlopeMBPer1000Pods, thousands(int64(g.LoPods)), thousands(int64(g.HiPods)), g.Source,
		memoryRequestStepMi, memoryLimitFactor, memoryLimitStepMi, minMemoryLimitMi, minCPURequestMilli)
	var rows [][]string
	for _, row := range g.Rows {
		n := fmt.Sprintf("%s (%s)", thousands(int64(row.Clusters)), thousands(int64(row.Pods)))
		peak := fmt.Sprintf("%.0f MB", row.PeakMB)
		if row.Extrapolated {
			peak += ", extrapolated"
		}
		cpu := notMeasured
		if row.CPUMilli > 0 {
			cpu = strconv.Itoa(row.CPUMilli) + "m"
		}
		rows = append(rows, []string{n, peak, fmt.Sprintf("%dMi", row.RequestMi), fmt.Sprintf("%dMi", row.LimitMi), cpu, strconv.Itoa(row.Concurrency)})
	}
	m.table([]string{"RayClusters (pods)", "predicted peak RSS", "memory request", "memory limit", "CPU request", "`--reconcile-concurrency`"}, rows)
	if n := r.Noise; n != nil && n.Error == "" {
		m.p("Unrelated objects need nothing extra: with %s Services and %s ConfigMaps that raygate has no business\n"+
			"with, its RSS moved %+.1f MB (section 4). Only the leader reconciles; a standby replica needs the same\n"+
			"memory (its caches are warm for a fast failover) but almost no CPU.",
			thousands(int64(n.Services)), thousands(int64(n.ConfigMaps)), n.After.RSSMB-n.Before.RSSMB)
	}
}
