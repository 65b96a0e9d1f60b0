package main

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rayscheme "github.com/raygate/raygate/apis/scheme"
	"github.com/raygate/raygate/internal/testenv/kwokcluster"
)

// clusterOptions is the cluster every scenario runs on: kwok's fast pod stages (a pod is
// Ready with an IP as soon as it is scheduled, so the figures measure controllers, not
// kwok's random delays), kube-scheduler and kube-controller-manager with client limits
// high enough not to be the bottleneck, and the operator's requests in the audit log.
// writtenOnlyPodIPs are pod IPs that are only ever written into objects, never dialled (as in
// the migration suite). The API server refuses loopback addresses in Endpoints and
// EndpointSlices, so with kwok's loopback pod IPs kube-controller-manager's endpoint
// controllers fail on every Service that selects a pod, retry and record a Warning event each
// time: work a real cluster does not do. Runs that call no pod use these instead, and their
// operators get an HTTP proxy on loopback that refuses every request (noDialProxy).
var writtenOnlyPodIPs = netip.MustParsePrefix("10.244.0.0/16")

func clusterOptions(nodes int, logDir string, policy string) kwokcluster.Options {
	return kwokcluster.Options{
		Nodes:                nodes,
		NodeCapacity:         nodeCapacity(),
		PodStages:            kwokcluster.FastStages,
		SchedulerQPS:         1000,
		SchedulerBurst:       2000,
		ControllerManagerQPS: 1000,
		AuditPolicy:          policy,
		LogDir:               logDir,
		StartTimeout:         3 * time.Minute,
	}
}

func nodeCapacity() corev1.ResourceList {
	return corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("1k"),
		corev1.ResourceMemory: resource.MustParse("1Ti"),
		corev1.ResourcePods:   resource.MustParse("10k"),
	}
}

// nodesFor is how many nodes of nodeCapacity hold pods with the given total requests, with
// 25% headroom so the scheduler never has to look hard for room.
func nodesFor(requests corev1.ResourceList, pods int) int {
	need := 1.0
	capacity := nodeCapacity()
	for name, q := range requests {
		c, ok := capacity[name]
		if !ok || c.IsZero() {
			continue
		}
		need = max(need, q.AsApproximateFloat64()/c.AsApproximateFloat64())
	}
	need = max(need, float64(pods)/capacity.Pods().AsApproximateFloat64())
	n := int(need*1.25) + 1
	return min(n, kwokcluster.MaxNodes)
}

// benchClient is an admin client without client-side rate limiting: the benchmark's own
// requests must not be what is slow.
func benchClient(cfg *rest.Config) (client.Client, *rest.Config, error) {
	cfg = rest.CopyConfig(cfg)
	cfg.QPS, cfg.Burst = -1, 0
	cl, err := client.New(cfg, client.Options{Scheme: rayscheme.New()})
	return cl, cfg, err
}

func createNamespaces(ctx context.Context, cl client.Client, n int) ([]string, error) {
	names := make([]string, n)
	for i := range n {
		names[i] = fmt.Sprintf("bench-%d", i)
		if err := cl.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: names[i]}}); err != nil {
			return nil, err
		}
	}
	return names, nil
}

// parallel runs f(0..n-1) on workers goroutines and returns the first error.
func parallel(ctx context.Context, n, workers int, f func(ctx context.Context, i int) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var next atomic.Int64
	var once sync.Once
	var first error
	var wg sync.WaitGroup
	for range min(workers, n) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= n || ctx.Err() != nil {
					return
				}
				if err := f(ctx, i); err != nil {
					once.Do(func() { first = err; cancel() })
					return
				}
			}
		}()
	}
	wg.Wait()
	return first
}

// readyTracker records, through an informer of the admin user (not audited), when each
// object of a kind is first seen ready.
type readyTracker struct {
	isReady func(client.Object) bool

	mu    sync.Mutex
	seen  map[string]bool
	ready map[string]time.Time
	last  time.Time // last time the ready count grew
	since time.Time // when the tracking started (the objects were being created)
}

func trackReady(ctx context.Context, cfg *rest.Config, obj client.Object, isReady func(client.Object) bool) (*readyTracker, error) {
	t := &readyTracker{isReady: isReady, seen: map[string]bool{}, ready: map[string]time.Time{}, last: time.Now()}
	t.since = t.last
	err := watchKind(ctx, cfg, obj, func(obj client.Object) {
		now := time.Now()
		key := obj.GetNamespace() + "/" + obj.GetName()
		t.mu.Lock()
		defer t.mu.Unlock()
		t.seen[key] = true
		if _, done := t.ready[key]; !done && t.isReady(obj) {
			t.ready[key] = now
			t.last = now
		}
	})
	if err != nil {
		return nil, err
	}
	return t, nil
}

