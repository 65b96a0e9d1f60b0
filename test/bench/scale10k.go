package main

import (
	"context"
	"fmt"

	"github.com/raygate/raygate/internal/testenv/kwokcluster"
)

// The scale-10k scenario is the scale scenario at ten times its largest fleet — 10,000
// RayClusters of 4 pods — for raygate and KubeRay on the same harness, each on its own fresh
// cluster. Its pod stages are fast by default (-scale-10k-stages): with general stages kwok
// makes three status patches per pod, 120,000 in all, at about 100 a second on two idle cores
// and ten a second on a loaded machine, so the run would time kwok rather than the operators
// (measured: both operators stalled with under 5% of the clusters ready after 16-48 minutes
// while kwok patched at its pace). It is not in the default run: with fast stages on two
// cores each operator's bring-up alone takes about three quarters of an hour (measured for
// raygate: the API server, kwok, the scheduler and the controller manager saturate both
// cores, and pods are created at about twenty a second), so the scenario needs about two
// hours of a quiet machine; `-scenarios=scale-10k -partial` adds it to the saved results.
// With the 1,000-RayCluster run of the scale scenario it gives the memory slope per 1,000
// pods from 4,000 to 40,000 pods.

const (
	scale10kClusters              = 10000
	targetScale10kRSSMB           = 600.0
	targetScale10kRSSKubeRayRatio = 0.4 // peak RSS ÷ KubeRay's
	targetScale10kCPUKubeRayRatio = 0.7 // operator CPU ÷ KubeRay's
	// targetSlopeGrowth bounds the memory slope from 4,000 to 40,000 pods by the slope from
	// 400 to 4,000 pods: a cost per object is flat, so the two agree; a term that grows faster
	// than the object count (a list rebuilt per event, an index keyed by pairs) makes the
	// second larger. The margin is the peak RSS's own noise (GC timing).
	targetSlopeGrowth = 1.25
)

func runScale10k(ctx context.Context, b *bench, f flags) scaleResult {
	stages := kwokcluster.StageSet(f.stages10k)
	// An audit of every component at 40,000 pods is gigabytes of log and costs the API server
	// the CPU the operators need; the operator's own requests are still audited.
	auditAll := b.auditAll
	b.auditAll = false
	defer func() { b.auditAll = auditAll }()
	res := runScale(ctx, b, scaleConfig{Clusters: f.clusters10k, Concurrency: f.concurrency, Quiet: f.quiet, KubeRay: f.kuberay, Stages: stages})
	res.Reference = scaleRun{System: "replicaset", Error: "not run: this scenario compares the operators"}
	return res
}

// memorySlope is the growth of an operator's peak RSS per 1,000 pods between two scale runs.
type memorySlope struct {
	FromPods int     `json:"fromPods"`
	ToPods   int     `json:"toPods"`
	MBPer1k  float64 `json:"mbPer1000Pods"`
	FromMB   float64 `json:"fromMB"`
	ToMB     float64 `json:"toMB"`
}

// slopeOf is the slope between the runs of two scale results picked by pick (raygate or
// KubeRay), or false when either has no usage.
func slopeOf(lo, hi scaleResult, pick func(scaleResult) *scaleRun) (memorySlope, bool) {
	a, b := pick(lo), pick(hi)
	if a == nil || b == nil || a.Error != "" || b.Error != "" || a.Usage == nil || b.Usage == nil ||
		a.Usage.PeakRSSMB <= 0 || b.Usage.PeakRSSMB <= 0 || hi.Pods <= lo.Pods {
		return memorySlope{}, false
	}
	return memorySlope{
		FromPods: lo.Pods, ToPods: hi.Pods,
		FromMB: a.Usage.PeakRSSMB, ToMB: b.Usage.PeakRSSMB,
		MBPer1k: (b.Usage.PeakRSSMB - a.Usage.PeakRSSMB) / (float64(hi.Pods-lo.Pods) / 1000),
	}, true
}

func raygateRun(s scaleResult) *scaleRun { return &s.Raygate }
func kuberayRun(s scaleResult) *scaleRun { return s.KubeRay }

// sameStages says two scale results ran with the same pod stages (results saved before the
// stages were recorded ran general ones).
func sameStages(a, b scaleResult) bool {
	norm := func(s string) string {
		if s == "" {
			return string(kwokcluster.GeneralStages)
		}
		return s
	}
	return norm(a.Stages) == norm(b.Stages)
}

// scaleLike is the scale scenario's run at n RayClusters with the same stages as s, if any.
func scaleLike(r *results, n int, s scaleResult) (scaleResult, bool) {
	for _, x := range r.Scale {
		if x.Clusters == n && sameStages(x, s) {
			return x, true
		}
	}
	return scaleResult{}, false
}

// scale10kSlopes are raygate's peak-RSS slopes from the scale scenario's smallest to largest
// general run (400 → 4,000 pods by default) and from its largest to the 10k run.
func scale10kSlopes(r *results) (small, large memorySlope, ok bool) {
	if r.Scale10k == nil {
		return small, large, false
	}
	var lo, hi scaleResult
	found := 0
	for _, s := range r.Scale {
		if !sameStages(s, *r.Scale10k) {
			continue
		}
		if found == 0 || s.Clusters < lo.Clusters {
			lo = s
		}
		if found == 0 || s.Clusters > hi.Clusters {
			hi = s
		}
		found++
	}
	if found < 2 || hi.Clusters >= r.Scale10k.Clusters {
		return small, large, false
	}
	s1, ok1 := slopeOf(lo, hi, raygateRun)
	s2, ok2 := slopeOf(hi, *r.Scale10k, raygateRun)
	return s1, s2, ok1 && ok2
}

