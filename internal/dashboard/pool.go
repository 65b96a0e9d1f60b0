package dashboard

import (
	"context"
	"errors"
	"net"
	"net/http"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// A Pool carries out dashboard requests off the reconcile workers, so a head pod that
// accepts connections and never answers holds a pool worker for at most Timeout and never a
// reconcile. Reconciles read the last answer (Snapshot) and ask for work (Refresh, Submit);
// when a request ends, OnDone tells the controller, which looks again.
//
// The bound it keeps, with W workers, at most P requests in flight per namespace and a
// per-request timeout T:
//
//   - the dashboards of one namespace never occupy more than P of the W workers, so while
//     fewer than W/P namespaces have slow dashboards, every other namespace's request starts
//     at once;
//   - namespaces take turns (round robin), so a request waits behind at most one request of
//     each other namespace with work queued, and no request lasts longer than T (a read
//     that checks a Serve proxy too, T + ProxyTimeout): with A namespaces queueing, a
//     request starts within ceil(A/W)·(T + ProxyTimeout) of being asked for;
//   - a cluster whose dashboard fails is asked again only after a backoff that doubles from
//     MinBackoff to MaxBackoff, so a failing head costs at most one request per backoff.
//
// A read of a target with a ProxyURL then checks the head's Serve proxy, one request after
// the other (a head never has more than one request of the pool at a time), the check
// bounded by ProxyTimeout: a read holds its worker for at most T + ProxyTimeout, and a
// proxy that does not answer in time backs the cluster off as a failing dashboard does.
type Pool struct {
	o PoolOptions
	b bounds

	mu      sync.Mutex
	entries map[types.NamespacedName]*entry
	turns   turns[*entry]
}

// PoolOptions configure a Pool; zero values take the defaults.
type PoolOptions struct {
	// Workers is how many requests may be in flight at once (default 16).
	Workers int
	// PerNamespace is how many of them may be for one namespace's clusters (default 4).
	PerNamespace int
	// Timeout bounds each request (default DefaultTimeout).
	Timeout time.Duration
	// MinBackoff and MaxBackoff bound the wait before a failing cluster is asked again
	// (defaults 1 s and 60 s).
	MinBackoff, MaxBackoff time.Duration
	// RefusedRetry is how long a serve config the dashboard refused (HTTP 4xx) is not sent
	// again unchanged (default 60 s).
	RefusedRetry time.Duration
	// Idle is how long a cluster nobody asked about is remembered (default 10 min).
	Idle time.Duration
	// HTTP is the client (default NewHTTP()).
	HTTP *http.Client
	// OnDone is called, outside the pool's lock, after every request.
	OnDone func(Done)
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// Pool defaults.
const (
	DefaultWorkers      = 16
	DefaultPerNamespace = 4
	DefaultMinBackoff   = time.Second
	DefaultMaxBackoff   = time.Minute
)

// Target is a cluster's dashboard: the head observed, its URL, and the object to tell when
// a request ends.
type Target struct {
	Head Head
	URL  string
	// ProxyURL is the base URL of the head's Serve proxy, checked with every read ("": not
	// checked).
	ProxyURL string
	Owner    types.NamespacedName
	// Token is the cluster's Ray auth token, sent with every request ("": none).
	Token BearerToken
}

// Submission is a serve config to PUT. Two submissions with the same ID are the same
// request: one queued or refused a moment ago is not sent again.
type Submission struct {
	ID   string
	Body []byte
	// Tag comes back in Done (e.g. what to announce once the dashboard accepted it).
	Tag any
}

// Outcome is the dashboard's answer to a submission.
type Outcome int

const (
	// NotAnswered: the submission is queued or being sent.
	NotAnswered Outcome = iota
	// Accepted: HTTP 2xx.
	Accepted
	// Refused: HTTP 4xx; sending it unchanged fails the same way.
	Refused
	// Failed: no answer in time, or HTTP 5xx; it is sent again after the backoff.
	Failed
)

func (o Outcome) String() string {
	return [...]string{"not answered", "accepted", "refused", "failed"}[o]
}

// SubmissionState is what became of a submission.
type SubmissionState struct {
	ID      string
	Outcome Outcome
	// BadRequest: the dashboard refused the config itself (HTTP 400).
	BadRequest bool
	// Message is the sanitized error ("" when accepted).
	Message string
	// At is when it was answered.
	At time.Time
	// Sending: it is queued or in flight (again, after a failure).
	Sending bool
}

// Snapshot is what the pool knows of one head's dashboard.
type Snapshot struct {
	// Details is the last Serve status read (nil: none yet). It is shared: read only.
	Details *ServeDetails
	// ReadAt is when Details was read.
	ReadAt time.Time
	// Err is why the last read failed ("" when it succeeded); ErrAt is when.
	Err   string
	ErrAt time.Time
	// Stale: a serve config was accepted after Details was read.
	Stale bool
	// Submission is the last serve config asked for (nil: none since this head appeared).
	Submission *SubmissionState
	// Accepted is the last serve config the dashboard accepted (nil: none seen).
	Accepted *SubmissionState
	// Proxy is what the last check of the head's Serve proxy found (nil: not checked since
	// this head appeared).
	Proxy *ProxyHealth
}

// LastAttempt is when the dashboard was last read, successfully or not.
func (s Snapshot) LastAttempt() time.Time {
	if s.ErrAt.After(s.ReadAt) {
		return s.ErrAt
	}
	return s.ReadAt
}

// Done reports the end of one request.
type Done struct {
	Target Target
	// Submission is the request's submission (nil: a read).
	Submission *Submission
	// Outcome is a submission's answer.
	Outcome Outcome
	// Err is why a read or submission did not succeed.
	Err error
}

// entry is one cluster's dashboard.
type entry struct {
	target     Target
	details    *ServeDetails
	readAt     time.Time
	err        string
	errAt      time.Time
	stale      bool
	sub        *SubmissionState
	accepted   *SubmissionState
	proxy      *ProxyHealth
	failures   int
	retryAt    time.Time
	wantRead   bool
	wantSubmit *Submission
	queued     bool // in its namespace's queue
	running    bool // a request is in flight
	touched    time.Time
}

type job struct {
	e      *entry
	target Target
	sub    *Submission
}

// NewPool returns a pool; Start runs it.
func NewPool(o PoolOptions) *Pool {
	if o.RefusedRetry <= 0 {
		o.RefusedRetry = time.Minute
	}
	b := bounds{workers: o.Workers, perNamespace: o.PerNamespace, timeout: o.Timeout, minBackoff: o.MinBackoff,
		maxBackoff: o.MaxBackoff, idle: o.Idle, http: o.HTTP, now: o.Now}.withDefaults()
	return &Pool{o: o, b: b, entries: map[types.NamespacedName]*entry{},
		turns: newTurns(b.workers, b.perNamespace, func(e *entry) time.Time { return e.retryAt })}
}

// Timeout is the longest a request may take.
func (p *Pool) Timeout() time.Duration { return p.b.timeout }

// Snapshot returns what the pool knows of the target's dashboard. A target whose head pod
// changed starts afresh: a new head runs nothing the old one was given.
func (p *Pool) Snapshot(t Target) Snapshot {
	p.mu.Lock()
	defer p.mu.Unlock()
	e := p.entryFor(t)
	s := Snapshot{Details: e.details, ReadAt: e.readAt, Err: e.err, ErrAt: e.errAt, Stale: e.stale}
	if e.sub != nil {
		c := *e.sub
		s.Submission = &c
	}
	if e.accepted != nil {
		c := *e.accepted
		s.Accepted = &c
	}
	if e.proxy != nil {
		c := *e.proxy
		s.Proxy = &c
	}
	return s
}

// Refresh asks for the target's Serve status to be read (once, however often asked before
// it is).
func (p *Pool) Refresh(t Target) {
	p.mu.Lock()
	defer p.mu.Unlock()
	e := p.entryFor(t)
	e.wantRead = true
	p.enqueue(e)
}

// Wants reports whether Submit would send a submission with this ID (it is not queued, in
// flight or refused a moment ago), so a caller can skip preparing one.
func (p *Pool) Wants(t Target, id string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return !p.holds(p.entryFor(t), id)
}

// Reject records a submission that could not be made (what it would send is missing) as
// refused, with message as the reason: it is not attempted again for RefusedRetry.
func (p *Pool) Reject(t Target, id, message string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	e := p.entryFor(t)
	e.sub = &SubmissionState{ID: id, Outcome: Refused, BadRequest: true, Message: Sanitize(message, maxErrorMessage), At: p.b.now()}
}

// acceptedHold is how long a submission the dashboard accepted is not sent again. A pass
// that read the pool just before the answer came still sees the submission unanswered and
// asks for it again; that second PUT of the same config would make Serve redeploy nothing
// but costs the head a request. The controller's next pass sees the acceptance in
// milliseconds (the answer queues it); 2 s leaves a loaded operator room.
const acceptedHold = 2 * time.Second

// holds: the submission is queued, in flight, accepted less than acceptedHold ago, or
// refused less than RefusedRetry ago.
func (p *Pool) holds(e *entry, id string) bool {
	cur := e.sub
	if cur == nil || cur.ID != id {
		return false
	}
	age := p.b.now().Sub(cur.At)
	return cur.Sending || (cur.Outcome == Accepted && age < acceptedHold) || (cur.Outcome == Refused && age < p.o.RefusedRetry)
}

// Submit asks for a serve config to be sent. The same submission is not sent again while
// it is queued or in flight, nor for RefusedRetry after the dashboard refused it; a failed
// one is sent again after the cluster's backoff. A newer submission replaces one not yet
// sent.
func (p *Pool) Submit(t Target, s Submission) {
	p.mu.Lock()
	defer p.mu.Unlock()
	e := p.entryFor(t)
	if p.holds(e, s.ID) {
		return
	}
	if e.sub == nil || e.sub.ID != s.ID {
		e.sub = &SubmissionState{ID: s.ID}
	}
	e.sub.Sending = true
	e.wantSubmit = &s
	p.enqueue(e)
}

// MaxInFlight is the most requests that were in flight at once, in all and for one
// namespace.
func (p *Pool) MaxInFlight(namespace string) (total, inNamespace int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.turns.MaxInFlight(namespace)
}

// entryFor finds or creates the target's entry; the caller holds the lock.
func (p *Pool) entryFor(t Target) *entry {
	now := p.b.now()
	e := p.entries[t.Head.Cluster]
	if e == nil {
		e = &entry{target: t}
		p.entries[t.Head.Cluster] = e
	}
	if !sameHead(e.target.Head, t.Head) {
		// What the old head said or was given no longer holds. A request in flight for it
		// finds the head changed when it ends and is dropped.
		*e = entry{target: t, queued: e.queued, running: e.running}
	}
	if e.target.ProxyURL != t.ProxyURL {
		e.proxy = nil // what another address said is not this proxy's health
	}
	e.target, e.touched = t, now
	return e
}

// enqueue puts an entry with work in its namespace's queue; the caller holds the lock.
func (p *Pool) enqueue(e *entry) {
	if e.queued || e.running {
		return // queued already, or re-queued when its request ends
	}
	p.turns.Add(e.target.Head.Cluster.Namespace, e)
	e.queued = true
}

// Start runs the pool until ctx ends (a manager Runnable; it needs the leader: only the
// leader talks to dashboards).
func (p *Pool) Start(ctx context.Context) error {
	return p.turns.serve(ctx, &p.mu, p.dispatch, p.forgetIdle)
}

// dispatch starts every request there is room for; it returns how long until a cluster's
// backoff ends.
func (p *Pool) dispatch() time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.turns.Dispatch(p.b.now(), func(e *entry) {
		e.queued, e.running = false, true
		j := &job{e: e, target: e.target}
		if e.wantSubmit != nil {
			j.sub, e.wantSubmit = e.wantSubmit, nil
		} else {
			e.wantRead = false
		}
		go p.run(p.turns.ctx, j)
	})
}

// run carries out one request and records its answer.
func (p *Pool) run(ctx context.Context, j *job) {
	if ctx == nil {
		ctx = context.Background()
	}
	rctx, cancel := context.WithTimeout(ctx, p.b.timeout)
	c := &HTTPClient{BaseURL: j.target.URL, HTTP: p.b.http, Timeout: p.b.timeout, Token: j.target.Token}
	var details *ServeDetails
	var err error
	if j.sub != nil {
		err = c.DeployApplications(rctx, j.sub.Body)
	} else {
		details, err = c.GetServeDetails(rctx)
	}
	timedOut := noAnswerInTime(err, rctx.Err())
	cancel()
	if timedOut {
		err = &timeoutError{op: map[bool]string{true: "PUT", false: "GET"}[j.sub != nil], url: j.target.URL + ApplicationsPath, after: p.b.waited(p.b.timeout)}
	}
	var health *ProxyHealth
	if j.sub == nil && j.target.ProxyURL != "" {
		var proxyTimedOut bool
		health, proxyTimedOut = p.checkProxy(ctx, j.target.ProxyURL, j.target.Token)
		timedOut = timedOut || proxyTimedOut
	}
	done := Done{Target: j.target, Submission: j.sub, Err: err}
	p.mu.Lock()
	done.Outcome = p.record(j, details, err, health, timedOut)
	p.mu.Unlock()
	p.turns.Wake() // the worker is free for other clusters
	if p.o.OnDone != nil && ctx.Err() == nil {
		p.o.OnDone(done)
	}
	p.finish(j.e)
}

// finish lets the entry run its next request, once the last one's OnDone has returned: a
// cluster's completions arrive in the order its requests ran (the read an acceptance asks
// for must not be reported before the acceptance).
func (p *Pool) finish(e *entry) {
	p.mu.Lock()
	e.running = false
	if e.wantRead || e.wantSubmit != nil {
		p.enqueue(e)
	}
	p.mu.Unlock()
	p.turns.Wake()
}

// checkProxy asks the Serve proxy at url for its health, within ProxyTimeout, with the
// cluster's token when it has one (a token-authenticated Ray may guard the proxy too).
func (p *Pool) checkProxy(ctx context.Context, url string, token BearerToken) (*ProxyHealth, bool) {
	timeout := p.ProxyTimeout()
	pctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	err := (&HTTPClient{BaseURL: url, HTTP: p.b.http, Timeout: timeout, Token: token}).CheckProxyHealth(pctx)
	timedOut := noAnswerInTime(err, pctx.Err())
	if timedOut {
		err = &timeoutError{op: "GET", url: url + ProxyHealthPath, after: p.b.waited(timeout)}
	}
	h := &ProxyHealth{Healthy: err == nil}
	if err != nil {
		h.Err = Sanitize(err.Error(), maxErrorMessage)
	}
	return h, timedOut
}

// ProxyTimeout bounds a Serve proxy health check: KubeRay's 2 s, or Timeout when shorter.
func (p *Pool) ProxyTimeout() time.Duration { return min(DefaultProxyTimeout, p.b.timeout) }

// DefaultProxyTimeout bounds a Serve proxy health check: a healthy proxy answers at once.
const DefaultProxyTimeout = 2 * time.Second

// record stores a request's answer and frees its worker; the entry stays running until
// finish. The caller holds the lock.
func (p *Pool) record(j *job, details *ServeDetails, err error, proxy *ProxyHealth, timedOut bool) Outcome {
	e := j.e
	now := p.b.now()
	p.turns.Done(e.target.Head.Cluster.Namespace)
	outcome := classify(j.sub, err)
	if !sameHead(e.target.Head, j.target.Head) || p.entries[e.target.Head.Cluster] != e {
		return outcome // the head changed meanwhile: the answer was the old head's
	}
	if proxy != nil && e.target.ProxyURL == j.target.ProxyURL {
		proxy.At = now
		e.proxy = proxy
	}
	if outcome == Failed || (j.sub == nil && (err != nil || timedOut)) {
		e.failures++
		e.retryAt = now.Add(p.b.backoff(e.failures))
	} else {
		e.failures, e.retryAt = 0, time.Time{}
	}
	if j.sub == nil {
		if err != nil {
			e.err, e.errAt = Sanitize(err.Error(), maxErrorMessage), now
			return outcome
		}
		e.details, e.readAt, e.err, e.stale = details, now, "", false
		return outcome
	}
	st := SubmissionState{ID: j.sub.ID, Outcome: outcome, At: now}
	if err != nil {
		st.Message, st.BadRequest = Sanitize(err.Error(), maxErrorMessage), IsBadRequest(err)
	}
	if outcome == Accepted {
		// What was read before no longer tells what runs: read again before anyone relies
		// on it.
		c := st
		e.accepted, e.stale, e.wantRead = &c, true, true
	}
	if e.sub != nil && e.sub.ID == j.sub.ID {
		st.Sending = e.wantSubmit != nil
		e.sub = &st
	}
	return outcome
}

func sameHead(a, b Head) bool { return a.Pod == b.Pod && a.Restarts == b.Restarts }

func classify(sub *Submission, err error) Outcome {
	if sub == nil {
		return NotAnswered
	}
	var he *Error
	switch {
	case err == nil:
		return Accepted
	case errors.As(err, &he) && he.StatusCode >= 400 && he.StatusCode < 500 && he.StatusCode != http.StatusRequestTimeout && he.StatusCode != http.StatusTooManyRequests:
		return Refused
	}
	return Failed
}

// forgetIdle drops clusters nobody asked about for Idle (deleted ones, mostly).
func (p *Pool) forgetIdle() {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.b.now()
	for k, e := range p.entries {
		if !e.queued && !e.running && now.Sub(e.touched) > p.b.idle {
			delete(p.entries, k)
		}
	}
}

// maxErrorMessage is the longest error kept for the status.
const maxErrorMessage = 300

// noAnswerInTime: a request failed because the head accepted it and did not answer in
// time, whichever gave up first: the request's deadline, or the HTTP transport's response
// header timeout (whose own wording, "timeout awaiting response headers", says the same in
// the transport's terms). A connection that could not be set up in time is not that: it
// is reported as what it is (the dial's error names the address it could not reach).
func noAnswerInTime(err, ctxErr error) bool {
	if err == nil {
		return false
	}
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return false
	}
	return errors.Is(ctxErr, context.DeadlineExceeded) || errors.Is(err, context.DeadlineExceeded)
}

// timeoutError is a request that got no answer in time; its text does not change from one
// attempt to the next, so a status quoting it is not rewritten every time.
type timeoutError struct {
	op, url string
	after   time.Duration
}

func (e *timeoutError) Error() string {
	return e.op + " " + e.url + ": no answer within " + e.after.String()
}
