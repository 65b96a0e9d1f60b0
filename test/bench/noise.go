package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/test/builders"
)

// The noise scenario checks that the operator's memory does not grow with objects it has no
// business with: in a shared cluster, other tenants' Services and ConfigMaps are not
// raygate's, so caching them would let anyone grow the operator's memory.
const (
	noiseClusters   = 20
	noiseServices   = 10000
	noiseConfigMaps = 10000
	// noiseSettle is how long the operator gets to take in the unrelated objects (a cache
	// that held them would have listed or watched them by then) before it is measured.
	noiseSettle = 30 * time.Second
)

// noiseResult is the operator's memory before and after the unrelated objects appeared.
type noiseResult struct {
	Clusters   int      `json:"clusters"`
	Services   int      `json:"services"`
	ConfigMaps int      `json:"configMaps"`
	Before     memShot  `json:"before"`
	After      memShot  `json:"after"`
	Seconds    float64  `json:"seconds"` // creating the unrelated objects
	Error      string   `json:"error,omitempty"`
	Notes      []string `json:"notes,omitempty"`
}

// memShot is one reading of the operator's memory.
type memShot struct {
	RSSMB       float64 `json:"rssMB"`       // VmRSS
	HeapInuseMB float64 `json:"heapInuseMB"` // go_memstats_heap_inuse_bytes
}

func (r noiseResult) line() map[string]any {
	return map[string]any{"scenario": "noise", "rssBeforeMB": r.Before.RSSMB, "rssAfterMB": r.After.RSSMB,
		"heapBeforeMB": r.Before.HeapInuseMB, "heapAfterMB": r.After.HeapInuseMB, "error": r.Error}
}

func runNoise(ctx context.Context, b *bench) (res noiseResult) {
	res = noiseResult{Clusters: noiseClusters, Services: noiseServices, ConfigMaps: noiseConfigMaps}
	b.logf("noise: %d RayClusters, then %d unrelated Services and %d ConfigMaps", noiseClusters, noiseServices, noiseConfigMaps)
	c, err := b.startCluster(ctx, nodesFor(clusterRequests(), noiseClusters*podsPerCluster), "noise")
	if err != nil {
		res.Error = err.Error()
		return res
	}
	defer b.stopCluster(c, &res.Error)
	cl, cfg, nss, err := scaleClient(ctx, c)
	if err != nil {
		res.Error = err.Error()
		return res
	}
	op, err := b.startOperator(ctx, c, operatorOptions{Concurrency: 4})
	if err != nil {
		res.Error = err.Error()
		return res
	}
	trackCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	tracker, err := trackReady(trackCtx, cfg, &rayv1.RayCluster{}, func(o client.Object) bool {
		return o.(*rayv1.RayCluster).Status.State == rayv1.Ready
	})
	if err != nil {
		res.Error = err.Error()
		return res
	}
	err = parallel(ctx, noiseClusters, createWorkers, func(ctx context.Context, i int) error {
		return cl.Create(ctx, builders.RayCluster(fmt.Sprintf("rc-%02d", i), nss[i%len(nss)]).Spec(benchClusterSpec()).Obj())
	})
	if err == nil {
		_, err = tracker.waitReady(ctx, c, noiseClusters, waitTimeout(noiseClusters), 90*time.Second, op.forbidden, func() string { return "" })
	}
	if err != nil {
		res.Error = "RayClusters: " + err.Error()
		return res
	}
	if res.Before, err = b.settleAndMeasure(ctx, op); err != nil {
		res.Error = err.Error()
		return res
	}

	start := time.Now()
	data := map[string]string{"payload": strings.Repeat("x", 1024)}
	err = parallel(ctx, noiseServices+noiseConfigMaps, createWorkers, func(ctx context.Context, i int) error {
		ns := nss[i%len(nss)]
		if i < noiseServices {
			// Headless: no cluster IP is allocated, so the Service range is no limit.
			return cl.Create(ctx, &corev1.Service{
				ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("other-%05d", i), Namespace: ns, Labels: map[string]string{"app": "other"}},
				Spec: corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone, Selector: map[string]string{"app": "other"},
					Ports: []corev1.ServicePort{{Name: "http", Port: 80}}},
			})
		}
		return cl.Create(ctx, &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("other-%05d", i), Namespace: ns},
			Data:       data,
		})
	})
	if err != nil {
		res.Error = "creating the unrelated objects: " + err.Error()
		return res
	}
	res.Seconds = time.Since(start).Seconds()
	if res.After, err = b.settleAndMeasure(ctx, op); err != nil {
		res.Error = err.Error()
	}
	return res
}

// settleAndMeasure waits noiseSettle, then reads the operator's RSS and heap.
func (b *bench) settleAndMeasure(ctx context.Context, op *operator) (memShot, error) {
	select {
	case <-ctx.Done():
		return memShot{}, ctx.Err()
	case <-time.After(noiseSettle):
	}
	var s memShot
	rss, err := op.currentRSS()
	if err != nil {
		return s, err
	}
	s.RSSMB = rss
	families, err := op.metrics()
	if err != nil {
		return s, err
	}
	if mf, ok := families["go_memstats_heap_inuse_bytes"]; ok && len(mf.GetMetric()) > 0 {
		s.HeapInuseMB = mf.GetMetric()[0].GetGauge().GetValue() / (1 << 20)
	}
	b.logf("noise: operator RSS %.1f MB, heap in use %.1f MB", s.RSSMB, s.HeapInuseMB)
	return s, nil
}

func renderNoise(m *md, r *noiseResult) {
	m.WriteString("## 4. Unrelated objects: memory does not grow with the cluster\n\n")
	if r == nil {
		m.p("Not run.")
		return
	}
	if r.Error != "" {
		m.p("**Not measured** — %s", r.Error)
		return
	}
	m.p("With %d RayClusters converged, %d Services and %d ConfigMaps (1 KiB each) that raygate has no\n"+
		"business with are created in the same namespaces (in %.0f s). The operator is measured %.0f s after\n"+
		"its RayClusters converged and again %.0f s after the unrelated objects were created: its caches\n"+
		"hold only objects raygate labels or owns, so the figures must not grow with them.",
		r.Clusters, r.Services, r.ConfigMaps, r.Seconds, noiseSettle.Seconds(), noiseSettle.Seconds())
	m.table([]string{"", "before", "after", "change"}, [][]string{
		{"operator RSS (VmRSS)", f1(r.Before.RSSMB) + " MB", f1(r.After.RSSMB) + " MB", fmt.Sprintf("%+.1f MB", r.After.RSSMB-r.Before.RSSMB)},
		{"Go heap in use", f1(r.Before.HeapInuseMB) + " MB", f1(r.After.HeapInuseMB) + " MB", fmt.Sprintf("%+.1f MB", r.After.HeapInuseMB-r.Before.HeapInuseMB)},
	})
}
