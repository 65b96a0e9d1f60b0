// Package fairqueue is the work queue of raygate's controllers: controller-runtime's priority
// queue, with the namespaces taking turns. A plain work queue is first in, first out across
// the whole cluster, so one tenant that creates a thousand objects puts a thousand passes
// ahead of every other tenant's next pass, and a RayJob that needs a dozen passes to reach
// RUNNING waits behind that backlog a dozen times.
//
// Here the order is start-time fair queuing with namespaces as the flows and one pass as the
// unit of work: an item added gets the tag max(V, the last tag of its namespace) + 1, where V
// is the largest tag handed out so far, and items leave in tag order. A namespace with a
// thousand items queued holds the tags V+1 … V+1000, so another namespace's item, tagged V+1,
// is handed out next but one; two busy namespaces alternate; within a namespace it stays
// first in, first out.
//
// controller-runtime's own priorities stay bands, each with its own tags: an item it adds at
// low priority (an object of the initial list, an update that changed nothing) still comes
// after every item at normal priority, as without this queue.
package fairqueue

import (
	"sync"
	"time"

	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// New is a controller.Options.NewQueue: the controller's queue, named for its metrics as
// controller-runtime names its own.
func New(controllerName string, rateLimiter workqueue.TypedRateLimiter[reconcile.Request]) workqueue.TypedRateLimitingInterface[reconcile.Request] {
	return newQueue(priorityqueue.New(controllerName, func(o *priorityqueue.Opts[reconcile.Request]) {
		o.Log = ctrl.Log.WithValues("controller", controllerName)
		o.RateLimiter = rateLimiter
	}))
}

func newQueue(pq priorityqueue.PriorityQueue[reconcile.Request]) *Queue {
	return &Queue{
		PriorityQueue: pq,
		queued:        map[reconcile.Request]entry{},
		flows:         map[flow]*flowState{},
		clock:         map[int]uint64{},
	}
}

// Queue is a priority queue that orders by Priority(band, tag). It implements
// priorityqueue.PriorityQueue, so controller-runtime's handlers and workers pass it their
// priorities; GetWithPriority returns the band an item was added at, so a requeue is tagged
// afresh in that band.
type Queue struct {
	priorityqueue.PriorityQueue[reconcile.Request]

	mu sync.Mutex
	// queued is every item added and not yet handed out.
	queued map[reconcile.Request]entry
	// flows are the namespaces with items queued, by band.
	flows map[flow]*flowState
	// clock is V by band: the largest tag handed out since the queue was last empty.
	clock map[int]uint64
}

type entry struct {
	band int
	tag  uint64
}

type flow struct {
	namespace string
	band      int
}

type flowState struct {
	last   uint64 // the tag of the flow's last item added
	queued int
}

// Bounds that keep Priority's arithmetic inside an int: a band is at most ±2^20 (controller-
// runtime uses 0 and -100) and a tag at most 2^40 (the tags start again whenever the queue
// empties; 2^40 passes without that is beyond any operator's life).
const (
	tagBits = 40
	maxTag  = 1<<tagBits - 1
	maxBand = 1 << 20
)

// Priority is the priority-queue priority of an item of a band with a tag: every band above
// any lower one, and within a band the smaller tag first.
func Priority(band int, tag uint64) int {
	band = min(max(band, -maxBand), maxBand)
	return band<<tagBits - int(min(tag, maxTag))
}

// bandOf is the band of a Priority: the inverse of Priority, for a tag within bounds.
func bandOf(priority int) int {
	return (priority + maxTag) >> tagBits
}

// Add queues item at normal priority.
func (q *Queue) Add(item reconcile.Request) { q.AddWithOpts(priorityqueue.AddOpts{}, item) }

// AddAfter queues item at normal priority once d has passed.
func (q *Queue) AddAfter(item reconcile.Request, d time.Duration) {
	q.AddWithOpts(priorityqueue.AddOpts{After: d}, item)
}

// AddRateLimited queues item at normal priority after its rate limiter's delay.
func (q *Queue) AddRateLimited(item reconcile.Request) {
	q.AddWithOpts(priorityqueue.AddOpts{RateLimited: true}, item)
}

// AddWithOpts queues the items in o.Priority's band, each at its namespace's turn. An item
// already queued keeps its place unless the add raises its band; the priority queue keeps the
// earliest time an item may be handed out.
func (q *Queue) AddWithOpts(o priorityqueue.AddOpts, items ...reconcile.Request) {
	band := 0
	if o.Priority != nil {
		band = *o.Priority
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	for _, item := range items {
		e, ok := q.queued[item]
		switch {
		case !ok:
			e = q.join(item, band)
		case band > e.band:
			q.leave(item, e)
			e = q.join(item, band)
		}
		p := Priority(e.band, e.tag)
		o.Priority = &p
		q.PriorityQueue.AddWithOpts(o, item)
	}
}

// join tags a newly queued item.
func (q *Queue) join(item reconcile.Request, band int) entry {
	f := flow{item.Namespace, band}
	s := q.flows[f]
	if s == nil {
		s = &flowState{}
		q.flows[f] = s
	}
	s.last = max(s.last, q.clock[band]) + 1
	s.queued++
	e := entry{band: band, tag: s.last}
	q.queued[item] = e
	return e
}

// leave forgets a queued item.
func (q *Queue) leave(item reconcile.Request, e entry) {
	delete(q.queued, item)
	f := flow{item.Namespace, e.band}
	if s := q.flows[f]; s != nil {
		if s.queued--; s.queued <= 0 {
			delete(q.flows, f)
		}
	}
}

// GetWithPriority hands out the next item with the band it was added at.
func (q *Queue) GetWithPriority() (reconcile.Request, int, bool) {
	item, priority, shutdown := q.PriorityQueue.GetWithPriority()
	if shutdown {
		return item, priority, shutdown
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	e, ok := q.queued[item]
	if !ok {
		// Added again while being handed out (that add found it still queued, so it was not
		// counted again): its band is in its priority.
		return item, bandOf(priority), false
	}
	q.clock[e.band] = max(q.clock[e.band], e.tag)
	q.leave(item, e)
	if len(q.queued) == 0 {
		clear(q.clock)
	}
	return item, e.band, false
}

// Get hands out the next item.
func (q *Queue) Get() (reconcile.Request, bool) {
	item, _, shutdown := q.GetWithPriority()
	return item, shutdown
}
