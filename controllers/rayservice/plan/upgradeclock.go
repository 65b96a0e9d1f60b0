package plan

import (
	"time"

	"k8s.io/apimachinery/pkg/api/meta"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
)

// UpgradeClock is what the "upgrade stuck" alert compares: when the upgrade started and how
// long it should take at the RayService's own pacing.
type UpgradeClock struct {
	Start    time.Time
	Expected time.Duration
}

// upgradeProgress is the part of a RayService's status that decides its expected upgrade
// duration, read by upgradeProgressOf.
type upgradeProgress struct {
	Strategy rayv1.RayServiceUpgradeType
	Pacing   pacing
	// Start is when UpgradeInProgress last became true.
	Start time.Time
	// PendingTraffic is the pending cluster's share of the traffic (0–100).
	PendingTraffic int32
	// Back: traffic is walking back to the active cluster (rollback or abort).
	Back bool
	// Moves are when something last moved the upgrade on: a traffic step (either
	// cluster's lastTrafficMigratedTime) or an upgrade action (the UpgradeAction
	// condition's transition). Zero times are ignored.
	Moves []time.Time
}

// expectedUpgrade is how long an upgrade should take at its own pacing, counted from its
// start: the time until it last moved on, plus one intervalSeconds for every traffic step
// still to take toward the target (the pending cluster, or the active one when going back).
//
// So the expected end moves with every step and every action: a slow pacing (small steps,
// long intervals) is expected to be slow, a resumed upgrade is measured from its resume and
// not blamed for the time it was paused, and an upgrade that stops stepping falls behind
// its expected end, which is what the alert looks for. Capacity steps and starting the
// pending cluster are not paced by the interval; the alert's slack covers them. NewCluster
// and None have no pacing: their expected duration is 0 (the slack alone).
func expectedUpgrade(p upgradeProgress) time.Duration {
	if p.Strategy != rayv1.NewClusterWithIncrementalUpgrade || p.Start.IsZero() {
		return 0
	}
	step := p.Pacing.Step
	if step <= 0 {
		step = 100
	}
	left := 100 - clamp(p.PendingTraffic, 0, 100)
	if p.Back {
		left = clamp(p.PendingTraffic, 0, 100)
	}
	steps := (left + step - 1) / step
	since := p.Start
	for _, t := range p.Moves {
		if t.After(since) {
			since = t
		}
	}
	return since.Sub(p.Start) + time.Duration(steps)*p.Pacing.Interval
}

// upgradeProgressOf reads the upgrade's progress from a RayService; ok is false when no
// upgrade is in progress.
func upgradeProgressOf(svc *rayv1.RayService) (p upgradeProgress, ok bool) {
	st := &svc.Status
	c := meta.FindStatusCondition(st.Conditions, string(rayv1.UpgradeInProgress))
	if c == nil || c.Status != "True" || st.PendingServiceStatus.RayClusterName == "" {
		return upgradeProgress{}, false
	}
	split := splitOf(st.ActiveServiceStatus, st.PendingServiceStatus)
	p = upgradeProgress{
		Strategy:       strategyOf(&svc.Spec),
		Pacing:         pacingOf(&svc.Spec),
		Start:          c.LastTransitionTime.Time,
		PendingTraffic: split.PendingTraffic,
		Back:           meta.IsStatusConditionTrue(st.Conditions, string(rayv1.RollbackInProgress)),
	}
	for _, cs := range []*rayv1.RayServiceStatus{&st.ActiveServiceStatus, &st.PendingServiceStatus} {
		if t := cs.LastTrafficMigratedTime; t != nil {
			p.Moves = append(p.Moves, t.Time)
		}
	}
	if a := meta.FindStatusCondition(st.Conditions, string(rayv1.UpgradeAction)); a != nil {
		p.Moves = append(p.Moves, a.LastTransitionTime.Time)
		if a.Reason == ReasonUpgradeAborting {
			p.Back = true
		}
	}
	return p, true
}

// UpgradeClockOf is the clock of the RayService's upgrade in progress (ok false: none).
func UpgradeClockOf(svc *rayv1.RayService) (UpgradeClock, bool) {
	p, ok := upgradeProgressOf(svc)
	if !ok {
		return UpgradeClock{}, false
	}
	return UpgradeClock{Start: p.Start, Expected: expectedUpgrade(p)}, true
}
