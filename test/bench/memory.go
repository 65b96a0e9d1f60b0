package main

import (
	"context"
	"fmt"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/test/builders"
)

// The memory scenario measures how the operator's memory grows with what it manages: raygate
// alone brings up RayClusters at two (or more) counts, each on a fresh cluster, and its
// memory is read once it has settled. The slope between the smallest and the largest count,
// in MB per 1,000 pods, is what an admin sizes the operator by (sizing.go); the noise scenario
// shows the other half, that unrelated objects cost nothing.

// noiseFlatMB is how much the operator's RSS may move while unrelated objects appear and
// still count as flat: a GC cycle or a page of runtime metadata, not a cache.
const noiseFlatMB = 5.0

// memoryResult is the "memory" scenario.
type memoryResult struct {
	Points []memoryPoint `json:"points"`
	// SlopeMBPer1000Pods is the growth of the settled RSS per 1,000 pods between the smallest
	// and the largest count; PeakSlopeMBPer1000Pods that of the peak RSS (VmHWM), and
	// HeapSlopeMBPer1000Pods that of the Go heap in use.
	SlopeMBPer1000Pods     float64 `json:"slopeMBPer1000Pods,omitempty"`
	PeakSlopeMBPer1000Pods float64 `json:"peakSlopeMBPer1000Pods,omitempty"`
	HeapSlopeMBPer1000Pods float64 `json:"heapSlopeMBPer1000Pods,omitempty"`
	Error                  string  `json:"error,omitempty"`
}

// memoryPoint is the operator's memory with one count of RayClusters converged.
type memoryPoint struct {
	Clusters int     `json:"clusters"`
	Pods     int     `json:"pods"`
	Seconds  float64 `json:"seconds,omitempty"` // to all ready
	Settled  memShot `json:"settled"`
	// PeakRSSMB is VmHWM at the end: bringing the clusters up included.
	PeakRSSMB  float64 `json:"peakRSSMB,omitempty"`
	CPUSeconds float64 `json:"cpuSeconds,omitempty"`
	Error      string  `json:"error,omitempty"`
}

func runMemory(ctx context.Context, b *bench, sizes []int, concurrency int) memoryResult {
	var res memoryResult
	for _, n := range sizes {
		b.logf("memory: %d RayClusters", n)
		res.Points = append(res.Points, b.memoryPoint(ctx, n, concurrency))
		if ctx.Err() != nil {
			break
		}
	}
	res.fit()
	return res
}

// fit computes the slopes from the measured points, or says why it cannot.
func (r *memoryResult) fit() {
	lo, hi, ok := memoryEnds(r.Points)
	if !ok {
		if r.Error == "" {
			r.Error = "fewer than two counts of pods measured; no slope"
		}
		return
	}
	per := float64(hi.Pods-lo.Pods) / 1000
	r.SlopeMBPer1000Pods = (hi.Settled.RSSMB - lo.Settled.RSSMB) / per
	r.PeakSlopeMBPer1000Pods = (hi.PeakRSSMB - lo.PeakRSSMB) / per
	r.HeapSlopeMBPer1000Pods = (hi.Settled.HeapInuseMB - lo.Settled.HeapInuseMB) / per
}

// memoryEnds are the measured points with the fewest and the most pods.
func memoryEnds(points []memoryPoint) (lo, hi memoryPoint, ok bool) {
	found := false
	for _, p := range points {
		if p.Error != "" || p.Pods <= 0 || p.Settled.RSSMB <= 0 {
			continue
		}
		if !found || p.Pods < lo.Pods {
			lo = p
		}
		if !found || p.Pods > hi.Pods {
			hi = p
		}
		found = true
	}
	return lo, hi, found && hi.Pods > lo.Pods
}

