package plan

import (
	"fmt"
	"maps"
	"slices"
	"time"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
)

// simPool is the dashboard pool as the controller sees it: requests are carried out
// poolDelay (plus the world's poolLag) after they are asked, one at a time per cluster in
// the order asked, and their answers kept per cluster and id. It forgets everything when
// the operator restarts and a cluster's answers when its head is lost.
type simPool struct {
	mem   map[poolKey]*JobsView
	queue []poolRequest
}

type poolKey struct{ cluster, id string }

type poolRequest struct {
	due time.Time
	req Request
	// lost: the operator restarted while it was in flight; it still reaches the cluster,
	// but nobody hears the answer.
	lost bool
}

func (p *simPool) reset() {
	p.mem = map[poolKey]*JobsView{}
	for i := range p.queue {
		p.queue[i].lost = true
	}
}

func (p *simPool) entry(cluster, id string) *JobsView {
	k := poolKey{cluster, id}
	if p.mem[k] == nil {
		p.mem[k] = &JobsView{Cluster: cluster, JobID: id}
	}
	return p.mem[k]
}

// forget drops what the pool heard from a cluster (its head changed).
func (p *simPool) forget(cluster string) {
	for k := range p.mem {
		if k.cluster == cluster {
			delete(p.mem, k)
		}
	}
}

// view is what the controller reads for the attempt's cluster and id.
func (p *simPool) view(cluster, id string) JobsView {
	e := p.mem[poolKey{cluster, id}]
	if e == nil || cluster == "" || id == "" {
		return JobsView{}
	}
	v := *e
	if e.Read != nil {
		r := *e.Read
		v.Read = &r
	}
	if e.Submission != nil {
		s := *e.Submission
		v.Submission = &s
	}
	if e.Stop != nil {
		s := *e.Stop
		v.Stop = &s
	}
	return v
}

// ask queues a request; one like a request already queued is the same request.
func (p *simPool) ask(w *world, q Request) {
	cluster, id := q.target()
	for _, r := range p.queue {
		if !r.lost && sameRequest(r.req, q) {
			return
		}
	}
	if _, ok := q.(SubmitJob); ok {
		p.entry(cluster, id).Submission = &SubmitAnswer{Outcome: SubmitPending}
	}
	due := w.now.Add(poolDelay + w.poolLag)
	for _, r := range p.queue {
		if c, _ := r.req.target(); c == cluster && !r.due.Before(due) {
			due = r.due.Add(time.Millisecond)
		}
	}
	p.queue = append(p.queue, poolRequest{due: due, req: q})
}

func sameRequest(a, b Request) bool {
	switch a := a.(type) {
	case ReadJob:
		b, ok := b.(ReadJob)
		return ok && a == b
	case SubmitJob:
		b, ok := b.(SubmitJob)
		return ok && a.Cluster == b.Cluster && a.JobID == b.JobID
	case StopJob:
		b, ok := b.(StopJob)
		return ok && a.Cluster == b.Cluster && a.JobID == b.JobID
	}
	return false
}

func (p *simPool) next() time.Time {
	var t time.Time
	for _, r := range p.queue {
		t = earliest(t, r.due)
	}
	return t
}

// fire carries out the requests due.
func (p *simPool) fire(w *world) {
	var rest []poolRequest
	for _, r := range p.queue {
		if r.due.After(w.now) {
			rest = append(rest, r)
			continue
		}
		p.carryOut(w, r)
	}
	p.queue = rest
}

