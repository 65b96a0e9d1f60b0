package fairqueue

import (
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

func req(ns string, i int) reconcile.Request {
	return reconcile.Request{NamespacedName: types.NamespacedName{Namespace: ns, Name: fmt.Sprint(i)}}
}

func newTestQueue(t *testing.T) *Queue {
	q, _ := newNamedTestQueue(t)
	return q
}

func newNamedTestQueue(t *testing.T) (*Queue, string) {
	t.Helper()
	name := fmt.Sprintf("fairqueue-test-%d", queues.Add(1))
	q := New(name, workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]()).(*Queue)
	t.Cleanup(q.ShutDown)
	return q, name
}

// queues numbers the tests' queues, so that each has metric series of its own, also when a
// test runs more than once (-count).
var queues atomic.Int64

// take hands out n items (each marked done), as "namespace/name".
func take(t *testing.T, q *Queue, n int) []string {
	t.Helper()
	var got []string
	for range n {
		item, shutdown := q.Get()
		if shutdown {
			t.Fatal("queue shut down")
		}
		got = append(got, item.String())
		q.Done(item)
	}
	return got
}

func TestOrder(t *testing.T) {
	type key struct {
		band     int
		tag, seq uint64
	}
	cases := []struct {
		name        string
		a, b        key
		aComesFirst bool
	}{
		{"smaller tag first", key{0, 1, 9}, key{0, 2, 1}, true},
		{"higher band first whatever the tags", key{0, 1 << 40, 9}, key{-100, 1, 1}, true},
		{"low band after normal", key{-100, 1, 1}, key{0, 1000, 2}, false},
		{"a requeue's positive band first", key{1, 9, 9}, key{0, 1, 1}, true},
		{"same tag: first pushed first", key{0, 3, 4}, key{0, 3, 5}, true},
		{"same tag, later push", key{0, 3, 6}, key{0, 3, 5}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := before(c.a.band, c.a.tag, c.a.seq, c.b.band, c.b.tag, c.b.seq); got != c.aComesFirst {
				t.Errorf("before(%v, %v) = %v, want %v", c.a, c.b, got, c.aComesFirst)
			}
		})
	}
}

func TestAFloodDoesNotDelayAnotherNamespace(t *testing.T) {
	q := newTestQueue(t)
	for i := range 500 {
		q.Add(req("flood", i))
	}
	q.Add(req("victim", 0))
	got := take(t, q, 3)
	if got[0] != "flood/0" || got[1] != "victim/0" {
		t.Errorf("handed out %v; want the flood's first item, then the victim's", got)
	}
}

func TestBusyNamespacesTakeTurnsAndEachStaysInOrder(t *testing.T) {
	q := newTestQueue(t)
	for i := range 3 {
		q.Add(req("a", i))
	}
	for i := range 3 {
		q.Add(req("b", i))
	}
	q.Add(req("c", 0))
	want := "a/0 b/0 c/0 a/1 b/1 a/2 b/2"
	if got := strings.Join(take(t, q, 7), " "); got != want {
		t.Errorf("order %q, want %q", got, want)
	}
}

func TestANamespaceArrivingLateWaitsOnlyForTheCurrentRound(t *testing.T) {
	q := newTestQueue(t)
	for i := range 10 {
		q.Add(req("a", i))
	}
	take(t, q, 4) // tags 1-4 handed out: V = 4
	q.Add(req("b", 0))
	if got, want := strings.Join(take(t, q, 2), " "), "a/4 b/0"; got != want {
		t.Errorf("order %q, want %q (b is tagged V+1 = 5, a/4 holds 5 and was added first)", got, want)
	}
}

func TestBandsStay(t *testing.T) {
	q := newTestQueue(t)
	low := ptr.To(-100)
	for i := range 3 {
		q.AddWithOpts(priorityqueue.AddOpts{Priority: low}, req("initial", i))
	}
	q.Add(req("event", 0))
	q.Add(req("initial", 2)) // raised to normal by an event: leaves the low band
	got := take(t, q, 4)
	if want := "event/0 initial/2 initial/0 initial/1"; strings.Join(got, " ") != want {
		t.Errorf("order %v, want %s", got, want)
	}
}

func TestGetWithPriorityGivesTheBand(t *testing.T) {
	q := newTestQueue(t)
	q.AddWithOpts(priorityqueue.AddOpts{Priority: ptr.To(-100)}, req("a", 0), req("a", 1))
	for range 2 {
		item, band, _ := q.GetWithPriority()
		if band != -100 {
			t.Errorf("%v handed out with priority %d, want its band -100 (a requeue must not carry the tag)", item, band)
		}
		q.Done(item)
	}
}

