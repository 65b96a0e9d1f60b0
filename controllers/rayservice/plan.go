package rayservice

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
)

// planned is the plan's answer: the status to store, the actions that bring the world in
// line with it, the events to emit once it is stored, and when to look again.
type planned struct {
	Status rayv1.RayServiceStatuses
	// ClusterActions carry out the new-cluster decision (create, replace, update in place,
	// re-stamp); then come the Submits (serve configs, to the clusters as those leave them),
	// then the other Actions.
	ClusterActions []Action
	Submits        []SubmitServeConfig
	Actions        []Action
	// Events are emitted once Status is stored (or needed no write): they announce
	// decisions the status records, so a failed write must not announce them.
	Events []Event
	// Finished is the upgrade Status ends, observed once it is stored.
	Finished *FinishedUpgrade
	Wake     Wakeup
	// Conflicts describe objects raygate must manage that belong to someone else: they are
	// left untouched, the OwnershipConflict condition names them, and nothing moves until
	// they are gone.
	Conflicts []string
	// Decisions say what was decided and why, for the operator's log.
	Decisions []string
	// RouteAccepted is condition RouteAccepted while the routes attach to a shared Gateway
	// (nil: removed).
	RouteAccepted *metav1.Condition
	// ActionRecorded is the upgrade action Status records for the first time, counted
	// once it is stored.
	ActionRecorded string
	// GateAsk: the pass reached a gated step without gate results (gates.go); Gate is the
	// decision on the results it had; GateFailed a failure to count once stored.
	GateAsk    *GateAsk
	Gate       *gateDecision
	GateFailed *GateFailure
	// Refresh names the clusters whose dashboards are to be read again now: a decision
	// waits for an answer newer than the one the pass had.
	Refresh []string
}

func (o *planned) doFirst(a Action)           { o.ClusterActions = append(o.ClusterActions, a) }
func (o *planned) do(a Action)                { o.Actions = append(o.Actions, a) }
func (o *planned) tell(e Event)               { o.Events = append(o.Events, e) }
func (o *planned) note(decision string)       { o.Decisions = append(o.Decisions, decision) }
func (o *planned) submit(s SubmitServeConfig) { o.Submits = append(o.Submits, s) }
func (o *planned) refresh(cluster string)     { o.Refresh = append(o.Refresh, cluster) }

// conflict notes an object raygate must leave alone; it is looked at again after a while.
func (o *planned) conflict(description string) {
	o.Conflicts = append(o.Conflicts, description)
}

// inputs are the plan's arguments, read by every step and changed by none.
type inputs struct {
	obs    *Observed
	want   *Desired
	stored *rayv1.RayServiceStatuses
	now    time.Time
}

// plan decides one pass from what was observed, the spec and the stored status, at now.
// It calls no client, dashboard or clock, so the same inputs give the same answer.
//
// A decision that needs a step to take effect first (a traffic share, a target capacity,
// a promotion) is recorded in the status and carried out by the next pass, so an operator
// restart at any point resumes from the status and the clusters' annotations, not memory.
func Decide(obs *Observed, want *Desired, stored *rayv1.RayServiceStatuses, now time.Time) planned {
	var out planned
	in := inputs{obs: obs, want: want, stored: stored, now: now}
	if st, ok := planSuspend(in, &out); ok {
		out.Status = st
		return out
	}
	if st, failed := planInitializingTimeout(in, &out); failed {
		out.Status = st
		return out
	}
	if want.Invalid != "" {
		out.Status = rejectedStatus(in, &out)
		return out
	}
	r := assignRoles(in, &out)
	r.Control = controlOf(in, r)
	release := r.Control.Release
	r = planClusters(in, r, &out)
	// The clusters may have changed (a resume after an abort starts the upgrade again).
	r.Control = controlOf(in, r)
	r.Control.Release = r.Control.Release || release
	r = planControl(in, r, &out)
	serve := planServe(in, r, &out)
	r, traffic := planTraffic(in, r, serve, &out)
	serving := planServices(in, r, serve, traffic, &out)
	var prog progress
	if len(out.Conflicts) == 0 {
		// Nothing moves while an object raygate must manage belongs to someone else.
		r, prog = advance(in, r, serve, traffic, serving, &out)
		planCleanup(in, r, &out)
	} else {
		out.Wake.due(now.Add(conflictRecheck))
	}
	out.Status = buildStatus(in, r, serve, serving, prog, &out)
	wakeForInitializingTimeout(in, &out)
	return out
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

// wakeup is when the pass wants to run again.
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

// after turns the wakeup into one delay: a recorded decision is carried out right away;
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
