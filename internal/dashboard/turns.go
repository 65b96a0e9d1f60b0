package dashboard

import (
	"context"
	"net/http"
	"sync"
	"time"

	sched "github.com/raygate/raygate/internal/turns"
)

// turns is the scheduling both pools share (Pool for the Serve API, JobsPool for the Jobs
// API): the operator's scheduling core (internal/turns, which the metric-gate pool uses
// too) with the context the pool's requests run under. C is the pool's record of a
// cluster. The pool's lock guards it.
type turns[C any] struct {
	*sched.Scheduler[C]
	// ctx is set by serve; requests run under it.
	ctx context.Context
}

func newTurns[C any](workers, perNamespace int, retryAt func(C) time.Time) turns[C] {
	return turns[C]{Scheduler: sched.New(workers, perNamespace, retryAt)}
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
// dispatch whenever woken and when the next backoff ends, forget what is idle every minute.
func (t *turns[C]) serve(ctx context.Context, mu sync.Locker, dispatch func() time.Duration, forgetIdle func()) error {
	mu.Lock()
	t.ctx = ctx
	mu.Unlock()
	return t.Serve(ctx, dispatch, forgetIdle)
}
