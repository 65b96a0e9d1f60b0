package rayservice

import (
	"errors"
	"strings"
	"time"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/dashboard"
)

// The world's dashboards are reached the way the controller reaches them: through a pool
// that reads and submits off the reconcile, one request at a time per head, with a
// doubling backoff after failures. This is a deterministic model of dashboard.Pool (whose
// own tests prove its bounds): requests take dashLatency, or the pool's timeout when the
// head never answers, and end between passes.

const (
	dashLatency = 20 * time.Millisecond
	dashTimeout = 5 * time.Second
	// refusedRetry is how long a refused config is not sent again unchanged.
	refusedRetry = time.Minute
)

// simPool is what the pool knows of one head.
type simPool struct {
	head       int // the head this state is about
	snap       dashboard.Snapshot
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
func (w *world) snapshot(c *simCluster) dashboard.Snapshot {
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

// submit is what the controller's executor does with a submission: keep or read the
// record, then hand it to the pool unless the pool holds it already.
func (w *world) submit(s SubmitServeConfig) error {
	c := w.clusters[s.Cluster.Name]
	if c == nil {
		return errors.New("cluster " + s.Cluster.Name + " not found")
	}
	w.snapshot(c)
	id := s.ID()
	if sub := c.pool.snap.Submission; sub != nil && sub.ID == id && (sub.Sending || (sub.Outcome == dashboard.Accepted && w.now.Sub(sub.At) < 2*time.Second) ||
		(sub.Outcome == dashboard.Refused && w.now.Sub(sub.At) < refusedRetry)) {
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
		c.pool.snap.Submission = &dashboard.SubmissionState{ID: id, Outcome: dashboard.Refused, BadRequest: true, At: w.now,
			Message: "the serve config " + s.Hash + " that " + c.rc.Name + " runs is not recorded (ConfigMap " + c.rc.Name + serveConfigRecordSuffix + " is missing)"}
		return nil
	}
	if sub := c.pool.snap.Submission; sub == nil || sub.ID != id {
		c.pool.snap.Submission = &dashboard.SubmissionState{ID: id}
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
		p.snap.Details, p.snap.ReadAt, p.snap.Err, p.snap.Stale = c.details(), w.now, "", false
		if w.proxyChecks {
			p.snap.Proxy = &dashboard.ProxyHealth{Healthy: !c.proxyDown, At: w.now}
			if c.proxyDown {
				p.snap.Proxy.Err = "GET http://head:8000/-/healthz: HTTP 503: This node is being drained."
			}
		}
		return
	}
	st := dashboard.SubmissionState{ID: r.put.id, Outcome: dashboard.Accepted, At: w.now}
	switch {
	case err != "":
		st.Outcome, st.Message = dashboard.Failed, err
	case refused:
		st.Outcome, st.Message, st.BadRequest = dashboard.Refused, "PUT: HTTP 400: simulated refusal", w.badRequest
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

// details is the dashboard's answer to a read.
func (c *simCluster) details() *dashboard.ServeDetails {
	d := &dashboard.ServeDetails{Applications: map[string]dashboard.Application{}}
	for n, a := range c.reportedApps() {
		d.Applications[n] = dashboard.Application{Name: n, Status: a.Status, Message: a.Message}
	}
	return d
}
