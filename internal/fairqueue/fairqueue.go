// Package fairqueue is the work queue of raygate's controllers: client-go's work queue (as
// controller-runtime builds it, with its metrics) in an order where the namespaces take
// turns. First in, first out across the whole cluster, one tenant that creates a thousand
// objects puts a thousand passes ahead of every other tenant's next pass, and a RayJob that
// needs several passes to reach RUNNING waits behind that backlog each time.
//
// The order is start-time fair queuing with namespaces as the flows and one pass as the unit
// of work: an item entering the queue gets the tag max(V, the last tag of its namespace) + 1,
// where V is the largest tag handed out since the queue was last empty, and items leave in
// tag order. A namespace with a thousand items queued holds the tags V+1 … V+1000, so another
// namespace's item, tagged V+1, is handed out next but one; two busy namespaces alternate;
// within a namespace it stays first in, first out.
//
// The queue takes controller-runtime's priorities (it implements its PriorityQueue
// interface) as bands, each with its own tags: an item added at low priority (an object of the
// initial list, an update that changed nothing) comes after every item at normal priority, as
// with controller-runtime's own priority queue. That queue is not used because it exports its
// queue depth by priority: fair tags as priorities would be a series each.
package fairqueue

import (
	"container/heap"
	"sync"
	"time"

	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// New is a controller.Options.NewQueue: client-go's rate-limiting work queue with the fair
// order, its metrics named for the controller as controller-runtime names them.
func New(controllerName string, rateLimiter workqueue.TypedRateLimiter[reconcile.Request]) workqueue.TypedRateLimitingInterface[reconcile.Request] {
	o := newOrder()
	base := workqueue.NewTypedWithConfig(workqueue.TypedQueueConfig[reconcile.Request]{Name: controllerName, Queue: o})
	delaying := workqueue.NewTypedDelayingQueueWithConfig(workqueue.TypedDelayingQueueConfig[reconcile.Request]{Name: controllerName, Queue: base})
	return &Queue{
		TypedRateLimitingInterface: workqueue.NewTypedRateLimitingQueueWithConfig(rateLimiter,
			workqueue.TypedRateLimitingQueueConfig[reconcile.Request]{Name: controllerName, DelayingQueue: delaying}),
		order: o,
	}
}

// Queue is the controllers' work queue. AddWithOpts and GetWithPriority make it a
// controller-runtime PriorityQueue, so the handlers and workers pass it their priorities;
// GetWithPriority gives back the band an item was queued in, so a requeue stays in it.
type Queue struct {
	workqueue.TypedRateLimitingInterface[reconcile.Request]
	order *order
}

var _ priorityqueue.PriorityQueue[reconcile.Request] = &Queue{}

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

// AddWithOpts queues the items in o.Priority's band (normal if unset), after o.After or
// after the rate limiter's delay if o.RateLimited. An item already queued keeps its place
// unless the add raises its band.
func (q *Queue) AddWithOpts(o priorityqueue.AddOpts, items ...reconcile.Request) {
	band := 0
	if o.Priority != nil {
		band = *o.Priority
	}
	for _, item := range items {
		q.order.want(item, band)
		switch {
		case o.RateLimited:
			q.TypedRateLimitingInterface.AddRateLimited(item)
		case o.After > 0:
			q.TypedRateLimitingInterface.AddAfter(item, o.After)
		default:
			q.TypedRateLimitingInterface.Add(item)
		}
	}
}

// GetWithPriority hands out the next item with the band it was queued in.
func (q *Queue) GetWithPriority() (reconcile.Request, int, bool) {
	item, shutdown := q.TypedRateLimitingInterface.Get()
	if shutdown {
		return item, 0, true
	}
	return item, q.order.handedOut(item), false
}

// Get hands out the next item.
func (q *Queue) Get() (reconcile.Request, bool) {
	item, _, shutdown := q.GetWithPriority()
	return item, shutdown
}

// order is the workqueue.Queue (the order of the items that are ready) the work queue keeps
// its items in. The work queue calls Push, Touch and Pop under its own lock; order has its
// own, for the bands AddWithOpts records before the work queue pushes.
type order struct {
	mu sync.Mutex
	// wanted is, by item, the highest band it was added in since it last entered the queue:
	// the work queue pushes it only later (after a delay, or when its pass ends).
	wanted map[reconcile.Request]int
	ready  readyHeap
	queued map[reconcile.Request]*entry
	// flows are the namespaces with items queued, by band.
	flows map[flow]*flowState
	// clock is V by band.
	clock map[int]uint64
	// bandOut is the band of each item handed out and not yet asked for by GetWithPriority.
	bandOut map[reconcile.Request]int
	seq     uint64
}

type entry struct {
	item  reconcile.Request
	band  int
	tag   uint64
	seq   uint64 // ties: first pushed first
	index int    // in ready
}

type flow struct {
	namespace string
	band      int
}

type flowState struct {
	last   uint64 // the tag of the flow's last item queued
	queued int
}

func newOrder() *order {
	return &order{
		wanted:  map[reconcile.Request]int{},
		queued:  map[reconcile.Request]*entry{},
		flows:   map[flow]*flowState{},
		clock:   map[int]uint64{},
		bandOut: map[reconcile.Request]int{},
	}
}

// want records that item was added in band.
func (o *order) want(item reconcile.Request, band int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if b, ok := o.wanted[item]; !ok || band > b {
		o.wanted[item] = band
	}
}

// takeWanted is the band item enters the queue in, forgetting the record.
func (o *order) takeWanted(item reconcile.Request) (int, bool) {
	band, ok := o.wanted[item]
	delete(o.wanted, item)
	return band, ok
}

// Push puts an item that is not queued into the queue, tagged at its namespace's turn.
func (o *order) Push(item reconcile.Request) {
	o.mu.Lock()
	defer o.mu.Unlock()
	band, _ := o.takeWanted(item) // normal when nothing was recorded
	e := &entry{item: item, band: band}
	o.join(e)
	o.queued[item] = e
	heap.Push(&o.ready, e)
}

// Touch is an add of an item already queued: it moves only to a higher band.
func (o *order) Touch(item reconcile.Request) {
	o.mu.Lock()
	defer o.mu.Unlock()
	band, ok := o.takeWanted(item)
	e := o.queued[item]
	if !ok || e == nil || band <= e.band {
		return
	}
	o.leave(e)
	e.band = band
	o.join(e)
	heap.Fix(&o.ready, e.index)
}

// Pop hands out the item first in order.
func (o *order) Pop() reconcile.Request {
	o.mu.Lock()
	defer o.mu.Unlock()
	e := heap.Pop(&o.ready).(*entry)
	delete(o.queued, e.item)
	o.clock[e.band] = max(o.clock[e.band], e.tag)
	o.leave(e)
	if len(o.queued) == 0 {
		clear(o.clock)
	}
	o.bandOut[e.item] = e.band
	return e.item
}

// Len is how many items are queued.
func (o *order) Len() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.ready.Len()
}

