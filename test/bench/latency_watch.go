package main

import (
	"context"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/rayspec"
)

// podSeen is what the latency scenario's watch saw of one Ray pod, each time when the event
// reached the benchmark (time.Now() in the handler): pod creationTimestamps are
// second-granular, too coarse for one cluster's bring-up.
type podSeen struct {
	Name string
	// Seen is the first event of the pod; Ready the first event showing it Running and Ready;
	// Deleting the first showing a deletionTimestamp, or its removal.
	Seen, Ready, Deleting time.Time
}

// latencyRecorder records, per RayCluster name (the scenario uses one namespace), its pods'
// events and when the RayCluster was first seen ready.
type latencyRecorder struct {
	mu    sync.Mutex
	pods  map[string]map[string]*podSeen // cluster → pod name → events
	ready map[string]time.Time
}

// recordLatency starts watches of Ray pods and RayClusters; they stop with ctx.
func recordLatency(ctx context.Context, cfg *rest.Config) (*latencyRecorder, error) {
	r := &latencyRecorder{pods: map[string]map[string]*podSeen{}, ready: map[string]time.Time{}}
	if err := watchWithDeletes(ctx, cfg, &corev1.Pod{}, r.observePod); err != nil {
		return nil, err
	}
	if err := watchWithDeletes(ctx, cfg, &rayv1.RayCluster{}, r.observeCluster); err != nil {
		return nil, err
	}
	return r, nil
}

func (r *latencyRecorder) observePod(o client.Object, deleted bool) {
	now := time.Now()
	pod, ok := o.(*corev1.Pod)
	if !ok {
		return
	}
	cluster := pod.Labels[rayv1.ClusterLabelKey]
	if cluster == "" {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	byName := r.pods[cluster]
	if byName == nil {
		byName = map[string]*podSeen{}
		r.pods[cluster] = byName
	}
	p := byName[pod.Name]
	if p == nil {
		p = &podSeen{Name: pod.Name, Seen: now}
		byName[pod.Name] = p
	}
	if p.Ready.IsZero() && rayspec.RunningAndReady(pod) {
		p.Ready = now
	}
	if p.Deleting.IsZero() && (deleted || pod.DeletionTimestamp != nil) {
		p.Deleting = now
	}
}

func (r *latencyRecorder) observeCluster(o client.Object, deleted bool) {
	now := time.Now()
	rc, ok := o.(*rayv1.RayCluster)
	if !ok || deleted || rc.Status.State != rayv1.Ready {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, seen := r.ready[rc.Name]; !seen {
		r.ready[rc.Name] = now
	}
}

// podsOf is a copy of what was seen of a cluster's pods, sorted by first event.
func (r *latencyRecorder) podsOf(cluster string) []podSeen {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]podSeen, 0, len(r.pods[cluster]))
	for _, p := range r.pods[cluster] {
		out = append(out, *p)
	}
	slices.SortFunc(out, func(a, b podSeen) int { return a.Seen.Compare(b.Seen) })
	return out
}

func (r *latencyRecorder) readyAt(cluster string) (time.Time, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	t, ok := r.ready[cluster]
	return t, ok
}

// nthPodSeen is when the n-th pod of a cluster was first seen.
func nthPodSeen(pods []podSeen, n int) (time.Time, bool) {
	if n < 1 || len(pods) < n {
		return time.Time{}, false
	}
	seen := make([]time.Time, len(pods))
	for i, p := range pods {
		seen[i] = p.Seen
	}
	slices.SortFunc(seen, time.Time.Compare)
	return seen[n-1], true
}

// podNames is the set of the pods' names, to tell old pods from new ones after a change.
func podNames(pods []podSeen) map[string]bool {
	out := make(map[string]bool, len(pods))
	for _, p := range pods {
		out[p.Name] = true
	}
	return out
}

// firstNewPod is when the first pod not in before was seen.
func firstNewPod(pods []podSeen, before map[string]bool) (time.Time, bool) {
	var first time.Time
	for _, p := range pods {
		if !before[p.Name] && (first.IsZero() || p.Seen.Before(first)) {
			first = p.Seen
		}
	}
	return first, !first.IsZero()
}

// firstReplacement is when the first pod was replaced after a change: an old pod (in before)
// seen deleting, or a new pod seen, whichever came first. Old pods already deleting before
// the change (deletingBefore) do not count.
func firstReplacement(pods []podSeen, before, deletingBefore map[string]bool) (time.Time, bool) {
	first, ok := firstNewPod(pods, before)
	for _, p := range pods {
		if before[p.Name] && !deletingBefore[p.Name] && !p.Deleting.IsZero() && (!ok || p.Deleting.Before(first)) {
			first, ok = p.Deleting, true
		}
	}
	return first, ok
}

// readyPods counts the pods Running and Ready and not deleting.
func readyPods(pods []podSeen) int {
	n := 0
	for _, p := range pods {
		if !p.Ready.IsZero() && p.Deleting.IsZero() {
			n++
		}
	}
	return n
}

// deletingPods is the set of pods already seen deleting.
func deletingPods(pods []podSeen) map[string]bool {
	out := map[string]bool{}
	for _, p := range pods {
		if !p.Deleting.IsZero() {
			out[p.Name] = true
		}
	}
	return out
}