func (b *bench) memoryPoint(ctx context.Context, n, concurrency int) (p memoryPoint) {
	p = memoryPoint{Clusters: n, Pods: n * podsPerCluster}
	c, err := b.startCluster(ctx, nodesFor(scale(n), p.Pods), fmt.Sprintf("memory-%d", n))
	if err != nil {
		p.Error = err.Error()
		return p
	}
	defer b.stopCluster(c, &p.Error)
	cl, cfg, nss, err := scaleClient(ctx, c)
	if err != nil {
		p.Error = err.Error()
		return p
	}
	op, err := b.startOperator(ctx, c, operatorOptions{Concurrency: concurrency})
	if err != nil {
		p.Error = err.Error()
		return p
	}
	trackCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	tracker, err := trackReady(trackCtx, cfg, &rayv1.RayCluster{}, func(o client.Object) bool {
		return o.(*rayv1.RayCluster).Status.State == rayv1.Ready
	})
	if err != nil {
		p.Error = err.Error()
		return p
	}
	start := time.Now()
	err = parallel(ctx, n, createWorkers, func(ctx context.Context, i int) error {
		return cl.Create(ctx, builders.RayCluster(fmt.Sprintf("rc-%04d", i), nss[i%len(nss)]).Spec(benchClusterSpec()).Obj())
	})
	if err != nil {
		p.Error = "creating RayClusters: " + err.Error()
		return p
	}
	converged, err := tracker.waitReady(ctx, c, n, waitTimeout(n), 90*time.Second, op.forbidden, func() string {
		return b.diagnoseRayClusters(ctx, cl, op)
	})
	if err != nil {
		p.Error = err.Error()
		return p
	}
	p.Seconds = converged.Sub(start).Seconds()
	if p.Settled, err = b.settleAndMeasure(ctx, op); err != nil {
		p.Error = err.Error()
		return p
	}
	if u, err := op.usage(); err == nil {
		p.PeakRSSMB, p.CPUSeconds = u.PeakRSSMB, u.CPUSeconds
	}
	return p
}

// memoryVerdicts are the targets rows of the memory and noise scenarios: RSS flat with
// unrelated objects. The growth slope is no target of issue 21 (it asks to state it); the
// memory section states it and the peak it projects.
func memoryVerdicts(r *results) []verdict {
	var v []verdict
	if n := r.Noise; n != nil {
		what := fmt.Sprintf("Operator RSS with %s unrelated Services and %s ConfigMaps", thousands(int64(n.Services)), thousands(int64(n.ConfigMaps)))
		target := fmt.Sprintf("flat (within %.0f MB)", noiseFlatMB)
		if n.Error != "" {
			v = append(v, verdict{what, target, "not measured: " + firstLine(n.Error), "not run"})
		} else {
			grew := n.After.RSSMB - n.Before.RSSMB
			v = append(v, verdict{what, target, fmt.Sprintf("%+.1f MB (%.1f → %.1f MB)", grew, n.Before.RSSMB, n.After.RSSMB), status(grew <= noiseFlatMB)})
		}
	}
	return v
}

// projectPeak is the peak RSS at pods on the line through the smallest and largest point.
func (r *memoryResult) projectPeak(pods int) (float64, bool) {
	lo, hi, ok := memoryEnds(r.Points)
	if !ok || lo.PeakRSSMB <= 0 || hi.PeakRSSMB <= 0 {
		return 0, false
	}
	slope := (hi.PeakRSSMB - lo.PeakRSSMB) / float64(hi.Pods-lo.Pods)
	return lo.PeakRSSMB + slope*float64(pods-lo.Pods), true
}

func renderMemory(m *md, r *memoryResult) {
	m.WriteString("## 5. Memory growth with pods\n\n")
	if r == nil {
		m.p("Not run.")
		return
	}
	m.p("raygate alone brings up RayClusters at each count, on a fresh cluster each, and its memory is read\n"+
		"%.0f s after the last one is ready. The slope between the smallest and the largest count is what the\n"+
		"operator needs per 1,000 pods; the sizing guidance below is derived from it.", noiseSettle.Seconds())
	var rows [][]string
	for _, p := range r.Points {
		if p.Error != "" {
			rows = append(rows, []string{thousands(int64(p.Clusters)), thousands(int64(p.Pods)), "not measured: " + firstLine(p.Error), "", "", "", ""})
			continue
		}
		rows = append(rows, []string{thousands(int64(p.Clusters)), thousands(int64(p.Pods)), f1(p.Seconds), f1(p.Settled.RSSMB), f1(p.Settled.HeapInuseMB), f1(p.PeakRSSMB), f1(p.CPUSeconds)})
	}
	m.table([]string{"RayClusters", "pods", "s to ready", "RSS settled MB", "heap in use MB", "peak RSS MB", "CPU s"}, rows)
	if _, _, ok := memoryEnds(r.Points); ok {
		m.p("Growth per 1,000 pods: **%.1f MB** RSS settled, %.1f MB peak, %.1f MB Go heap in use.",
			r.SlopeMBPer1000Pods, r.PeakSlopeMBPer1000Pods, r.HeapSlopeMBPer1000Pods)
		if p, ok := r.projectPeak(targetRSSPods); ok {
			m.p("On that line the peak RSS at %s pods would be %.0f MB (the target, measured in section 1, is %.0f MB).",
				thousands(targetRSSPods), p, targetRSSMB)
		}
	} else if r.Error != "" {
		m.p("No slope: %s", r.Error)
	}
}
