package faults

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/onsi/ginkgo/v2"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/rayspec"
)

// change is one value of the upgrade's state taking a new value: a cluster's target
// capacity or traffic share in the RayService status, or its HTTPRoute weight. Clusters are
// named by role: "blue" (serving before the upgrade) and "green" (the one it creates).
type change struct {
	At    time.Time
	Key   string // e.g. "green capacity", "green traffic", "green weight"
	Value int32
}

// steps records, from watches (every write, in order), the changes of one RayService's
// upgrade state until stop.
type steps struct {
	blue   string
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu      sync.Mutex
	last    map[string]int32
	changes []change
}

// recordSteps starts watching the RayService name in ns (whose cluster before the upgrade is
// blue) and its HTTPRoute.
func recordSteps(ctx context.Context, ns, name, blue string) *steps {
	ctx, cancel := context.WithCancel(ctx)
	s := &steps{blue: blue, cancel: cancel, last: map[string]int32{}}
	watchAll(ctx, &s.wg, &rayv1.RayServiceList{}, ns, func(o client.Object) {
		svc, ok := o.(*rayv1.RayService)
		if !ok || svc.Name != name {
			return
		}
		for _, st := range []rayv1.RayServiceStatus{svc.Status.ActiveServiceStatus, svc.Status.PendingServiceStatus} {
			if st.RayClusterName == "" {
				continue
			}
			role := s.role(st.RayClusterName)
			if st.TargetCapacity != nil {
				s.see(role+" capacity", *st.TargetCapacity)
			}
			if st.TrafficRoutedPercent != nil {
				s.see(role+" traffic", *st.TrafficRoutedPercent)
			}
		}
	})
	watchAll(ctx, &s.wg, &gwv1.HTTPRouteList{}, ns, func(o client.Object) {
		rt, ok := o.(*gwv1.HTTPRoute)
		if !ok || rt.Name != rayspec.HTTPRouteName(name) {
			return
		}
		for _, r := range rt.Spec.Rules {
			for _, b := range r.BackendRefs {
				if b.Weight != nil {
					s.see(s.role(strings.TrimSuffix(string(b.Name), rayspec.ClusterServeServiceName("")))+" weight", *b.Weight)
				}
			}
		}
	})
	return s
}

// watchAll calls seen for every object of list's kind in ns as the API server reports it,
// watching again from the last resource version if a watch ends early.
func watchAll(ctx context.Context, wg *sync.WaitGroup, list client.ObjectList, ns string, seen func(client.Object)) {
	wg.Add(1)
	go func() {
		defer ginkgo.GinkgoRecover()
		defer wg.Done()
		for ctx.Err() == nil {
			w, err := k8s.Watch(ctx, list.DeepCopyObject().(client.ObjectList), client.InNamespace(ns))
			if err != nil {
				time.Sleep(100 * time.Millisecond)
				continue
			}
			for ev := range w.ResultChan() {
				if ev.Type == watch.Added || ev.Type == watch.Modified {
					if o, ok := ev.Object.(client.Object); ok {
						seen(o)
					}
				}
			}
			w.Stop()
		}
	}()
}

func (s *steps) role(cluster string) string {
	if cluster == s.blue {
		return "blue"
	}
	return "green"
}

func (s *steps) see(key string, v int32) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if old, ok := s.last[key]; ok && old == v {
		return
	}
	s.last[key] = v
	s.changes = append(s.changes, change{At: time.Now(), Key: key, Value: v})
}

// stop ends the watches and returns every change in order.
func (s *steps) stop() []change {
	s.cancel()
	s.wg.Wait()
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]change(nil), s.changes...)
}

// Last is the latest value of key (false: never seen).
func (s *steps) Last(key string) (int32, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.last[key]
	return v, ok
}

// sequences is, per key, the values it took in order: the upgrade's steps as the cluster
// sees them, independent of how many status writes they took and when.
func sequences(changes []change) map[string][]int32 {
	out := map[string][]int32{}
	for _, c := range changes {
		out[c.Key] = append(out[c.Key], c.Value)
	}
	return out
}

// renderSequences prints sequences one key a line, sorted.
func renderSequences(seq map[string][]int32) string {
	keys := make([]string, 0, len(seq))
	for k := range seq {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "%-15s %v\n", k, seq[k])
	}
	return b.String()
}

// minGap is the shortest time between two successive paced changes of key: the first
// change after the initial value is left out (the first traffic step is taken as soon as the
// pending cluster is ready, not an interval after the backend was added). 0: fewer than two.
func minGap(changes []change, key string) time.Duration {
	var prev time.Time
	gap := time.Duration(0)
	n := 0
	for _, c := range changes {
		if c.Key != key {
			continue
		}
		n++
		if n > 2 && (gap == 0 || c.At.Sub(prev) < gap) {
			gap = c.At.Sub(prev)
		}
		prev = c.At
	}
	return gap
}

// firstAfter is the first change at or after t (false: none).
func firstAfter(changes []change, t time.Time) (change, bool) {
	for _, c := range changes {
		if !c.At.Before(t) {
			return c, true
		}
	}
	return change{}, false
}

// timelineOf renders the changes with their time from t0.
func timelineOf(changes []change, t0 time.Time) string {
	var b strings.Builder
	for _, c := range changes {
		fmt.Fprintf(&b, "%7.3fs %-15s %d\n", c.At.Sub(t0).Seconds(), c.Key, c.Value)
	}
	return b.String()
}