// handedOut is the band a handed-out item was queued in.
func (o *order) handedOut(item reconcile.Request) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	band := o.bandOut[item]
	delete(o.bandOut, item)
	return band
}

// join tags e at its namespace's turn in its band.
func (o *order) join(e *entry) {
	f := flow{e.item.Namespace, e.band}
	s := o.flows[f]
	if s == nil {
		s = &flowState{}
		o.flows[f] = s
	}
	s.last = max(s.last, o.clock[e.band]) + 1
	s.queued++
	o.seq++
	e.tag, e.seq = s.last, o.seq
}

// leave takes e out of its flow's count.
func (o *order) leave(e *entry) {
	f := flow{e.item.Namespace, e.band}
	if s := o.flows[f]; s != nil {
		if s.queued--; s.queued <= 0 {
			delete(o.flows, f)
		}
	}
}

// before is the order: the higher band first, then the smaller tag, then the first pushed.
func before(aBand int, aTag, aSeq uint64, bBand int, bTag, bSeq uint64) bool {
	if aBand != bBand {
		return aBand > bBand
	}
	if aTag != bTag {
		return aTag < bTag
	}
	return aSeq < bSeq
}

// readyHeap is a container/heap of the queued entries in order.
type readyHeap []*entry

func (h readyHeap) Len() int { return len(h) }
func (h readyHeap) Less(i, j int) bool {
	return before(h[i].band, h[i].tag, h[i].seq, h[j].band, h[j].tag, h[j].seq)
}
func (h readyHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index, h[j].index = i, j
}
func (h *readyHeap) Push(x any) {
	e := x.(*entry)
	e.index = len(*h)
	*h = append(*h, e)
}
func (h *readyHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return e
}
