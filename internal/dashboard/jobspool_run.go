package dashboard

import (
	"context"
	"errors"
	"net/http"
	"time"
)

// run carries out one request of a JobsPool and records its answer.
func (p *JobsPool) run(ctx context.Context, c *jobsCluster, t JobsTarget, q jobRequest) {
	if ctx == nil {
		ctx = context.Background()
	}
	sent := p.b.now()
	rctx, cancel := context.WithTimeout(ctx, p.b.timeout)
	client := &HTTPClient{BaseURL: t.URL, HTTP: p.b.http, Timeout: p.b.timeout, Token: t.Token}
	var (
		info    *JobInfo
		stopped bool
		err     error
	)
	path := JobsPath
	switch q.kind {
	case JobReadRequest:
		info, err = client.GetJobInfo(rctx, q.id)
		path += q.id
	case JobSubmitRequest:
		_, err = client.SubmitJob(rctx, *q.sub)
	case JobStopRequest:
		stopped, err = client.StopJob(rctx, q.id)
		path += q.id + "/stop"
	}
	if noAnswerInTime(err, rctx.Err()) {
		op := http.MethodGet
		if q.kind != JobReadRequest {
			op = http.MethodPost
		}
		err = &timeoutError{op: op, url: t.URL + path, after: p.b.waited(p.b.timeout)}
	}
	cancel()
	p.mu.Lock()
	p.recordJob(c, t, q, sent, info, stopped, err)
	p.mu.Unlock()
	p.turns.Wake()
	if p.o.OnDone != nil && ctx.Err() == nil {
		p.o.OnDone(JobsDone{Target: t, Kind: q.kind, JobID: q.id})
	}
}

// recordJob stores the answer to a request sent at sent; the caller holds the lock.
func (p *JobsPool) recordJob(c *jobsCluster, t JobsTarget, q jobRequest, sent time.Time, info *JobInfo, stopped bool, err error) {
	now := p.b.now()
	p.turns.Done(t.Head.Cluster.Namespace)
	c.inflight = nil
	defer p.enqueue(c)
	if !sameHead(c.target.Head, t.Head) || p.clusters[t.Head.Cluster] != c {
		return // the head changed meanwhile: the answer was the old head's
	}
	failed := false
	e := p.entry(c, q.id)
	msg := ""
	if err != nil {
		msg = Sanitize(err.Error(), maxErrorMessage)
	}
	switch q.kind {
	case JobReadRequest:
		a := &JobReadAnswer{Sent: sent, At: now}
		switch {
		case err == nil && info != nil:
			a.Outcome, a.Info = JobFound, *info
		case IsJobNotFound(err):
			a.Outcome = JobNotFound
		default:
			a.Outcome, a.Err, failed = JobReadFailed, msg, true
		}
		e.mem.Read = a
	case JobSubmitRequest:
		outcome := classifySubmit(err)
		failed = outcome == JobSubmitFailed
		e.mem.Submit = &JobSubmitAnswer{At: now, Outcome: outcome, Message: msg}
	case JobStopRequest:
		failed = err != nil && !IsJobNotFound(err)
		e.mem.Stop = &JobStopAnswer{At: now, Stopped: stopped, Err: msg}
	}
	if failed {
		c.failures++
		c.retryAt = now.Add(p.b.backoff(c.failures))
	} else {
		c.failures, c.retryAt = 0, time.Time{}
	}
}

// classifySubmit is the outcome of a submission from its error.
func classifySubmit(err error) JobSubmitOutcome {
	var he *Error
	switch {
	case err == nil:
		return JobSubmitAccepted
	case IsJobAlreadyExists(err):
		return JobSubmitAlreadyExists
	case errors.As(err, &he) && he.StatusCode >= 400 && he.StatusCode < 500 && he.StatusCode != http.StatusRequestTimeout && he.StatusCode != http.StatusTooManyRequests:
		return JobSubmitRefused
	}
	return JobSubmitFailed
}
