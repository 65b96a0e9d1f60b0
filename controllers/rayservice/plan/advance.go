package plan

import (
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
)

// progress is what the status says about where the upgrade is.
type progress struct {
	// First says what the first cluster waits for (no active cluster yet).
	First string
	// Upgrade says where the upgrade is: capacities, traffic, what it waits for.
	Upgrade string
	// Unhealthy lists the pending cluster's failed applications: no traffic moves to it.
	Unhealthy []string
	// Gate is the decision on the gates' results this pass made (nil: none), which the
	// UpgradeGates condition records.
	Gate *gateDecision
}

// advance moves the upgrade on by one decision, recorded in the status; the next pass
// carries it out (weights, capacity) before anything further is decided.
//
//   - the Services select the pending cluster after this pass: promote it (the old active
//     cluster is retired once the promotion is stored);
//   - incremental: one step of the capacity/traffic loop (or the rollback walk), if the
//     previous step took effect and the target's applications run;
//   - otherwise say what the upgrade waits for.
func advance(in inputs, r roles, serve serveStates, traffic trafficState, sv serving, act *Effects, out *Outcome) (roles, progress) {
	pending := r.Pending.name()
	switch {
	case pending != "" && sv.name() == pending && promotable(in, r, traffic):
		g := gateHold(in, r, gatePromote, act, out)
		if g.Hold {
			return r, progress{Upgrade: describeUpgrade(r, r.split(), g.Why), Gate: g.Decision}
		}
		return promote(in, r, out), progress{Gate: g.Decision}
	case pending == "":
		return r, progress{}
	case r.Active.View == nil:
		return r, progress{First: orDefault(serve[pending].Note, "waiting for the Serve applications of "+pending)}
	case !in.want.incremental():
		p := progress{Unhealthy: unhealthyApps(serve[pending].Apps)}
		warnUnhealthy(in, r, p.Unhealthy, out)
		p.Upgrade = fmt.Sprintf("pending cluster %s: %s; traffic switches once its Serve applications are RUNNING",
			pending, orDefault(serve[pending].Note, "preparing"))
		if note := controlNote(r.Control); note != "" {
			p.Upgrade += "; " + note
		}
		return r, p
	}
	return stepUpgrade(in, r, serve, traffic, act, out)
}

func promote(in inputs, r roles, out *Outcome) roles {
	old, next := r.Active, r.Pending
	promoted := next.Status
	if in.want.incremental() {
		promoted.TargetCapacity, promoted.TrafficRoutedPercent = ptr.To[int32](100), ptr.To[int32](100)
	}
	r.Active, r.Pending = slot{View: next.View, Status: promoted}, slot{}
	out.Wake.Soon = true
	if old.View == nil {
		out.tell(NormalEvent(next.cluster(), EventPromoted, "Promote", "RayCluster %s serves traffic", next.name()))
		return r
	}
	out.tell(NormalEvent(next.cluster(), EventPromoted, "Promote", "RayCluster %s serves all traffic; %s is deleted after %ds",
		next.name(), old.name(), in.want.deletionDelay()))
	out.Metrics.Finished = finished(in, next.cluster(), ResultPromoted)
	return r
}

// stepUpgrade takes one step of an incremental upgrade or rollback.
func stepUpgrade(in inputs, r roles, serve serveStates, traffic trafficState, act *Effects, out *Outcome) (roles, progress) {
	r = withPendingDefaults(r, in.want) // no-op unless fields are missing (e.g. a status edited by hand)
	dir, target := towardPending, r.Pending
	if r.Rollback != "" {
		dir, target = towardActive, r.Active
		if c := findCondition(in.stored.Conditions, rayv1.RollbackInProgress); c == nil || c.Status != metav1.ConditionTrue {
			out.tell(NormalEvent(r.Active.cluster(), EventRollback, "Rollback", "%s", r.Rollback))
		}
	}
	s := r.split()
	var p progress
	if r.Control.frozen() {
		p.Upgrade = describeUpgrade(r, s, controlNote(r.Control))
		return r, p
	}
	if !traffic.Settled {
		p.Upgrade = describeUpgrade(r, s, "waiting for the last step to take effect: "+traffic.Note)
		return r, p
	}
	next := nextStep(s, in.want.Pacing, dir, in.now)
	if r.Control.Mode == ctlPromoting && dir == towardPending {
		next = promoteStep(s, in.now)
	}
	// Traffic moves only to a cluster whose applications run. An upgrade waits for them
	// before anything; a rollback still gives back capacity and finishes when no traffic
	// is left to move, so the active cluster gets the spec's config again.
	movesTraffic := next.Kind == stepTraffic || next.Kind == stepWait
	if !serve.ready(target) && (dir == towardPending || movesTraffic) {
		if dir == towardPending {
			p.Unhealthy = unhealthyApps(serve[target.name()].Apps)
			warnUnhealthy(in, r, p.Unhealthy, out)
		}
		p.Upgrade = describeUpgrade(r, s, orDefault(serve[target.name()].Note, "waiting for the Serve applications of "+target.name()))
		return r, p
	}
	if next.Kind == stepTraffic {
		if held, hp := holdStep(in, r, s, target, serve, act, out); held {
			return r, hp
		}
	}
	if dir == towardPending && next.Kind == stepTraffic && r.Control.Mode != ctlPromoting {
		g := gateHold(in, r, gateTraffic, act, out)
		p.Gate = g.Decision
		if g.Hold {
			p.Upgrade = describeUpgrade(r, s, g.Why)
			return r, p
		}
	}
	switch next.Kind {
	case stepWait:
		out.Wake.due(next.Until)
		p.Upgrade = describeUpgrade(r, s, waitNote(next.Until))
		return r, p
	case stepComplete:
		if dir == towardActive {
			return finishRollback(in, r, out), p
		}
		// The Services switch to the pending cluster in the next pass, then promotion.
		out.Wake.Soon = true
		return r, p
	}
	if source := sourceOf(r, dir); next.Kind == stepShrinkSource && sourceCapacity(next.Next, dir) == 0 {
		// The last replicas of the source go only once in-cluster clients have left it.
		if hold, until := holdLastShrink(selectedByServeService(in, source), s.LastMigrated, in.want.Pacing.Interval, in.now); hold {
			if !until.IsZero() {
				out.Wake.due(until)
			}
			p.Upgrade = describeUpgrade(r, s, "waiting for the serve Service to leave "+source+" before its capacity goes to 0")
			return r, p
		}
	}
	n := next.Next
	r.Active.Status.TargetCapacity, r.Pending.Status.TargetCapacity = ptr.To(n.ActiveCapacity), ptr.To(n.PendingCapacity)
	r.Active.Status.TrafficRoutedPercent, r.Pending.Status.TrafficRoutedPercent = ptr.To(n.ActiveTraffic()), ptr.To(n.PendingTraffic)
	if next.Kind == stepTraffic {
		t := metav1.NewTime(stampTime(in.now))
		r.Active.Status.LastTrafficMigratedTime, r.Pending.Status.LastTrafficMigratedTime = &t, t.DeepCopy()
		out.tell(NormalEvent(target.cluster(), EventTrafficShifted, "ShiftTraffic", "traffic: active %s %d%%, pending %s %d%%; target capacity: active %d%%, pending %d%%",
			r.Active.name(), n.ActiveTraffic(), r.Pending.name(), n.PendingTraffic, n.ActiveCapacity, n.PendingCapacity))
	}
	out.Wake.Soon = true
	p.Upgrade = describeUpgrade(r, n, stepNote(next.Kind, n, in.want.Pacing, dir, in.now))
	return r, p
}

