package main

import (
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/utils/ptr"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
)

// pausePhase is where --pause-at is in its script.
type pausePhase int

const (
	pauseWaiting   pausePhase = iota // until the pending cluster has pauseAt% of the traffic
	pausePausing                     // pause annotated; until the controller took it up
	pauseFrozen                      // paused: capacity and traffic must not move for hold
	pauseResumed                     // resumed: until the pacing moves traffic again
	pausePromoting                   // promoted: the rest is the upgrade finishing
)

// pauser scripts --pause-at: pause the upgrade once the pending cluster has at% of the
// traffic, check for hold that nothing moves, resume, and once the pacing has moved traffic
// again, promote.
type pauser struct {
	at    int32
	hold  time.Duration
	phase pausePhase
	// frozen is the pending cluster's traffic and capacity when the pause took effect.
	frozenTraffic, frozenCap int32
	pausedAt                 time.Time
}

// step says which action to annotate now ("" for none) and what to tell the user, or an
// error when the upgrade moved while paused.
func (p *pauser) step(svc *rayv1.RayService, s split, now time.Time) (action, note string, err error) {
	if p == nil || p.at <= 0 || s.Pending == "" {
		return "", "", nil
	}
	traffic, capacity := ptr.Deref(s.PendingTraffic, 0), ptr.Deref(s.PendingCap, 0)
	switch p.phase {
	case pauseWaiting:
		if traffic >= p.at {
			p.phase = pausePausing
			return rayv1.UpgradeActionPause, fmt.Sprintf("the pending cluster has %d%% of the traffic: pause the upgrade", traffic), nil
		}
	case pausePausing:
		if c := meta.FindStatusCondition(svc.Status.Conditions, string(rayv1.UpgradeAction)); c != nil && c.Reason == rayv1.UpgradePaused {
			p.phase, p.frozenTraffic, p.frozenCap, p.pausedAt = pauseFrozen, traffic, capacity, now
			return "", fmt.Sprintf("paused (UpgradeAction=%s): traffic %d%% and capacity %d%% hold for %s", c.Reason, traffic, capacity, p.hold), nil
		}
	case pauseFrozen:
		if traffic != p.frozenTraffic || capacity != p.frozenCap {
			return "", "", fmt.Errorf("the upgrade moved while paused: pending traffic %d%% → %d%%, capacity %d%% → %d%%", p.frozenTraffic, traffic, p.frozenCap, capacity)
		}
		if now.Sub(p.pausedAt) >= p.hold {
			p.phase = pauseResumed
			return rayv1.UpgradeActionResume, fmt.Sprintf("nothing moved for %s while paused: resume", now.Sub(p.pausedAt).Round(time.Second)), nil
		}
	case pauseResumed:
		if traffic > p.frozenTraffic {
			p.phase = pausePromoting
			return rayv1.UpgradeActionPromote, fmt.Sprintf("the pacing went on (%d%% → %d%%): promote, skipping the remaining steps", p.frozenTraffic, traffic), nil
		}
	}
	return "", "", nil
}

// holdFor is how long the demo keeps an upgrade paused: a few rows, and longer than one
// interval, so a step that would have come is seen not to come.
func holdFor(interval time.Duration) time.Duration {
	return max(3*rowEvery, interval+rowEvery)
}
