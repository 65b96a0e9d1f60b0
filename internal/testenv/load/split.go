package load

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/raygate/raygate/internal/rayspec"
)

// WeightSample is an HTTPRoute's weights at one moment: each backend cluster's share of
// the route's total weight.
type WeightSample struct {
	At     time.Time
	Shares map[string]float64
}

// WeightWatch records an HTTPRoute's weights while load runs, so a run's split per window
// can be judged against them (SplitDeviation).
type WeightWatch struct {
	cancel  context.CancelFunc
	done    chan struct{}
	mu      sync.Mutex
	samples []WeightSample
}

// WatchWeights records the HTTPRoute namespace/route's shares each time they change, until
// Stop or the context ends, from a watch: each sample is taken when the API server reports
// the change (a 50 ms poll used to date changes up to 50 ms late, with 20 GETs a second). The
// watch is on the namespace (a fake client serves no field selector) and picks the route by
// name. When it ends or fails, the route is listed again (a change meanwhile is recorded then)
// and watched from there; a missing route records nothing.
func WatchWeights(ctx context.Context, c client.WithWatch, namespace, route string) *WeightWatch {
	ctx, cancel := context.WithCancel(ctx)
	w := &WeightWatch{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(w.done)
		for ctx.Err() == nil {
			if err := w.follow(ctx, c, namespace, route); err != nil && ctx.Err() == nil {
				select { // the API server is away: try again shortly
				case <-ctx.Done():
				case <-time.After(100 * time.Millisecond):
				}
			}
		}
	}()
	return w
}

// follow lists the route, records it, and records each change the watch from that list
// reports, until the watch ends.
func (w *WeightWatch) follow(ctx context.Context, c client.WithWatch, namespace, route string) error {
	var list gwv1.HTTPRouteList
	if err := c.List(ctx, &list, client.InNamespace(namespace)); err != nil {
		return err
	}
	for i := range list.Items {
		if list.Items[i].Name == route {
			w.record(&list.Items[i])
		}
	}
	wi, err := c.Watch(ctx, &gwv1.HTTPRouteList{}, client.InNamespace(namespace), &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: list.ResourceVersion}})
	if err != nil {
		return err
	}
	defer wi.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-wi.ResultChan():
			if !ok {
				return nil
			}
			switch ev.Type {
			case watch.Error:
				return fmt.Errorf("watching HTTPRoutes: %w", apierrors.FromObject(ev.Object))
			case watch.Added, watch.Modified:
				if rt, ok := ev.Object.(*gwv1.HTTPRoute); ok && rt.Name == route {
					w.record(rt)
				}
			}
		}
	}
}

// record adds a sample when the route's shares differ from the last sample's.
func (w *WeightWatch) record(rt *gwv1.HTTPRoute) {
	shares := RouteShares(rt)
	w.mu.Lock()
	defer w.mu.Unlock()
	if n := len(w.samples); n == 0 || !SameShares(w.samples[n-1].Shares, shares) {
		w.samples = append(w.samples, WeightSample{At: time.Now(), Shares: shares})
	}
}

// Stop ends the recording and returns the samples, oldest first.
func (w *WeightWatch) Stop() []WeightSample {
	w.cancel()
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]WeightSample(nil), w.samples...)
}

// RouteShares is each backend cluster's share of the route's total weight (none when the
// total is 0). Backends are named by cluster: the per-cluster serve Service's suffix is cut.
func RouteShares(rt *gwv1.HTTPRoute) map[string]float64 {
	out := map[string]float64{}
	var total int32
	for _, r := range rt.Spec.Rules {
		for _, b := range r.BackendRefs {
			if b.Weight != nil {
				total += *b.Weight
			}
		}
	}
	if total == 0 {
		return out
	}
	for _, r := range rt.Spec.Rules {
		for _, b := range r.BackendRefs {
			if b.Weight != nil {
				out[strings.TrimSuffix(string(b.Name), rayspec.ClusterServeServiceName(""))] += float64(*b.Weight) / float64(total)
			}
		}
	}
	return out
}

// SameShares reports whether two samples' shares are equal.
func SameShares(a, b map[string]float64) bool { return maps.Equal(a, b) }

// SplitDeviation compares each window's measured split with the weights the route held
// from lag before the window's start to its end (the shares in effect for its requests
// may be any of them) and returns the worst distance of a measured share outside that
// range, with one line per window. Windows with fewer than minWindow answers are not
// judged. Window times are from the start of the load, which began after the first sample.
func SplitDeviation(windows []Interval, samples []WeightSample, ns string, lag time.Duration, minWindow int) (float64, []string) {
	if len(samples) == 0 {
		return 0, nil
	}
	t0 := samples[0].At
	worst := 0.0
	var lines []string
	for _, w := range windows {
		lo, hi := ShareRange(samples, t0.Add(w.From-lag), t0.Add(w.To))
		ok := w.Sent - w.Failed
		dev := 0.0
		var parts []string
		for c := range unionKeys(lo, w.ByCluster, ns) {
			m := w.Share(ns + "/" + c)
			if ok >= minWindow {
				dev = max(dev, lo[c]-m, m-hi[c])
			}
			parts = append(parts, fmt.Sprintf("%s measured %.0f%% weights %.0f-%.0f%%", c, 100*m, 100*lo[c], 100*hi[c]))
		}
		worst = max(worst, dev)
		lines = append(lines, fmt.Sprintf("%5.1fs-%5.1fs sent=%d failed=%d deviation=%.3f %s", w.From.Seconds(), w.To.Seconds(), w.Sent, w.Failed, dev, strings.Join(parts, "; ")))
	}
	return worst, lines
}

// ShareRange is, per cluster, the lowest and the highest share it had in [from, to): the
// sample in effect at from and every later one before to (a cluster missing has share 0).
func ShareRange(samples []WeightSample, from, to time.Time) (lo, hi map[string]float64) {
	var in []WeightSample
	for i, s := range samples {
		next := i+1 < len(samples) && !samples[i+1].At.After(from)
		if !next && s.At.Before(to) {
			in = append(in, s)
		}
	}
	lo, hi = map[string]float64{}, map[string]float64{}
	clusters := map[string]bool{}
	for _, s := range in {
		for c := range s.Shares {
			clusters[c] = true
		}
	}
	for c := range clusters {
		lo[c], hi[c] = 1, 0
		for _, s := range in {
			lo[c], hi[c] = min(lo[c], s.Shares[c]), max(hi[c], s.Shares[c])
		}
	}
	return lo, hi
}

// unionKeys is every cluster name in the weights or among the answers (ns/name).
func unionKeys(weights map[string]float64, answered map[string]int, ns string) map[string]bool {
	out := map[string]bool{}
	for c := range weights {
		out[c] = true
	}
	for c := range answered {
		out[strings.TrimPrefix(c, ns+"/")] = true
	}
	return out
}
