package rayservice

import (
	"context"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
)

// advance moves the upgrade on by one decision, recorded in the status; the next pass
// carries it out (weights, capacity) before anything further is decided, so a crash at any
// point resumes from the status rather than from memory.
//
//   - the Services already select the pending cluster: promote it (cleanUp records on the
//     old cluster when it may be deleted, once the promotion is stored);
//   - incremental: one step of the capacity/traffic loop (or the rollback walk), if the
//     previous step took effect and the target's applications run;
//   - otherwise say what the upgrade waits for.
func (r *Reconciler) advance(ctx context.Context, p *pass) error {
	if p.pending != nil && p.servingCluster == p.pending.Name {
		return r.promote(ctx, p)
	}
	switch {
	case p.pending == nil:
		return nil
	case p.active == nil:
		p.firstNote = orDefault(p.serveNote[p.pending.Name], "waiting for the Serve applications of "+p.pending.Name)
		return nil
	case !p.incremental():
		p.unhealthy = unhealthyApps(p.apps[p.pending.Name])
		r.noteUnhealthy(p)
		p.upgradeNote = fmt.Sprintf("pending cluster %s: %s; traffic switches once its Serve applications are RUNNING",
			p.pending.Name, orDefault(p.serveNote[p.pending.Name], "preparing"))
		return nil
	}
	return r.step(ctx, p)
}

func (r *Reconciler) promote(_ context.Context, p *pass) error {
	st := &p.svc.Status
	old, next := p.active, p.pending
	promoted := st.PendingServiceStatus
	if p.incremental() {
		promoted.TargetCapacity, promoted.TrafficRoutedPercent = ptr.To[int32](100), ptr.To[int32](100)
	}
	st.ActiveServiceStatus, st.PendingServiceStatus = promoted, rayv1.RayServiceStatus{}
	p.active, p.pending = next, nil
	p.decided = true
	if old != nil {
		r.normal(p, next, EventPromoted, "Promote", "RayCluster %s serves all traffic; %s is deleted after %ds", next.Name, old.Name, deletionDelaySeconds(&p.spec))
		r.upgradeFinished(p, next, resultPromoted)
	} else {
		r.normal(p, next, EventPromoted, "Promote", "RayCluster %s serves traffic", next.Name)
	}
	return nil
}

// step takes one step of an incremental upgrade or rollback.
func (r *Reconciler) step(ctx context.Context, p *pass) error {
	st := &p.svc.Status
	r.initPendingStatus(p) // no-op unless fields are missing (e.g. a status edited by hand)
	dir, target := towardPending, p.pending
	if p.rollingBack {
		dir, target = towardActive, p.active
		if c := findCondition(p.old.Conditions, rayv1.RollbackInProgress); c == nil || c.Status != metav1.ConditionTrue {
			r.normal(p, p.active, EventRollback, "Rollback", "%s", p.plan.Reason)
		}
	}
	s := splitOf(st)
	if !p.routeSettled {
		p.upgradeNote = describeUpgrade(p, s, "waiting for the last step to take effect: "+p.routeNote)
		return nil
	}
	if !p.appsReady[target.Name] {
		if dir == towardPending {
			p.unhealthy = unhealthyApps(p.apps[target.Name])
			r.noteUnhealthy(p)
		}
		p.upgradeNote = describeUpgrade(p, s, orDefault(p.serveNote[target.Name], "waiting for the Serve applications of "+target.Name))
		return nil
	}
	next := nextStep(s, p.pacing, dir, p.now)
	switch next.Kind {
	case stepWait:
		p.due(next.Until)
		p.upgradeNote = describeUpgrade(p, s, "next traffic step at "+next.Until.UTC().Format(time.RFC3339))
		return nil
	case stepComplete:
		if dir == towardPending {
			// The Services switch to the pending cluster in the next pass, then promotion.
			p.decided = true
			return nil
		}
		return r.finishRollback(ctx, p)
	}
	n := next.Next
	st.ActiveServiceStatus.TargetCapacity, st.PendingServiceStatus.TargetCapacity = ptr.To(n.ActiveCapacity), ptr.To(n.PendingCapacity)
	st.ActiveServiceStatus.TrafficRoutedPercent, st.PendingServiceStatus.TrafficRoutedPercent = ptr.To(n.ActiveTraffic()), ptr.To(n.PendingTraffic)
	if next.Kind == stepTraffic {
		t := metav1.NewTime(stampTime(p.now))
		st.ActiveServiceStatus.LastTrafficMigratedTime, st.PendingServiceStatus.LastTrafficMigratedTime = &t, t.DeepCopy()
		r.normal(p, target, EventTrafficShifted, "ShiftTraffic", "traffic: active %s %d%%, pending %s %d%%", p.active.Name, n.ActiveTraffic(), p.pending.Name, n.PendingTraffic)
	}
	p.decided = true
	p.upgradeNote = describeUpgrade(p, n, next.Kind.String())
	return nil
}

// finishRollback drops the pending cluster once traffic and capacity are all back on the
// active one. It may still finish requests, so cleanUp deletes it after the deletion delay.
func (r *Reconciler) finishRollback(_ context.Context, p *pass) error {
	st := &p.svc.Status
	dropped := p.pending
	st.PendingServiceStatus = rayv1.RayServiceStatus{}
	st.ActiveServiceStatus.TargetCapacity, st.ActiveServiceStatus.TrafficRoutedPercent = ptr.To[int32](100), ptr.To[int32](100)
	p.pending, p.rollingBack = nil, false
	p.decided = true
	r.normal(p, p.active, EventRollback, "Rollback", "rollback complete: %s serves all traffic; %s is deleted after %ds", p.active.Name, dropped.Name, deletionDelaySeconds(&p.spec))
	r.upgradeFinished(p, dropped, resultRolledBack)
	return nil
}

// upgradeFinished observes the upgrade's duration once the status that ends it is stored,
// so a conflicting write that makes the pass run again does not count it twice.
func (r *Reconciler) upgradeFinished(p *pass, pending *rayv1.RayCluster, result string) {
	seconds := p.now.Sub(pending.CreationTimestamp.Time).Seconds()
	p.afterWrite = append(p.afterWrite, func() { r.Metrics.UpgradeFinished(p.strategy, result, seconds) })
}

func (r *Reconciler) noteUnhealthy(p *pass) {
	if len(p.unhealthy) == 0 {
		return
	}
	if c := findCondition(p.old.Conditions, rayv1.UpgradeInProgress); c != nil && c.Reason == rayv1.PendingApplicationsUnhealthy {
		return
	}
	r.warn(p, p.pending, EventPendingUnhealthy, "Upgrade", "no traffic moves to %s: %v", p.pending.Name, p.unhealthy)
}

func describeUpgrade(p *pass, s split, what string) string {
	verb := "upgrading"
	if p.rollingBack {
		verb = "rolling back"
	}
	return fmt.Sprintf("%s from %s to %s: %s; %s", verb, p.active.Name, p.pending.Name, s, what)
}

// stampTime is the time recorded as lastTrafficMigratedTime. The status keeps whole
// seconds; rounding up (unless the step runs within 200 ms after a whole second, as it does
// when it was due then) keeps the next step from coming early without drifting later.
func stampTime(t time.Time) time.Time {
	s := t.Truncate(time.Second)
	if t.Sub(s) <= 200*time.Millisecond {
		return s
	}
	return s.Add(time.Second)
}
