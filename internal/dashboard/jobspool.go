package dashboard

import (
	"context"
	"net/http"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// A JobsPool carries out the Ray Jobs API requests of RayJobs (read a job's details, submit
// it, stop it) off the reconcile workers, under the bounds Pool keeps for the Serve API: at
// most Workers requests in flight, at most PerNamespace for one namespace's clusters,
// namespaces taking turns, every request bounded by Timeout, a cluster whose dashboard fails
// asked again only after a backoff. One cluster has one request in flight at a time, its
// requests carried out in the order asked.
//
// Reconciles read what the pool last heard (View) and ask for work (Read, Submit, Stop);
// when a request ends, OnDone tells the controller, which looks again. What the pool heard
// is kept per cluster and submission id, and forgotten when the cluster's head pod changes
// (a new head, or a restarted Ray, knows none of the old one's jobs) and when the operator
// restarts (the pool lives in memory). A request the pool cannot send (no head, no address)
// is answered at once as failed, so every request is answered within Timeout (plus the wait
// for a worker).
type JobsPool struct {
	o JobsPoolOptions
	b bounds

	mu       sync.Mutex
	clusters map[types.NamespacedName]*jobsCluster
	turns    turns[*jobsCluster]
}

// JobsPoolOptions configure a JobsPool; zero values take Pool's defaults.
type JobsPoolOptions struct {
	// Workers is how many requests may be in flight at once (default 16).
	Workers int
	// PerNamespace is how many of them may be for one namespace's clusters (default 4).
	PerNamespace int
	// Timeout bounds each request (default DefaultTimeout).
	Timeout time.Duration
	// MinBackoff and MaxBackoff bound the wait before a failing cluster is asked again
	// (defaults 1 s and 60 s).
	MinBackoff, MaxBackoff time.Duration
	// Idle is how long a job nobody asked about is remembered (default 10 min).
	Idle time.Duration
	// HTTP is the client (default NewHTTP()).
	HTTP *http.Client
	// OnDone is called, outside the pool's lock, after every request that was sent.
	OnDone func(JobsDone)
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// JobsTarget is a cluster's Jobs API as the controller observed it.
type JobsTarget struct {
	// Head is the cluster's head pod (Pod empty: none was found).
	Head Head
	// URL is the dashboard's base URL ("": the pool cannot send anything; Unreachable says
	// why).
	URL         string
	Unreachable string
	// Owner is the object to tell when a request ends (the RayJob).
	Owner types.NamespacedName
	// Token is the cluster's Ray auth token ("": none).
	Token BearerToken
}

// JobsDone reports the end of one request.
type JobsDone struct {
	Target JobsTarget
	Kind   JobRequestKind
	JobID  string
}

// JobRequestKind is what a request asks.
type JobRequestKind int

const (
	// JobReadRequest reads a job's details (GET /api/jobs/<id>).
	JobReadRequest JobRequestKind = iota
	// JobSubmitRequest submits a job (POST /api/jobs/).
	JobSubmitRequest
	// JobStopRequest stops a job (POST /api/jobs/<id>/stop).
	JobStopRequest
)

func (k JobRequestKind) String() string {
	return [...]string{"read", "submit", "stop"}[k]
}

// JobMemory is what the pool last heard from a cluster about one submission id; nil
// fields: nothing yet. It is a copy: the caller may keep it.
type JobMemory struct {
	Read   *JobReadAnswer
	Submit *JobSubmitAnswer
	Stop   *JobStopAnswer
}

// JobReadOutcome is what a read of a job found.
type JobReadOutcome int

const (
	// JobFound: the Jobs API returned the job's details.
	JobFound JobReadOutcome = iota
	// JobNotFound: the Jobs API has no job with this id (HTTP 404).
	JobNotFound
	// JobReadFailed: no usable answer.
	JobReadFailed
)

// JobReadAnswer is the last answer to a read.
type JobReadAnswer struct {
	// Sent is when the request was sent (it may wait for a worker before), At when its
	// answer came: the answer holds for a moment between the two.
	Sent    time.Time
	At      time.Time
	Outcome JobReadOutcome
	// Info is the job's details (JobFound), bounded and sanitized.
	Info JobInfo
	// Err says why the read failed (sanitized).
	Err string
}

// JobSubmitOutcome is what became of a submission.
type JobSubmitOutcome int

const (
	// JobSubmitPending: queued or in flight.
	JobSubmitPending JobSubmitOutcome = iota
	// JobSubmitAccepted: the Jobs API took the job.
	JobSubmitAccepted
	// JobSubmitAlreadyExists: the Jobs API has a job with this id already.
	JobSubmitAlreadyExists
	// JobSubmitRefused: the Jobs API refused the submission itself (HTTP 4xx), or it could not
	// be made (Reject); sent unchanged it fails the same way.
	JobSubmitRefused
	// JobSubmitFailed: no answer in time, a server error, or nothing to send it to: the job
	// may or may not have arrived.
	JobSubmitFailed
)

// JobSubmitAnswer is what became of the last submission of an id.
type JobSubmitAnswer struct {
	// At is when it was answered (zero while pending).
	At      time.Time
	Outcome JobSubmitOutcome
	// Message is the answer's error (sanitized).
	Message string
}

// JobStopAnswer is the answer to the last request to stop a job.
type JobStopAnswer struct {
	At time.Time
	// Stopped: Ray stopped the job (false: it had ended, or the stop failed).
	Stopped bool
	// Err says why the stop failed ("" when the Jobs API answered).
	Err string
}

// jobsCluster is what the pool holds for one cluster.
type jobsCluster struct {
	target   JobsTarget
	jobs     map[string]*jobEntry
	waiting  []jobRequest
	inflight *jobRequest
	queued   bool // in its namespace's queue
	failures int
	retryAt  time.Time
}

type jobEntry struct {
	mem     JobMemory
	touched time.Time
}

type jobRequest struct {
	kind JobRequestKind
	id   string
	sub  *JobSubmission
}

// NewJobsPool returns a pool; Start runs it.
func NewJobsPool(o JobsPoolOptions) *JobsPool {
	b := bounds{workers: o.Workers, perNamespace: o.PerNamespace, timeout: o.Timeout, minBackoff: o.MinBackoff,
		maxBackoff: o.MaxBackoff, idle: o.Idle, http: o.HTTP, now: o.Now}.withDefaults()
	return &JobsPool{o: o, b: b, clusters: map[types.NamespacedName]*jobsCluster{},
		turns: newTurns(b.workers, b.perNamespace, func(c *jobsCluster) time.Time { return c.retryAt })}
}

// Timeout is the longest a request may take.
func (p *JobsPool) Timeout() time.Duration { return p.b.timeout }

// View is what the pool last heard from the target's cluster about id. A target whose head
// pod changed starts afresh.
func (p *JobsPool) View(t JobsTarget, id string) JobMemory {
	p.mu.Lock()
	defer p.mu.Unlock()
	c := p.clusterFor(t)
	e := c.jobs[id]
	if e == nil {
		return JobMemory{}
	}
	e.touched = p.b.now()
	return e.mem.copy()
}

// Read asks for the job's details to be read.
func (p *JobsPool) Read(t JobsTarget, id string) {
	p.ask(t, jobRequest{kind: JobReadRequest, id: id})
}

// Submit asks for a job to be submitted under its SubmissionID. While a submission of the
// id is queued or in flight, another is not queued; from the moment it is queued, View
// reports it pending.
func (p *JobsPool) Submit(t JobsTarget, s JobSubmission) {
	s.Metadata = cloneStrings(s.Metadata)
	p.ask(t, jobRequest{kind: JobSubmitRequest, id: s.SubmissionID, sub: &s})
}

// Stop asks for a job to be stopped.
func (p *JobsPool) Stop(t JobsTarget, id string) {
	p.ask(t, jobRequest{kind: JobStopRequest, id: id})
}

// Reject records a submission that cannot be made (what it would send is not valid) as
// refused, with message as the reason.
func (p *JobsPool) Reject(t JobsTarget, id, message string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	c := p.clusterFor(t)
	p.entry(c, id).mem.Submit = &JobSubmitAnswer{At: p.b.now(), Outcome: JobSubmitRefused, Message: Sanitize(message, maxErrorMessage)}
}

// MaxInFlight is the most requests that were in flight at once, in all and for one
// namespace.
func (p *JobsPool) MaxInFlight(namespace string) (total, inNamespace int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.turns.MaxInFlight(namespace)
}

func (p *JobsPool) ask(t JobsTarget, q jobRequest) {
	p.mu.Lock()
	c := p.clusterFor(t)
	e := p.entry(c, q.id)
	if t.URL == "" {
		// Nothing can be sent: answered at once, as a request that got no answer.
		p.answerUnsent(e, q, t.Unreachable)
		p.mu.Unlock()
		return
	}
	defer p.mu.Unlock()
	if c.holds(q) {
		return
	}
	if q.kind == JobSubmitRequest {
		e.mem.Submit = &JobSubmitAnswer{Outcome: JobSubmitPending}
	}
	c.waiting = append(c.waiting, q)
	p.enqueue(c)
}

// answerUnsent records the answer to a request that could not be sent; the caller holds the
// lock.
func (p *JobsPool) answerUnsent(e *jobEntry, q jobRequest, why string) {
	if why == "" {
		why = "the cluster's dashboard cannot be reached"
	}
	why = Sanitize(why, maxErrorMessage)
	now := p.b.now()
	switch q.kind {
	case JobReadRequest:
		e.mem.Read = &JobReadAnswer{Sent: now, At: now, Outcome: JobReadFailed, Err: why}
	case JobSubmitRequest:
		e.mem.Submit = &JobSubmitAnswer{At: now, Outcome: JobSubmitFailed, Message: why}
	case JobStopRequest:
		e.mem.Stop = &JobStopAnswer{At: now, Err: why}
	}
}

// holds: the same request is waiting (a read only when no submission of the id waits after
// it: a read asked after a submission must come after it), or a submission or stop of the id
// is in flight.
func (c *jobsCluster) holds(q jobRequest) bool {
	for i := len(c.waiting) - 1; i >= 0; i-- {
		w := c.waiting[i]
		if w.id != q.id {
			continue
		}
		if w.kind == q.kind {
			return true
		}
		if q.kind == JobReadRequest && w.kind == JobSubmitRequest {
			break
		}
	}
	f := c.inflight
	return f != nil && q.kind != JobReadRequest && f.kind == q.kind && f.id == q.id
}

// clusterFor finds or creates the target's cluster; a changed head starts it afresh. The
// caller holds the lock.
func (p *JobsPool) clusterFor(t JobsTarget) *jobsCluster {
	c := p.clusters[t.Head.Cluster]
	if c == nil {
		c = &jobsCluster{target: t, jobs: map[string]*jobEntry{}}
		p.clusters[t.Head.Cluster] = c
	}
	if !sameHead(c.target.Head, t.Head) {
		// What the old head said no longer holds, and what was asked of it is not sent to the
		// new one: the controller asks again. A request in flight finds the head changed when
		// it ends, and its answer is dropped.
		c.jobs, c.waiting, c.failures, c.retryAt = map[string]*jobEntry{}, nil, 0, time.Time{}
	}
	c.target = t
	return c
}

func (p *JobsPool) entry(c *jobsCluster, id string) *jobEntry {
	e := c.jobs[id]
	if e == nil {
		e = &jobEntry{}
		c.jobs[id] = e
	}
	e.touched = p.b.now()
	return e
}

// enqueue puts a cluster with work in its namespace's queue; the caller holds the lock.
func (p *JobsPool) enqueue(c *jobsCluster) {
	if c.queued || c.inflight != nil || len(c.waiting) == 0 {
		return
	}
	p.turns.Add(c.target.Head.Cluster.Namespace, c)
	c.queued = true
}

// Start runs the pool until ctx ends (a manager Runnable; it needs the leader).
func (p *JobsPool) Start(ctx context.Context) error {
	return p.turns.serve(ctx, &p.mu, p.dispatch, p.forgetIdle)
}

// dispatch starts every request there is room for, each cluster's first waiting one; it
// returns how long until a cluster's backoff ends.
func (p *JobsPool) dispatch() time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.turns.Dispatch(p.b.now(), func(c *jobsCluster) {
		c.queued = false
		req := c.waiting[0]
		c.waiting = c.waiting[1:]
		c.inflight = &req
		go p.run(p.turns.ctx, c, c.target, req)
	})
}

// forgetIdle drops jobs nobody asked about for Idle, and clusters left without any.
func (p *JobsPool) forgetIdle() {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.b.now()
	for k, c := range p.clusters {
		for id, e := range c.jobs {
			if now.Sub(e.touched) > p.b.idle {
				delete(c.jobs, id)
			}
		}
		if len(c.jobs) == 0 && !c.queued && c.inflight == nil && len(c.waiting) == 0 {
			delete(p.clusters, k)
		}
	}
}

func (m JobMemory) copy() JobMemory {
	out := JobMemory{}
	if m.Read != nil {
		r := *m.Read
		r.Info.Metadata = cloneStrings(r.Info.Metadata)
		out.Read = &r
	}
	if m.Submit != nil {
		s := *m.Submit
		out.Submit = &s
	}
	if m.Stop != nil {
		s := *m.Stop
		out.Stop = &s
	}
	return out
}

func cloneStrings(m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
