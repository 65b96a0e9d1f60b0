package plan

import (
	"errors"
	"maps"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
)

// The world's dashboards are reached the way the controller reaches them: through a pool
// that reads and submits off the reconcile, one request at a time per head, with a
// doubling backoff after failures. This is a deterministic model of dashboard.Pool (whose
// own tests prove its bounds): requests take dashLatency, or the pool's timeout when the
// head never answers, and end between passes. The plan package imports no client, so the
// model keeps its own copy of what the pool knows (simSnapshot) and of what the
// controller's observe makes of it (view, needsRead: dashboards.go in the controller).

const (
	dashLatency = 20 * time.Millisecond
	dashTimeout = 5 * time.Second
	// refusedRetry is how long a refused config is not sent again unchanged.
	refusedRetry = time.Minute
	// recordSuffix names a cluster's serve config record, as the controller names it.
	recordSuffix = "-serve-configs"
)

// simSnapshot is what the pool knows of one head: the fields of dashboard.Snapshot that the
// controller's observe reads.
type simSnapshot struct {
	// Apps are the applications the last read found (nil: none read yet), TargetCapacity
	// the target_capacity reported with them.
	Apps           map[string]rayv1.AppStatus
	TargetCapacity *int32
	ReadAt         time.Time
	// Err is why the last read failed; ErrAt is when.
	Err   string
	ErrAt time.Time
	// Stale: a serve config was accepted after Apps were read.
	Stale bool
	// Submission is the last serve config asked for; Accepted the last one accepted.
	Submission *submissionState
	Accepted   *submissionState
	// Proxy is what the last check of the head's Serve proxy found (nil: not checked).
	Proxy *ProxyHealth
}

// submissionState is what became of a submission (dashboard.SubmissionState).
type submissionState struct {
	ID         string
	Outcome    SubmitOutcome
	BadRequest bool
	Message    string
	At         time.Time
	// Sending: queued or in flight.
	Sending bool
}

func (s simSnapshot) lastAttempt() time.Time {
	if s.ErrAt.After(s.ReadAt) {
		return s.ErrAt
	}
	return s.ReadAt
}

// view is what observe gives the plan of a snapshot: applications read before the head
// accepted a config count as not read.
func (s simSnapshot) view() ServeView {
	v := ServeView{}
	if sub := s.Submission; sub != nil {
		v.Submission = &Submission{ID: sub.ID, Outcome: sub.Outcome, BadRequest: sub.BadRequest, Message: sub.Message}
	}
	if s.Err != "" && !s.ErrAt.Before(s.ReadAt) {
		v.Err = s.Err
	}
	if s.Apps != nil && !s.Stale {
		v.Apps, v.ReadAt, v.TargetCapacity = maps.Clone(s.Apps), metav1.NewTime(s.ReadAt), copyPtr(s.TargetCapacity)
	}
	if a := s.Accepted; a != nil {
		if hash, tc, ok := ParseSubmissionID(a.ID); ok {
			v.Accepted = &AcceptedConfig{Hash: hash, TargetCapacity: tc}
		}
	}
	if p := s.Proxy; p != nil {
		v.Proxy = &ProxyHealth{Healthy: p.Healthy, Err: p.Err}
	}
	return v
}

// needsRead: what the pool knows is old enough that observe asks it to read the head again:
// after poll while applications are not all RUNNING, the last read failed or the proxy is
// unhealthy; after resync once they are.
func (s simSnapshot) needsRead(now time.Time, poll, resync time.Duration) bool {
	age := now.Sub(s.lastAttempt())
	running := true
	for _, a := range s.Apps {
		running = running && a.Status == rayv1.ApplicationStatusRunning
	}
	switch {
	case s.lastAttempt().IsZero():
		return true
	case s.Apps == nil || s.Stale || s.Err != "" || !running || (s.Proxy != nil && !s.Proxy.Healthy):
		return age >= poll
	}
	return age >= resync
}

// simPool is what the pool knows of one head.
type simPool struct {
	head       int // the head this state is about
	snap       simSnapshot
	wantRead   bool
	wantSubmit *simSubmission
	inflight   *simRequest
	failures   int
	retryAt    time.Time
}

type simSubmission struct {
	id  string
	cfg *ServeConfig
	tc  *int32
}

type simRequest struct {
	put    *simSubmission // nil: a read
	doneAt time.Time
	head   int
	// lost: the operator restarted while it was in flight; it reaches the dashboard, but
	// nobody hears the answer.
	lost bool
}

// snapshot is the pool's snapshot of a cluster's current head.
func (w *world) snapshot(c *simCluster) simSnapshot {
	if c.pool.head != c.head {
		c.pool = simPool{head: c.head, inflight: c.pool.inflight}
	}
	return c.pool.snap
}

// restartOperator forgets everything the pool knew; requests in flight still reach the
// dashboards.
func (w *world) restartOperator() {
	for _, c := range w.clusters {
		in := c.pool.inflight
		if in != nil {
			in.lost = true
		}
		c.pool = simPool{head: c.head, inflight: in}
	}
}

