package dashboard

import (
	"context"
	"net/http"
	"sync"
	"time"
)

// turns is the scheduling both pools share (Pool for the Serve API, JobsPool for the Jobs
// API): clusters with work wait in their namespace's queue; at most workers requests are in
// flight, at most perNamespace for one namespace; the namespaces take turns (round robin);
// a cluster whose backoff has not ended is passed over. C is the pool's record of a cluster.
// The pool's lock guards it.
type turns[C any] struct {
	workers, perNamespace int
	queues                map[string]*nsQueue[C]
	ring                  []*nsQueue[C] // namespaces with queued work, in turn order
	cursor                int           // index in ring of the namespace whose turn is next
	busy                  int           // requests in flight
	kick                  chan struct{}
	maxSeen               map[string]int // most requests in flight per namespace, for tests
	maxTotal              int
	// retryAt is when a cluster's backoff ends.
	retryAt func(C) time.Time
	// ctx is set by serve; requests run under it.
	ctx context.Context
}

type nsQueue[C any] struct {
	name     string
	waiting  []C
	inflight int
}

func newTurns[C any](workers, perNamespace int, retryAt func(C) time.Time) turns[C] {
	return turns[C]{workers: workers, perNamespace: perNamespace, queues: map[string]*nsQueue[C]{},
		kick: make(chan struct{}, 1), maxSeen: map[string]int{}, retryAt: retryAt}
}

// add puts a cluster with work in its namespace's queue and wakes the dispatcher.
func (t *turns[C]) add(namespace string, c C) {
	q := t.queues[namespace]
	if q == nil {
		q = &nsQueue[C]{name: namespace}
		t.queues[namespace] = q
		t.ring = append(t.ring, q)
	}
	q.waiting = append(q.waiting, c)
	t.wake()
}

// wake tells the dispatcher to look again.
func (t *turns[C]) wake() {
	select {
	case t.kick <- struct{}{}:
	default:
	}
}

// take takes the next cluster whose request may start now, the namespaces taking turns, and
// counts its request in flight; ok is false when none may (no worker free, or nothing due).
func (t *turns[C]) take(now time.Time) (c C, ok bool) {
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

// dispatch starts every request a worker and its namespace have room for (start runs it,
// under ctx) and returns how long until a waiting cluster's backoff ends.
func (t *turns[C]) dispatch(now time.Time, start func(c C)) time.Duration {
	for {
		c, ok := t.take(now)
		if !ok {
			return t.settle(now)
		}
		start(c)
	}
}

// done counts the end of a request for a cluster of namespace.
func (t *turns[C]) done(namespace string) {
	t.busy--
	if q := t.queues[namespace]; q != nil {
		q.inflight--
	}
}

// settle removes namespaces with nothing queued or in flight from the ring (the turn stays
// with the namespace it was at, or the next one kept) and returns how long until a waiting
// cluster's backoff ends (an hour at most).
func (t *turns[C]) settle(now time.Time) time.Duration {
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

func (t *turns[C]) dropEmptyQueues() {
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

// maxInFlight is the most requests that were in flight at once, in all and for namespace.
func (t *turns[C]) maxInFlight(namespace string) (total, inNamespace int) {
	return t.maxTotal, t.maxSeen[namespace]
}

// bounds are the options both pools share, defaulted.
type bounds struct {
	workers, perNamespace                 int
	timeout, minBackoff, maxBackoff, idle time.Duration
	http                                  *http.Client
	now                                   func() time.Time
}

func (b bounds) withDefaults() bounds {
	if b.workers <= 0 {
		b.workers = DefaultWorkers
	}
	if b.perNamespace <= 0 {
		b.perNamespace = DefaultPerNamespace
	}
	if b.timeout <= 0 {
		b.timeout = DefaultTimeout
	}
	if b.minBackoff <= 0 {
		b.minBackoff = DefaultMinBackoff
	}
	if b.maxBackoff < b.minBackoff {
		b.maxBackoff = max(DefaultMaxBackoff, b.minBackoff)
	}
	if b.idle <= 0 {
		b.idle = 10 * time.Minute
	}
	if b.now == nil {
		b.now = time.Now
	}
	if b.http == nil {
		b.http = NewHTTP()
	}
	return b
}

// backoff is the wait before a cluster that failed failures times in a row is asked again:
// doubling from minBackoff, up to maxBackoff.
func (b bounds) backoff(failures int) time.Duration {
	d := b.minBackoff
	for i := 1; i < failures && d < b.maxBackoff; i++ {
		d *= 2
	}
	return min(d, b.maxBackoff)
}

// waited is how long a request that got no answer waited: its own timeout, or the
// transport's response header timeout when that is shorter.
func (b bounds) waited(timeout time.Duration) time.Duration {
	if t, ok := b.http.Transport.(*http.Transport); ok && t.ResponseHeaderTimeout > 0 {
		return min(timeout, t.ResponseHeaderTimeout)
	}
	return timeout
}

// serve runs a pool until ctx ends (a manager Runnable's Start; mu is the pool's lock):
// dispatch whenever woken and when the next backoff ends (the wait dispatch returns), forget
// what is idle every minute.
func (t *turns[C]) serve(ctx context.Context, mu sync.Locker, dispatch func() time.Duration, forgetIdle func()) error {
	mu.Lock()
	t.ctx = ctx
	mu.Unlock()
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
