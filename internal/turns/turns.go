// Package turns is the scheduling the operator's off-worker pools share (the dashboard pools
// of internal/dashboard, the metric-gate pool of internal/promgate): items with work wait in
// their namespace's queue; at most Workers requests are in flight, at most PerNamespace for
// one namespace; the namespaces take turns (round robin); an item whose backoff has not
// ended is passed over. A Scheduler holds no lock of its own: the pool's lock guards it.
package turns

import (
	"context"
	"time"
)

// Scheduler decides which queued item's request starts next. C is the pool's record of an
// item (a cluster, a RayService).
type Scheduler[C any] struct {
	workers, perNamespace int
	queues                map[string]*nsQueue[C]
	ring                  []*nsQueue[C] // namespaces with queued work, in turn order
	cursor                int           // index in ring of the namespace whose turn is next
	busy                  int           // requests in flight
	queued                int           // items waiting in all queues
	kick                  chan struct{}
	maxSeen               map[string]int // most requests in flight per namespace, for tests
	maxTotal              int
	// retryAt is when an item's backoff ends.
	retryAt func(C) time.Time
}

type nsQueue[C any] struct {
	name     string
	waiting  []C
	inflight int
}

// New returns a scheduler for workers requests in flight, perNamespace of them for one
// namespace; retryAt says when an item may be taken (the zero time: at once).
func New[C any](workers, perNamespace int, retryAt func(C) time.Time) *Scheduler[C] {
	return &Scheduler[C]{workers: max(workers, 1), perNamespace: max(perNamespace, 1), queues: map[string]*nsQueue[C]{},
		kick: make(chan struct{}, 1), maxSeen: map[string]int{}, retryAt: retryAt}
}

// Add puts an item with work in its namespace's queue and wakes the dispatcher.
func (t *Scheduler[C]) Add(namespace string, c C) {
	q := t.queues[namespace]
	if q == nil {
		q = &nsQueue[C]{name: namespace}
		t.queues[namespace] = q
		t.ring = append(t.ring, q)
	}
	q.waiting = append(q.waiting, c)
	t.queued++
	t.Wake()
}

// Wake tells the dispatcher to look again (it need not hold the pool's lock).
func (t *Scheduler[C]) Wake() {
	select {
	case t.kick <- struct{}{}:
	default:
	}
}

// take takes the next item whose request may start now, the namespaces taking turns, and
// counts its request in flight; ok is false when none may (no worker free, or nothing due).
func (t *Scheduler[C]) take(now time.Time) (c C, ok bool) {
	if t.busy >= t.workers {
		return c, false
	}
	n := len(t.ring)
	for i := range n {
		idx := (t.cursor + i) % n
		q := t.ring[idx]
		if q.inflight >= t.perNamespace {
			continue
		}
		for k, c := range q.waiting {
			if t.retryAt(c).After(now) {
				continue
			}
			q.waiting = append(q.waiting[:k:k], q.waiting[k+1:]...)
			t.queued--
			q.inflight++
			t.maxSeen[q.name] = max(t.maxSeen[q.name], q.inflight)
			t.cursor = (idx + 1) % n
			t.busy++
			t.maxTotal = max(t.maxTotal, t.busy)
			return c, true
		}
	}
	return c, false
}

// Dispatch starts every request a worker and its namespace have room for (start runs it)
// and returns how long until a waiting item's backoff ends.
func (t *Scheduler[C]) Dispatch(now time.Time, start func(c C)) time.Duration {
	for {
		c, ok := t.take(now)
		if !ok {
			return t.settle(now)
		}
		start(c)
	}
}

// Done counts the end of a request for an item of namespace.
func (t *Scheduler[C]) Done(namespace string) {
	t.busy--
	if q := t.queues[namespace]; q != nil {
		q.inflight--
	}
}

// settle removes namespaces with nothing queued or in flight from the ring (the turn stays
// with the namespace it was at, or the next one kept) and returns how long until a waiting
// item's backoff ends (an hour at most).
func (t *Scheduler[C]) settle(now time.Time) time.Duration {
	t.dropEmptyQueues()
	wait := time.Hour
	for _, q := range t.ring {
		for _, c := range q.waiting {
			if d := t.retryAt(c).Sub(now); d > 0 && d < wait {
				wait = d
			}
		}
	}
	return wait
}

func (t *Scheduler[C]) dropEmptyQueues() {
	if len(t.ring) == 0 {
		return
	}
	turn := t.cursor % len(t.ring)
	kept, cursor := t.ring[:0], -1
	for i, q := range t.ring {
		if len(q.waiting) == 0 && q.inflight == 0 {
			delete(t.queues, q.name)
			continue
		}
		if cursor < 0 && i >= turn {
			cursor = len(kept)
		}
		kept = append(kept, q)
	}
	clear(t.ring[len(kept):])
	t.ring, t.cursor = kept, max(cursor, 0)
}

// MaxInFlight is the most requests that were in flight at once, in all and for namespace.
func (t *Scheduler[C]) MaxInFlight(namespace string) (total, inNamespace int) {
	return t.maxTotal, t.maxSeen[namespace]
}

// Queued is how many items wait for a worker; InFlight how many requests run.
func (t *Scheduler[C]) Queued() int   { return t.queued }
func (t *Scheduler[C]) InFlight() int { return t.busy }

// Serve runs a pool until ctx ends (a manager Runnable's Start): dispatch whenever woken and
// when the next backoff ends (the wait dispatch returns), forget what is idle every minute.
func (t *Scheduler[C]) Serve(ctx context.Context, dispatch func() time.Duration, forgetIdle func()) error {
	sweep := time.NewTicker(time.Minute)
	defer sweep.Stop()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		timer.Reset(dispatch())
		select {
		case <-ctx.Done():
			return nil
		case <-t.kick:
		case <-timer.C:
		case <-sweep.C:
			forgetIdle()
		}
	}
}