func TestReAddingAQueuedItemKeepsItsPlace(t *testing.T) {
	q := newTestQueue(t)
	q.Add(req("a", 0))
	q.Add(req("a", 1))
	q.Add(req("b", 0))
	q.Add(req("a", 0))
	q.Add(req("a", 0))
	if got, want := strings.Join(take(t, q, 3), " "), "a/0 b/0 a/1"; got != want {
		t.Errorf("order %q, want %q", got, want)
	}
	o := q.order
	if len(o.queued) != 0 || len(o.flows) != 0 || len(o.clock) != 0 || len(o.wanted) != 0 || len(o.bandOut) != 0 {
		t.Errorf("after every item was handed out: queued %v, flows %v, clock %v, wanted %v, bandOut %v; want all empty", o.queued, o.flows, o.clock, o.wanted, o.bandOut)
	}
}

func TestARequeueIsTaggedAfresh(t *testing.T) {
	q := newTestQueue(t)
	for i := range 4 {
		q.Add(req("a", i))
	}
	item, band, _ := q.GetWithPriority()
	// As controller-runtime requeues: the band it was handed out with, while it is still
	// being processed.
	q.AddWithOpts(priorityqueue.AddOpts{Priority: &band}, item)
	q.Add(req("b", 0))
	q.Done(item)
	if got, want := strings.Join(take(t, q, 5), " "), "a/1 b/0 a/2 a/3 a/0"; got != want {
		t.Errorf("order %q, want %q: the requeued item goes behind its namespace's queued items", got, want)
	}
}

// Adds from several goroutines while workers hand out and requeue: every item is handed out,
// and the bookkeeping is empty once the queue is.
func TestConcurrentAddsAndWorkersLoseNothing(t *testing.T) {
	q := newTestQueue(t)
	const producers, perProducer, workers = 4, 300, 3
	seen := make(chan reconcile.Request, 4*producers*perProducer)
	for range workers {
		go func() {
			for {
				item, band, shutdown := q.GetWithPriority()
				if shutdown {
					return
				}
				seen <- item
				if !strings.HasPrefix(item.Name, "again-") && len(item.Name)%2 == 0 {
					// As a pass asking for another: requeued while still being processed.
					q.AddWithOpts(priorityqueue.AddOpts{Priority: &band}, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: item.Namespace, Name: "again-" + item.Name}})
				}
				q.Done(item)
			}
		}()
	}
	want := map[reconcile.Request]bool{}
	for p := range producers {
		for i := range perProducer {
			r := req(fmt.Sprintf("ns-%d", i%5), p*perProducer+i)
			want[r] = true
			if len(r.Name)%2 == 0 {
				want[reconcile.Request{NamespacedName: types.NamespacedName{Namespace: r.Namespace, Name: "again-" + r.Name}}] = true
			}
		}
	}
	added := make(chan struct{})
	for p := range producers {
		go func() {
			for i := range perProducer {
				q.Add(req(fmt.Sprintf("ns-%d", i%5), p*perProducer+i))
			}
			added <- struct{}{}
		}()
	}
	for range producers {
		<-added
	}
	timeout := time.After(20 * time.Second)
	for len(want) > 0 {
		select {
		case item := <-seen:
			delete(want, item)
		case <-timeout:
			t.Fatalf("%d items never handed out", len(want))
		}
	}
	o := q.order
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(o.queued) != 0 || len(o.flows) != 0 || len(o.wanted) != 0 {
		t.Errorf("every item handed out, but queued has %d, flows %d, wanted %d", len(o.queued), len(o.flows), len(o.wanted))
	}
}

// The queue's depth is exported as controller-runtime exports a work queue's: one series per
// controller, whatever the tags and bands of the items queued.
func TestDepthIsOneSeries(t *testing.T) {
	q, name := newNamedTestQueue(t)
	for i := range 40 {
		q.AddWithOpts(priorityqueue.AddOpts{Priority: ptr.To(-(i % 3))}, req(fmt.Sprintf("ns-%d", i%7), i))
	}
	families, err := metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var series []string
	for _, f := range families {
		if f.GetName() != "workqueue_depth" {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["name"] == name {
				series = append(series, fmt.Sprintf("%v=%v", labels, m.GetGauge().GetValue()))
			}
		}
	}
	if len(series) != 1 || !strings.HasSuffix(series[0], "=40") {
		t.Errorf("workqueue_depth series of the queue: %v; want one, at 40", series)
	}
}