// stepNote is what the status says after a step is recorded: the step, or, when the loop
// has nothing to do after it until the next traffic step is due, when that is — the words
// of the passes that wait for it, so they find the status already saying so and write
// nothing (one status write per step saved).
func stepNote(k stepKind, n split, p pacing, dir direction, now time.Time) string {
	if after := nextStep(n, p, dir, now); after.Kind == stepWait {
		return waitNote(after.Until)
	}
	return k.String()
}

func waitNote(until time.Time) string {
	return "next traffic step at " + until.UTC().Format(time.RFC3339)
}

// finishRollback drops the pending cluster once traffic and capacity are all back on the
// active one. It may still finish requests, so it is deleted after the deletion delay.
func finishRollback(in inputs, r roles, out *Outcome) roles {
	dropped := r.Pending
	r.Pending = slot{}
	r.Active.Status.TargetCapacity, r.Active.Status.TrafficRoutedPercent = ptr.To[int32](100), ptr.To[int32](100)
	r.Rollback = ""
	out.Wake.Soon = true
	out.tell(NormalEvent(r.Active.cluster(), EventRollback, "Rollback", "rollback complete: %s serves all traffic; %s is deleted after %ds",
		r.Active.name(), dropped.name(), in.want.deletionDelay()))
	out.Metrics.Finished = finished(in, dropped.cluster(), ResultRolledBack)
	return r
}

// finished is the upgrade that ends with this status, timed from the pending cluster's
// creation. It is observed once the status is stored, so a conflicting write that makes
// the pass run again does not count it twice.
func finished(in inputs, pending *rayv1.RayCluster, result string) *FinishedUpgrade {
	return &FinishedUpgrade{Strategy: in.want.Strategy, Result: result, Seconds: in.now.Sub(pending.CreationTimestamp.Time).Seconds()}
}

// warnUnhealthy warns once (while the condition does not say so yet) that no traffic moves
// to the pending cluster.
func warnUnhealthy(in inputs, r roles, unhealthy []string, out *Outcome) {
	if len(unhealthy) == 0 {
		return
	}
	if c := findCondition(in.stored.Conditions, rayv1.UpgradeInProgress); c != nil && c.Reason == rayv1.PendingApplicationsUnhealthy {
		return
	}
	out.tell(WarningEvent(r.Pending.cluster(), EventPendingUnhealthy, "Upgrade", "no traffic moves to %s: %v", r.Pending.name(), unhealthy))
}

func describeUpgrade(r roles, s split, what string) string {
	verb := "upgrading"
	if r.Rollback != "" {
		verb = "rolling back"
	}
	return fmt.Sprintf("%s from %s to %s: %s; %s", verb, r.Active.name(), r.Pending.name(), s, what)
}

// sourceOf is the cluster an upgrade (or rollback) moves capacity and traffic away from.
func sourceOf(r roles, dir direction) string {
	if dir == towardActive {
		return r.Pending.name()
	}
	return r.Active.name()
}

// sourceCapacity is the source cluster's capacity in a split.
func sourceCapacity(s split, dir direction) int32 {
	if dir == towardActive {
		return s.PendingCapacity
	}
	return s.ActiveCapacity
}
