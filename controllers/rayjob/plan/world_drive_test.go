package plan

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// controllerBackoff is how soon a pass whose effect or status write failed runs again.
const controllerBackoff = time.Second

// driver runs the world pass after pass as the controller would, judging every pass.
type driver struct {
	t       *testing.T
	w       *world
	history []string
	// passes are the recorded passes, in order.
	passes []*reconciled
}

func drive(t *testing.T, w *world) *driver { return &driver{t: t, w: w} }

// step runs one pass and judges it; it returns nil once the RayJob is gone.
func (d *driver) step() *reconciled {
	d.t.Helper()
	r := d.w.reconcile()
	if r == nil {
		return nil
	}
	d.history = append(d.history, describe(d.w, r))
	if len(d.history) > 60 {
		d.history = d.history[1:]
	}
	if b := breaches(d.w, r); len(b) > 0 {
		d.t.Fatalf("pass at %s:\n  %s\nhistory:\n%s", r.in.Now.Format(time.RFC3339Nano), strings.Join(b, "\n  "), strings.Join(d.history, "\n"))
	}
	d.passes = append(d.passes, r)
	return r
}

// wait is how long the controller waits after a pass: until its wake-up, or a second after
// a failure.
func wait(r *reconciled) time.Duration {
	if r.failed != "" {
		return controllerBackoff
	}
	return r.p.Wake.After(r.in.Now)
}

// until runs passes, moving the clock as the controller would (to the wake-up or the next
// watched change), until done says so or the world is quiet; it fails after max passes.
func (d *driver) until(max int, done func() bool) {
	d.t.Helper()
	for range max {
		if done != nil && done() {
			return
		}
		r := d.step()
		if r == nil {
			// The RayJob is gone: let the garbage collector finish.
			for e := d.w.nextEvent(); !e.IsZero(); e = d.w.nextEvent() {
				d.w.advance(e)
			}
			if done == nil || done() {
				return
			}
			d.t.Fatalf("the RayJob is gone and not done; history:\n%s", strings.Join(d.history, "\n"))
		}
		next := d.w.untilNext(wait(r))
		if next.IsZero() {
			if done == nil || done() {
				return
			}
			d.t.Fatalf("the world is quiet and not done; status %+v\nhistory:\n%s", d.w.job.Status, strings.Join(d.history, "\n"))
		}
		d.w.advance(next)
	}
	d.t.Fatalf("not done after %d passes; history:\n%s", max, strings.Join(d.history, "\n"))
}

// quiet runs until nothing more happens.
func (d *driver) quiet() { d.until(2000, nil) }

func describe(w *world, r *reconciled) string {
	st := r.p.Status
	s := fmt.Sprintf("%s %s/%s id=%s cluster=%s", r.in.Now.Sub(t0), st.JobDeploymentStatus, st.JobStatus, st.JobId, st.RayClusterName)
	if st.Reason != "" {
		s += " reason=" + string(st.Reason)
	}
	for _, a := range r.p.Actions {
		s += " | " + a.String()
	}
	for _, q := range r.p.Requests {
		s += " | " + q.String()
	}
	if r.failed != "" {
		s += " !! " + r.failed
	}
	if !r.p.Wake.At.IsZero() {
		s += " wake+" + r.p.Wake.At.Sub(r.in.Now).String()
	}
	if r.p.Wake.Soon {
		s += " soon"
	}
	_ = w
	return s
}