// watchKind starts a cache of obj's kind that calls observe with every object added or
// updated, and waits until it has synced; it stops with ctx.
func watchKind(ctx context.Context, cfg *rest.Config, obj client.Object, observe func(client.Object)) error {
	return watchWithDeletes(ctx, cfg, obj, func(o client.Object, deleted bool) {
		if !deleted {
			observe(o)
		}
	})
}

// watchWithDeletes starts a cache of obj's kind whose handler gets every object added,
// updated (deleted false) or removed (deleted true), and waits until it has synced; it stops
// with ctx. Removals matter to the latency scenario: a pod deleted before any kubelet (kwok)
// holds it is removed at once, with no update carrying a deletionTimestamp.
func watchWithDeletes(ctx context.Context, cfg *rest.Config, obj client.Object, observe func(o client.Object, deleted bool)) error {
	ca, err := cache.New(cfg, cache.Options{Scheme: rayscheme.New()})
	if err != nil {
		return err
	}
	inf, err := ca.GetInformer(ctx, obj)
	if err != nil {
		return err
	}
	handle := func(o any, deleted bool) {
		if t, ok := o.(toolscache.DeletedFinalStateUnknown); ok {
			o = t.Obj
		}
		if obj, ok := o.(client.Object); ok {
			observe(obj, deleted)
		}
	}
	if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { handle(o, false) },
		UpdateFunc: func(_, o any) { handle(o, false) },
		DeleteFunc: func(o any) { handle(o, true) },
	}); err != nil {
		return err
	}
	go func() { _ = ca.Start(ctx) }()
	if !ca.WaitForCacheSync(ctx) {
		return fmt.Errorf("cache of %T did not sync", obj)
	}
	return nil
}

func (t *readyTracker) counts() (seen, ready int, lastProgress time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.seen), len(t.ready), t.last
}

// timeline is the ready times relative to start, sorted.
func (t *readyTracker) timeline(start time.Time) []float64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]float64, 0, len(t.ready))
	for _, at := range t.ready {
		out = append(out, at.Sub(start).Seconds())
	}
	sort.Float64s(out)
	return out
}

// waitReady waits until n objects are ready. It gives up when check fails, after timeout,
// or after stall without progress, calling diagnose for the error message.
func (t *readyTracker) waitReady(ctx context.Context, c *kwokcluster.Cluster, n int, timeout, stall time.Duration, check func() error, diagnose func() string) (time.Time, error) {
	began := time.Now()
	deadline := began.Add(timeout)
	for {
		_, ready, last := t.counts()
		if ready >= n {
			return last, nil
		}
		// A wait that begins after another one (the RayServices' after their RayClusters')
		// counts a stall from its own start: objects that could not progress before (a
		// RayService waits for its cluster) are not stalled yet.
		progress := last
		if began.After(progress) {
			progress = began
		}
		if err := c.Healthy(); err != nil {
			return time.Time{}, err
		}
		if err := check(); err != nil {
			return time.Time{}, err
		}
		if time.Now().After(deadline) || time.Since(progress) > stall {
			return time.Time{}, fmt.Errorf("%d of %d ready %s after the tracking started (no progress for %s): %s",
				ready, n, time.Since(t.since).Round(time.Second), time.Since(progress).Round(time.Second), diagnose())
		}
		select {
		case <-ctx.Done():
			return time.Time{}, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// scenarioCluster is a fresh one-node cluster of a single-namespace scenario with the
// benchmark's client and that namespace.
type scenarioCluster struct {
	*kwokcluster.Cluster
	cl  client.Client
	cfg *rest.Config
	ns  string
}

// startScenarioCluster starts it. Defer stopScenarioCluster with the scenario's error.
func (b *bench) startScenarioCluster(ctx context.Context, name string, mod ...func(*kwokcluster.Options)) (*scenarioCluster, error) {
	c, err := b.startCluster(ctx, 1, name, mod...)
	if err != nil {
		return nil, err
	}
	s := &scenarioCluster{Cluster: c}
	if s.cl, s.cfg, err = benchClient(c.Config); err == nil {
		var nss []string
		if nss, err = createNamespaces(ctx, s.cl, 1); err == nil {
			s.ns = nss[0]
			return s, nil
		}
	}
	b.stopScenarioCluster(s, &err)
	return nil, err
}

// stopScenarioCluster stops the cluster, keeping its logs and naming them in *runErr when the
// scenario failed.
func (b *bench) stopScenarioCluster(s *scenarioCluster, runErr *error) {
	msg := ""
	if *runErr != nil {
		msg = (*runErr).Error()
	}
	b.stopCluster(s.Cluster, &msg)
	if msg != "" {
		*runErr = errors.New(msg)
	}
}