// submit is what the controller does with a submission: keep or read the
// record, then hand it to the pool unless the pool holds it already.
func (w *world) submit(s SubmitServeConfig) error {
	c := w.clusters[s.Cluster.Name]
	if c == nil {
		return errors.New("cluster " + s.Cluster.Name + " not found")
	}
	w.snapshot(c)
	id := s.ID()
	if sub := c.pool.snap.Submission; sub != nil && sub.ID == id && (sub.Sending || (sub.Outcome == SubmitAccepted && w.now.Sub(sub.At) < 2*time.Second) ||
		(sub.Outcome == SubmitRefused && w.now.Sub(sub.At) < refusedRetry)) {
		return nil
	}
	cfg := s.Config
	if cfg != nil {
		rec := map[string]*ServeConfig{cfg.hash: cfg}
		for _, h := range s.Keep {
			if old := w.records[c.rc.Name][h]; old != nil {
				rec[h] = old
			}
		}
		w.records[c.rc.Name] = rec
	} else if cfg = w.records[c.rc.Name][s.Hash]; cfg == nil {
		c.pool.snap.Submission = &submissionState{ID: id, Outcome: SubmitRefused, BadRequest: true, At: w.now,
			Message: "the serve config " + s.Hash + " that " + c.rc.Name + " runs is not recorded (ConfigMap " + c.rc.Name + recordSuffix + " is missing)"}
		return nil
	}
	if sub := c.pool.snap.Submission; sub == nil || sub.ID != id {
		c.pool.snap.Submission = &submissionState{ID: id}
	}
	c.pool.snap.Submission.Sending = true
	c.pool.wantSubmit = &simSubmission{id: id, cfg: cfg, tc: s.TargetCapacity}
	w.kick(c)
	return nil
}

// kick starts the head's next request, if it has one and is not backing off.
func (w *world) kick(c *simCluster) {
	p := &c.pool
	if p.inflight != nil || (p.wantSubmit == nil && !p.wantRead) || w.now.Before(p.retryAt) {
		return
	}
	r := &simRequest{doneAt: w.now.Add(dashLatency), head: c.head}
	if c.dashboardHung {
		r.doneAt = w.now.Add(dashTimeout)
	}
	if p.wantSubmit != nil {
		r.put, p.wantSubmit = p.wantSubmit, nil
	} else {
		p.wantRead = false
	}
	p.inflight = r
}

// nextPoolEvent is when the next request ends or a backoff ends with work waiting (zero:
// nothing pending).
func (w *world) nextPoolEvent() time.Time {
	var at time.Time
	consider := func(t time.Time) {
		if !t.IsZero() && (at.IsZero() || t.Before(at)) {
			at = t
		}
	}
	for _, c := range w.clusters {
		if r := c.pool.inflight; r != nil {
			consider(r.doneAt)
		} else if c.pool.wantRead || c.pool.wantSubmit != nil {
			consider(maxTime(c.pool.retryAt, w.now))
		}
	}
	return at
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// runPool ends the requests due now and starts the next ones.
func (w *world) runPool() {
	for _, c := range w.clusters {
		if r := c.pool.inflight; r != nil && !w.now.Before(r.doneAt) {
			c.pool.inflight = nil
			w.answer(c, r)
		}
		w.kick(c)
	}
}

// answer is the head's answer to a request, as the pool records it.
func (w *world) answer(c *simCluster, r *simRequest) {
	var err string
	switch {
	case r.head != c.head:
		return // the head is gone; its successor knows nothing of this
	case c.dashboardHung:
		err = "no answer within 5s"
	case c.dashboardDown:
		err = "the Ray dashboard is unreachable: connection refused"
	}
	refused := false
	if err == "" && r.put != nil && w.refuseNext > 0 {
		w.refuseNext--
		refused = true
	}
	if err == "" && r.put != nil && !refused {
		c.deploy(r.put, w.now)
	}
	if r.lost {
		return
	}
	p := &c.pool
	if err != "" {
		p.failures++
		p.retryAt = w.now.Add(min(time.Second<<min(p.failures-1, 6), time.Minute))
	} else {
		p.failures, p.retryAt = 0, time.Time{}
	}
	if r.put == nil {
		if err != "" {
			p.snap.Err, p.snap.ErrAt = err, w.now
			return
		}
		p.snap.Apps, p.snap.ReadAt, p.snap.Err, p.snap.Stale = c.reportedApps(), w.now, "", false
		p.snap.TargetCapacity = copyPtr(c.runningTC)
		if w.proxyChecks {
			p.snap.Proxy = &ProxyHealth{Healthy: !c.proxyDown}
			if c.proxyDown {
				p.snap.Proxy.Err = "GET http://head:8000/-/healthz: HTTP 503: This node is being drained."
			}
		}
		return
	}
	st := submissionState{ID: r.put.id, Outcome: SubmitAccepted, At: w.now}
	switch {
	case err != "":
		st.Outcome, st.Message = SubmitFailed, err
	case refused:
		st.Outcome, st.Message, st.BadRequest = SubmitRefused, "PUT: HTTP 400: simulated refusal", w.badRequest
	default:
		acc := st
		p.snap.Accepted, p.snap.Stale, p.wantRead = &acc, true, true
	}
	if sub := p.snap.Submission; sub != nil && sub.ID == st.ID {
		st.Sending = p.wantSubmit != nil
		p.snap.Submission = &st
	}
}

// deploy is the dashboard running a submitted config.
func (c *simCluster) deploy(s *simSubmission, now time.Time) {
	if c.deployedHash != s.cfg.hash || len(c.apps) == 0 {
		c.apps = map[string]rayv1.AppStatus{}
		for _, a := range s.cfg.apps {
			c.apps[a] = rayv1.AppStatus{Status: rayv1.ApplicationStatusDeploying}
		}
		c.deployedHash, c.appsDueAt = s.cfg.hash, now.Add(deployDelay)
		c.brokenConfig = strings.Contains(s.cfg.source, brokenImportPath)
	}
	c.runningTC = s.tc
}

func copyPtr(v *int32) *int32 {
	if v == nil {
		return nil
	}
	c := *v
	return &c
}
