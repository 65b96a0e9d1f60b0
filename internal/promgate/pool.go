package promgate

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"

	raygatev1alpha1 "github.com/raygate/raygate/apis/raygate/v1alpha1"
	"github.com/raygate/raygate/internal/turns"
)

// A Pool evaluates metric gates off the reconcile workers, so a Prometheus that takes the
// whole query budget to answer (or never answers) holds a pool worker, never a reconcile.
// A reconcile asks for a RayService's gates (Answer) and gets at once either an answer
// fit to decide on, or none: then an evaluation is queued, and when it ends OnDone puts
// the RayService back in its controller's queue, whose next pass finds the answer.
//
// An answer decides only while it is fresh: evaluated at most MaxAge ago and not before
// the ask's NotBefore (the last traffic step). A gate without such an answer holds the
// upgrade: it never advances on old data, and never rolls back on it. An answer that made a
// gate fail is dropped (Drop), so a resumed upgrade is judged on a new one. An answer
// RefreshAfter old is still given while fresh, and a newer one is asked for meanwhile.
//
// With W workers and at most P evaluations in flight per namespace, the namespaces taking
// turns (internal/turns, the dashboard pools' scheduling): one namespace's RayServices
// never occupy more than P workers, and an evaluation waits behind at most one of each
// other namespace with work queued, each bounded by the client's budget. A RayService has
// at most one evaluation queued or in flight, and starts the next at least MinInterval
// after the last ended.
type Pool struct {
	o     PoolOptions
	eval  Evaluator
	mu    sync.Mutex
	ctx   context.Context
	byKey map[types.NamespacedName]*poolEntry
	turns *turns.Scheduler[*poolEntry]
}

// Evaluator runs a policy's queries (the Client; tests script it).
type Evaluator interface {
	Evaluate(ctx context.Context, gates []raygatev1alpha1.Gate, timeout time.Duration, v Vars) []Result
}