func scale10kVerdicts(r *results) []verdict {
	s := r.Scale10k
	if s == nil {
		return nil // not in the default run; its absence is not a miss
	}
	n := fmt.Sprintf("%s RayClusters, %s stages", thousands(int64(s.Clusters)), stagesOr(s.Stages))
	g, k := s.Raygate, s.KubeRay
	writes := fmt.Sprintf("≤ %s× the minimum (%d)", ratioText(targetWritesRatio), s.MinWritesPerCluster)
	rssAbs := fmt.Sprintf("≤ %.0f MB", targetScale10kRSSMB)
	rssRel := fmt.Sprintf("≤ %s× KubeRay's", ratioText(targetScale10kRSSKubeRayRatio))
	cpuRel := fmt.Sprintf("≤ %s× KubeRay's", ratioText(targetScale10kCPUKubeRayRatio))
	slope := fmt.Sprintf("flat: ≤ %s× the slope from the scale scenario's smallest to largest run", ratioText(targetSlopeGrowth))
	if g.Error != "" {
		return []verdict{
			notRun("Writes per RayCluster, "+n, writes, g.Error),
			notRun("Operator peak RSS, "+n, rssAbs, g.Error),
			notRun("Operator peak RSS vs KubeRay, "+n, rssRel, g.Error),
			notRun("Operator CPU vs KubeRay, "+n, cpuRel, g.Error),
			notRun("Memory slope per 1,000 pods up to "+thousands(int64(s.Pods))+" pods", slope, g.Error),
		}
	}
	var v []verdict
	if g.WritesPerObj > 0 && s.MinWritesPerCluster > 0 {
		wr := g.WritesPerObj / float64(s.MinWritesPerCluster)
		v = append(v, verdict{"Writes per RayCluster, " + n, writes, fmt.Sprintf("%.2f× (%.1f)", wr, g.WritesPerObj), status(wr <= targetWritesRatio)})
	} else {
		v = append(v, notRun("Writes per RayCluster, "+n, writes, "no audit log counts"))
	}
	if g.Usage == nil {
		v = append(v, notRun("Operator peak RSS, "+n, rssAbs, "no usage read"))
	} else {
		v = append(v, verdict{"Operator peak RSS, " + n, rssAbs, fmt.Sprintf("%.1f MB", g.Usage.PeakRSSMB), status(g.Usage.PeakRSSMB <= targetScale10kRSSMB)})
	}
	switch {
	case k == nil:
		v = append(v, notRun("Operator peak RSS vs KubeRay, "+n, rssRel, "KubeRay not run"), notRun("Operator CPU vs KubeRay, "+n, cpuRel, "KubeRay not run"))
	case k.Error != "" || k.Usage == nil || g.Usage == nil || k.Usage.PeakRSSMB <= 0 || k.Usage.CPUSeconds <= 0:
		why := "KubeRay: " + k.Error
		if k.Error == "" {
			why = "no usage read"
		}
		v = append(v, notRun("Operator peak RSS vs KubeRay, "+n, rssRel, why), notRun("Operator CPU vs KubeRay, "+n, cpuRel, why))
	default:
		rr := g.Usage.PeakRSSMB / k.Usage.PeakRSSMB
		cr := g.Usage.CPUSeconds / k.Usage.CPUSeconds
		v = append(v,
			verdict{"Operator peak RSS vs KubeRay, " + n, rssRel, fmt.Sprintf("%.2f× (%.1f MB vs %.1f MB)", rr, g.Usage.PeakRSSMB, k.Usage.PeakRSSMB), status(rr <= targetScale10kRSSKubeRayRatio)},
			verdict{"Operator CPU vs KubeRay, " + n, cpuRel, fmt.Sprintf("%.2f× (%.1f s vs %.1f s)", cr, g.Usage.CPUSeconds, k.Usage.CPUSeconds), status(cr <= targetScale10kCPUKubeRayRatio)})
	}
	what := "Memory slope per 1,000 pods up to " + thousands(int64(s.Pods)) + " pods"
	small, large, ok := scale10kSlopes(r)
	switch {
	case !ok:
		v = append(v, notRun(what, slope, "needs the scale scenario's general runs at two sizes below this one"))
	case small.MBPer1k <= 0:
		// No growth at small scale: any growth now is not flat, none is.
		v = append(v, verdict{what, slope, fmt.Sprintf("%.1f MB from %s to %s pods, %.1f MB from %s to %s", large.MBPer1k,
			thousands(int64(large.FromPods)), thousands(int64(large.ToPods)), small.MBPer1k, thousands(int64(small.FromPods)), thousands(int64(small.ToPods))),
			status(large.MBPer1k <= 0)})
	default:
		g := large.MBPer1k / small.MBPer1k
		v = append(v, verdict{what, slope, fmt.Sprintf("%.2f× (%.1f MB from %s to %s pods, %.1f MB from %s to %s)", g, large.MBPer1k,
			thousands(int64(large.FromPods)), thousands(int64(large.ToPods)), small.MBPer1k, thousands(int64(small.FromPods)), thousands(int64(small.ToPods))),
			status(g <= targetSlopeGrowth)})
	}
	return v
}

func stagesOr(s string) string {
	if s == "" {
		return string(kwokcluster.GeneralStages)
	}
	return s
}