func (p *simPool) carryOut(w *world, r poolRequest) {
	cluster, id := r.req.target()
	c := w.clusters[cluster]
	up := c != nil && c.reachable(w.now)
	var job *simRayJob
	if up {
		job = c.jobs[id]
	}
	answer := func(set func(e *JobsView)) {
		if !r.lost {
			set(p.entry(cluster, id))
		}
	}
	switch q := r.req.(type) {
	case ReadJob:
		read := &JobRead{At: w.now, Outcome: ReadFailed, Err: "dial tcp: connection refused"}
		switch {
		case up && job != nil:
			read = &JobRead{At: w.now, Outcome: ReadFound, Info: job.info(w.now)}
		case up:
			read = &JobRead{At: w.now, Outcome: ReadNotFound}
		}
		answer(func(e *JobsView) { e.Read = read })
	case SubmitJob:
		sub := &SubmitAnswer{At: w.now, Outcome: SubmitFailed, Message: "context deadline exceeded"}
		switch {
		case up && w.app.refuse != "":
			sub = &SubmitAnswer{At: w.now, Outcome: SubmitRefused, Message: w.app.refuse}
		case up && w.submit(c, q.JobID):
			sub = &SubmitAnswer{At: w.now, Outcome: SubmitAlreadyExists}
		case up:
			sub = &SubmitAnswer{At: w.now, Outcome: SubmitAccepted}
		}
		switch w.nextSubmission {
		case "restart":
			p.reset()
			r.lost = true
		case "timeout":
			sub = &SubmitAnswer{At: w.now, Outcome: SubmitFailed, Message: "context deadline exceeded"}
		}
		w.nextSubmission = ""
		answer(func(e *JobsView) { e.Submission = sub })
	case StopJob:
		stop := &StopAnswer{At: w.now, Err: "dial tcp: connection refused"}
		if up {
			stop.Err = ""
			if job != nil && !rayv1.IsJobTerminal(job.status(w.now)) {
				job.stoppedAt = w.now
			}
		}
		answer(func(e *JobsView) { e.Stop = stop })
	}
}

// advance moves the clock to t, carrying out everything that happens on the way.
func (w *world) advance(t time.Time) {
	for i := 0; ; i++ {
		if i > 100000 {
			panic(fmt.Sprintf("the world does not settle at %s: next event %s", w.now, w.nextEvent()))
		}
		e := w.nextEvent()
		if e.IsZero() || e.After(t) {
			break
		}
		w.now = latest(w.now, e)
		w.fire()
	}
	w.now = latest(w.now, t)
}

// nextEvent is when the world next changes in a way the controller watches (a cluster
// ready or gone, a head back, a submitter's step, a pool answer); zero: nothing pending.
func (w *world) nextEvent() time.Time {
	t := w.pool.next()
	for _, n := range slices.Sorted(maps.Keys(w.clusters)) {
		c := w.clusters[n]
		if !c.readyAt.IsZero() && c.readyAt.After(w.now) {
			t = earliest(t, c.readyAt)
		}
		if !c.deletingAt.IsZero() {
			t = earliest(t, c.deletingAt.Add(deleteDelay))
		}
		if !c.headLostAt.IsZero() && c.sidecar == nil && c.headLostAt.Add(headRestart).After(w.now) {
			t = earliest(t, c.headLostAt.Add(headRestart))
		}
		if c.sidecar != nil {
			t = earliest(t, c.sidecar.next(w, c))
		}
	}
	if w.submitter != nil {
		t = earliest(t, w.submitter.next(w))
	}
	return t
}

// fire carries out what is due now.
func (w *world) fire() {
	w.pool.fire(w)
	for _, n := range slices.Sorted(maps.Keys(w.clusters)) {
		c := w.clusters[n]
		if !c.deletingAt.IsZero() && !w.now.Before(c.deletingAt.Add(deleteDelay)) {
			delete(w.clusters, n)
			w.pool.forget(n)
			continue
		}
		if c.sidecar != nil {
			if due := c.sidecar.next(w, c); !due.IsZero() && !due.After(w.now) {
				c.sidecar.fire(w, c)
			}
		}
	}
	if w.submitter != nil {
		if due := w.submitter.next(w); !due.IsZero() && !due.After(w.now) {
			w.submitter.fire(w)
		}
	}
}

// untilNext is how far the clock moves after a pass that wants to run again after wait
// (0: not at all): to the wake-up, or to the next watched change if that comes first.
func (w *world) untilNext(wait time.Duration) time.Time {
	if w.kicked {
		return w.now
	}
	e := w.nextEvent()
	if wait > 0 {
		return earliest(e, w.now.Add(wait))
	}
	return e
}

// loseHead loses a cluster's head pod: its jobs and what the pool heard of it go too.
func (w *world) loseHead(name string) {
	c := w.clusters[name]
	if c == nil || !c.headUp(w.now) {
		return
	}
	c.headLostAt = w.now
	c.jobs = map[string]*simRayJob{}
	w.pool.forget(name)
}