// PoolOptions configure a Pool; zero values take the defaults.
type PoolOptions struct {
	// Workers is how many evaluations may run at once (default 8).
	Workers int
	// PerNamespace is how many of them may be for one namespace's RayServices (default 2).
	PerNamespace int
	// MaxAge is how long after its evaluation started an answer may still decide
	// (default DefaultMaxAge).
	MaxAge time.Duration
	// RefreshAfter is how long after an answer came a pass that reads it asks for a newer
	// one (default 4 s: the gates of a waiting upgrade are looked at every 5 s).
	RefreshAfter time.Duration
	// MinInterval is the least time between the end of one evaluation of a RayService and
	// the start of the next (default 1 s).
	MinInterval time.Duration
	// Idle is how long a RayService nobody asked about is remembered (default 10 min).
	Idle time.Duration
	// OnDone is called, outside the pool's lock, after every evaluation, with the
	// RayService it was for.
	OnDone func(owner types.NamespacedName)
	// Metrics receive the queue depth and latencies (nil: none).
	Metrics *PoolMetrics
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// Pool defaults.
const (
	DefaultPoolWorkers  = 8
	DefaultPerNamespace = 2
	// DefaultMaxAge lets an answer that took the whole budget still decide the pass its
	// arrival starts, with a few seconds for that pass to come.
	DefaultMaxAge       = DefaultBudget + 5*time.Second
	DefaultRefreshAfter = 4 * time.Second
	DefaultMinInterval  = time.Second
)

// Ask is what one RayService's gates need answered.
type Ask struct {
	// Owner is the RayService, put back in the queue when the evaluation ends.
	Owner   types.NamespacedName
	Gates   []raygatev1alpha1.Gate
	Timeout time.Duration
	Vars    Vars
	// NotBefore: an answer evaluated earlier does not decide (the zero time: any fresh one).
	NotBefore time.Time
}

// key identifies what an answer answers: the queries as written and what fills them in.
// The gates' bounds are not part of it: the caller judges the values with the policy it
// read in the same pass.
func (a Ask) key() string {
	var b strings.Builder
	b.WriteString(a.Timeout.String())
	for _, v := range []string{a.Vars.Namespace, a.Vars.RayService, a.Vars.Pending, a.Vars.Active} {
		b.WriteString("\x00" + strconv.Itoa(len(v)) + ":" + v)
	}
	for _, g := range a.Gates {
		b.WriteString("\x00" + strconv.Itoa(len(g.Name)) + ":" + g.Name + strconv.Itoa(len(g.Query)) + ":" + g.Query)
	}
	return b.String()
}

// Answer is one evaluation of a policy's gates.
type Answer struct {
	Results []Result
	// At is when the evaluation started: every query was evaluated by Prometheus at or
	// after it.
	At time.Time
}

// Pending says why Answer had no answer to give.
type Pending string

const (
	// Queued: an evaluation waits for a worker (or for MinInterval).
	Queued Pending = "queued"
	// Running: an evaluation is in flight.
	Running Pending = "running"
)

// poolEntry is one RayService's evaluations; the pool's lock guards it.
type poolEntry struct {
	owner types.NamespacedName
	// want is the latest ask; wanted: an evaluation of it is to start.
	want   Ask
	wanted bool
	// answer is the last answer (nil: none, or dropped), answerKey the ask it answers,
	// answeredAt when it came.
	answer     *Answer
	answerKey  string
	answeredAt time.Time
	// running: an evaluation of runKey started at runAt is in flight.
	running bool
	runKey  string
	runAt   time.Time
	queued  bool
	// retryAt is when the next evaluation may start (MinInterval after the last ended).
	retryAt  time.Time
	askedAt  time.Time
	lastUsed time.Time
}

// NewPool returns a pool evaluating with eval; Start runs it.
func NewPool(eval Evaluator, o PoolOptions) *Pool {
	if o.Workers <= 0 {
		o.Workers = DefaultPoolWorkers
	}
	if o.PerNamespace <= 0 {
		o.PerNamespace = DefaultPerNamespace
	}
	if o.MaxAge <= 0 {
		o.MaxAge = DefaultMaxAge
	}
	if o.RefreshAfter <= 0 {
		o.RefreshAfter = DefaultRefreshAfter
	}
	if o.MinInterval <= 0 {
		o.MinInterval = DefaultMinInterval
	}
	if o.Idle <= 0 {
		o.Idle = 10 * time.Minute
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return &Pool{o: o, eval: eval, byKey: map[types.NamespacedName]*poolEntry{},
		turns: turns.New(o.Workers, o.PerNamespace, func(e *poolEntry) time.Time { return e.retryAt })}
}

// Answer returns at once the answer to a that may decide this pass, if there is one, and
// otherwise why not. An evaluation is queued when there is no such answer or it is
// RefreshAfter old, unless one that will do is queued or running already.
func (p *Pool) Answer(a Ask) (Answer, Pending, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.o.Now()
	e := p.byKey[a.Owner]
	if e == nil {
		e = &poolEntry{owner: a.Owner}
		p.byKey[a.Owner] = e
	}
	e.want, e.lastUsed = a, now
	k := a.key()
	ok := e.answer != nil && e.answerKey == k && fresh(e.answer.At, a.NotBefore, now, p.o.MaxAge)
	var why Pending
	if !ok || now.Sub(e.answeredAt) >= p.o.RefreshAfter {
		why = p.request(e, k, a.NotBefore, now)
	}
	if !ok {
		return Answer{}, why, false
	}
	return *e.answer, "", true
}

// request makes sure an evaluation of the entry's ask (key k) that started at or after
// notBefore is queued or running; the caller holds the lock.
func (p *Pool) request(e *poolEntry, k string, notBefore, now time.Time) Pending {
	if e.running && e.runKey == k && !e.runAt.Before(notBefore) {
		e.wanted = false // the evaluation in flight will do
		return Running
	}
	e.wanted = true
	if e.running {
		return Running // the entry is queued again when it ends
	}
	p.enqueue(e, now)
	return Queued
}

// Drop discards the owner's answer evaluated at at (one that made a gate fail): it decides
// nothing more.
func (p *Pool) Drop(owner types.NamespacedName, at time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if e := p.byKey[owner]; e != nil && e.answer != nil && e.answer.At.Equal(at) {
		e.answer = nil
	}
}

// fresh: evaluated at or after notBefore, and at most maxAge ago.
func fresh(at, notBefore, now time.Time, maxAge time.Duration) bool {
	return !at.Before(notBefore) && now.Sub(at) <= maxAge
}

// enqueue puts an entry in its namespace's queue; the caller holds the lock.
func (p *Pool) enqueue(e *poolEntry, now time.Time) {
	if e.queued || e.running {
		return
	}
	e.queued, e.askedAt = true, now
	p.turns.Add(e.owner.Namespace, e)
	p.o.Metrics.queued(1)
}

// Start runs the pool until ctx ends (a manager Runnable; it needs the leader, whose
// reconciles ask it).
func (p *Pool) Start(ctx context.Context) error {
	p.mu.Lock()
	p.ctx = ctx
	p.mu.Unlock()
	return p.turns.Serve(ctx, p.dispatch, p.forgetIdle)
}

// dispatch starts every evaluation there is room for; it returns how long until the next
// may start.
func (p *Pool) dispatch() time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.o.Now()
	return p.turns.Dispatch(now, func(e *poolEntry) {
		a := e.want
		e.queued, e.wanted, e.running, e.runKey, e.runAt = false, false, true, a.key(), now
		p.o.Metrics.queued(-1)
		p.o.Metrics.started(now.Sub(e.askedAt))
		go p.run(p.ctx, e, a, e.runKey, now)
	})
}

// run evaluates one ask and records its answer.
func (p *Pool) run(ctx context.Context, e *poolEntry, a Ask, key string, at time.Time) {
	if ctx == nil {
		ctx = context.Background()
	}
	results := p.eval.Evaluate(ctx, a.Gates, a.Timeout, a.Vars)
	p.mu.Lock()
	now := p.o.Now()
	p.turns.Done(e.owner.Namespace)
	p.o.Metrics.finished(now.Sub(at), failed(results))
	e.running, e.retryAt = false, now.Add(p.o.MinInterval)
	e.answer, e.answerKey, e.answeredAt = &Answer{Results: results, At: at}, key, now
	if e.wanted {
		p.enqueue(e, now) // asked for something this evaluation does not answer
	}
	p.mu.Unlock()
	p.turns.Wake()
	if p.o.OnDone != nil && ctx.Err() == nil {
		p.o.OnDone(e.owner)
	}
}

// failed: some gate got no answer.
func failed(results []Result) bool {
	for _, r := range results {
		if r.Err != "" {
			return true
		}
	}
	return false
}

// forgetIdle drops RayServices nobody asked about for Idle (deleted ones, mostly).
func (p *Pool) forgetIdle() {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.o.Now()
	for k, e := range p.byKey {
		if !e.queued && !e.running && now.Sub(e.lastUsed) > p.o.Idle {
			delete(p.byKey, k)
		}
	}
}

// MaxInFlight is the most evaluations that were in flight at once, in all and for one
// namespace.
func (p *Pool) MaxInFlight(namespace string) (total, inNamespace int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.turns.MaxInFlight(namespace)
}
