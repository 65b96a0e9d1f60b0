package plan

import (
	"time"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
)

// Plan is the plan's answer for one pass: the Effects the pass must carry out and the
// Outcome it concludes, which is recorded once the effects are carried out.
type Plan struct {
	Effects
	Outcome
}

// Effects are what the pass must do, in this order: the ClusterActions carry out the
// new-cluster decision (create, replace, update in place, re-stamp); then come the Submits
// (serve configs, to the clusters as those leave them), then the other Actions. A failed
// effect stops the pass before its outcome is recorded.
type Effects struct {
	ClusterActions []Action
	Submits        []SubmitServeConfig
	Actions        []Action
	// Refresh names the clusters whose dashboards are to be read again now: a decision
	// waits for an answer newer than the one the pass had.
	Refresh []string
	// GateAsk: the pass reached a gated step without gate results (gates.go); the caller
	// evaluates the gates and plans again with their results.
	GateAsk *GateAsk
}

func (e *Effects) doFirst(a Action)           { e.ClusterActions = append(e.ClusterActions, a) }
func (e *Effects) do(a Action)                { e.Actions = append(e.Actions, a) }
func (e *Effects) submit(s SubmitServeConfig) { e.Submits = append(e.Submits, s) }
func (e *Effects) refresh(cluster string)     { e.Refresh = append(e.Refresh, cluster) }

// Outcome is what the pass concludes: the status to store and what follows once it is
// stored.
type Outcome struct {
	Status rayv1.RayServiceStatuses
	// Events are emitted once Status is stored (or needed no write): they announce
	// decisions the status records, so a failed write must not announce them.
	Events []Event
	// Conflicts describe objects raygate must manage that belong to someone else: they are
	// left untouched, the OwnershipConflict condition names them, and nothing moves until
	// they are gone.
	Conflicts []string
	// Decisions say what was decided and why, for the operator's log.
	Decisions []string
	Wake      Wakeup
	// Metrics are the facts counted once Status is stored.
	Metrics MetricFacts
}

// MetricFacts are what the metrics count of a pass once its status is stored, so a pass
// whose write fails (and runs again) does not count them twice.
type MetricFacts struct {
	// Finished is the upgrade Status ends.
	Finished *FinishedUpgrade
	// ActionRecorded is the upgrade action Status records for the first time.
	ActionRecorded string
	// GateFailed is a gate failure Status records.
	GateFailed *GateFailure
}

func (o *Outcome) tell(e Event)         { o.Events = append(o.Events, e) }
func (o *Outcome) note(decision string) { o.Decisions = append(o.Decisions, decision) }

// conflict notes an object raygate must leave alone; it is looked at again after a while.
func (o *Outcome) conflict(description string) {
	o.Conflicts = append(o.Conflicts, description)
}

// inputs are the plan's arguments, read by every step and changed by none.
type inputs struct {
	obs    *Observed
	want   *Desired
	stored *rayv1.RayServiceStatuses
	now    time.Time
}

// Decide plans one pass from what was observed, the spec and the stored status, at now.
// It calls no client, dashboard or clock, so the same inputs give the same answer.
//
// A decision that needs a step to take effect first (a traffic share, a target capacity,
// a promotion) is recorded in the status and carried out by the next pass, so an operator
// restart at any point resumes from the status and the clusters' annotations, not memory.
func Decide(obs *Observed, want *Desired, stored *rayv1.RayServiceStatuses, now time.Time) Plan {
	var p Plan
	act, out := &p.Effects, &p.Outcome
	in := inputs{obs: obs, want: want, stored: stored, now: now}
	if st, ok := planSuspend(in, act, out); ok {
		out.Status = st
		return p
	}
	if st, failed := planInitializingTimeout(in, act, out); failed {
		out.Status = st
		return p
	}
	if want.Invalid != "" {
		out.Status = rejectedStatus(in, out)
		return p
	}
	r := assignRoles(in, out)
	r.Control = controlOf(in, r)
	release := r.Control.Release
	r = planClusters(in, r, act, out)
	// The clusters may have changed (a resume after an abort starts the upgrade again).
	r.Control = controlOf(in, r)
	r.Control.Release = r.Control.Release || release
	r = planControl(in, r, act, out)
	serve := planServe(in, r, act, out)
	r, traffic := planTraffic(in, r, serve, act, out)
	serving := planServices(in, r, serve, traffic, act, out)
	var prog progress
	if len(out.Conflicts) == 0 {
		// Nothing moves while an object raygate must manage belongs to someone else.
		r, prog = advance(in, r, serve, traffic, serving, act, out)
		planCleanup(in, r, act, out)
	} else {
		out.Wake.due(now.Add(conflictRecheck))
	}
	out.Status = buildStatus(in, r, serve, traffic, serving, prog, out)
	wakeForInitializingTimeout(in, out)
	return p
}

// roles are the active and pending clusters as the pass leaves them, each with its part of
// the status.
type roles struct {
	Active, Pending slot
	// Rollback, when set, is why traffic and capacity move back to the active cluster.
	Rollback string
	// Blocked, when set, is why a wanted upgrade cannot start.
	Blocked string
	// Control is what the upgrade actions ask (raygate.ray.io/upgrade-action).
	Control control
}

// slot is one role: its cluster and its part of the status (the cluster status and the
// applications are filled in when the status is built).
type slot struct {
	View   *ClusterView // nil: no cluster has this role
	Status rayv1.RayServiceStatus
}

func (s slot) name() string {
	if s.View == nil {
		return ""
	}
	return s.View.Cluster.Name
}

func (s slot) cluster() *rayv1.RayCluster {
	if s.View == nil {
		return nil
	}
	return s.View.Cluster
}

// split reads the upgrade's capacities and traffic from the roles.
func (r roles) split() split { return splitOf(r.Active.Status, r.Pending.Status) }

// Wakeup is when the pass wants to run again.
type Wakeup struct {
	// Soon: a decision was recorded (or an action taken) that the next pass carries on.
	Soon bool
	// Poll: applications are deploying or a dashboard did not answer; dashboards cannot be
	// watched, so this is the one place raygate polls.
	Poll bool
	// At is the earliest time something is due (zero: nothing).
	At time.Time
}

func (w *Wakeup) due(t time.Time) {
	if w.At.IsZero() || t.Before(w.At) {
		w.At = t
	}
}

// stepRequeue is how soon a pass that recorded a decision in the status comes back to carry
// it out (apply weights, capacity, promotion).
const stepRequeue = 20 * time.Millisecond

// After turns the wakeup into one delay: a recorded decision is carried out right away;
// otherwise the earliest of the due time and the poll; otherwise the resync (0: none).
func (w Wakeup) After(now time.Time, poll, resync time.Duration) time.Duration {
	if w.Soon {
		return stepRequeue
	}
	d := time.Duration(0)
	consider := func(x time.Duration) {
		if x > 0 && (d == 0 || x < d) {
			d = x
		}
	}
	if w.Poll {
		consider(poll)
	}
	if !w.At.IsZero() {
		consider(max(w.At.Sub(now), time.Millisecond))
	}
	if d == 0 {
		d = max(resync, 0)
	}
	return d
}
