package fairqueue

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

func req(ns string, i int) reconcile.Request {
	return reconcile.Request{NamespacedName: types.NamespacedName{Namespace: ns, Name: fmt.Sprint(i)}}
}

func newTestQueue(t *testing.T) *Queue {
	t.Helper()
	q := New("fairqueue-test-"+strings.ReplaceAll(t.Name(), "/", "-"), nil).(*Queue)
	t.Cleanup(q.ShutDown)
	return q
}

// take hands out n items (each marked done), as "namespace/name".
func take(t *testing.T, q *Queue, n int) []string {
	t.Helper()
	q.Len() // the priority queue takes adds in asynchronously; Len takes in what was added
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

func TestPriority(t *testing.T) {
	cases := []struct {
		name        string
		a, b        [2]int // band, tag
		aComesFirst bool
	}{
		{"smaller tag first", [2]int{0, 1}, [2]int{0, 2}, true},
		{"higher band first whatever the tags", [2]int{0, maxTag}, [2]int{-100, 1}, true},
		{"low band after normal", [2]int{-100, 1}, [2]int{0, 1000}, false},
		{"tags past the bound saturate", [2]int{0, maxTag}, [2]int{0, maxTag + 5}, false},
		{"bands past the bound saturate", [2]int{maxBand + 7, 1}, [2]int{maxBand, 1}, false},
		{"a requeue's positive band", [2]int{1, 9}, [2]int{0, 1}, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			pa, pb := Priority(c.a[0], uint64(c.a[1])), Priority(c.b[0], uint64(c.b[1]))
			if got := pa > pb; got != c.aComesFirst {
				t.Errorf("Priority%v = %d, Priority%v = %d: a first = %v, want %v", c.a, pa, c.b, pb, got, c.aComesFirst)
			}
		})
	}
	for _, band := range []int{-maxBand, -100, -1, 0, 1, 100, maxBand} {
		for _, tag := range []uint64{0, 1, 12345, maxTag} {
			if got := bandOf(Priority(band, tag)); got != band {
				t.Errorf("bandOf(Priority(%d, %d)) = %d", band, tag, got)
			}
		}
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
	q.Len()
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
	if len(q.queued) != 0 || len(q.flows) != 0 || len(q.clock) != 0 {
		t.Errorf("after every item was handed out: queued %v, flows %v, clock %v; want all empty", q.queued, q.flows, q.clock)
	}
}

func TestARequeueIsTaggedAfresh(t *testing.T) {
	q := newTestQueue(t)
	for i := range 4 {
		q.Add(req("a", i))
	}
	q.Len()
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
		case <-time.After(100 * time.Millisecond):
			q.Len() // takes in adds the priority queue has not yet
		case <-timeout:
			t.Fatalf("%d items never handed out", len(want))
		}
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.queued) != 0 || len(q.flows) != 0 {
		t.Errorf("every item handed out, but queued has %d, flows %d", len(q.queued), len(q.flows))
	}
}
