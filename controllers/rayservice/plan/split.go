package plan

import (
	"fmt"
	"time"

	"k8s.io/utils/ptr"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
)

// pacing is how an incremental upgrade moves: capacity in maxSurge steps, traffic in step
// steps no more often than every interval.
type pacing struct {
	MaxSurge int32
	Step     int32
	Interval time.Duration
}

// pacingOf reads clusterUpgradeOptions with their defaults. Values outside what validation
// allows are clamped so a bad spec can never stall or overshoot (a 0 step would stall).
func pacingOf(spec *rayv1.RayServiceSpec) pacing {
	var o rayv1.ClusterUpgradeOptions
	if spec.UpgradeStrategy != nil && spec.UpgradeStrategy.ClusterUpgradeOptions != nil {
		o = *spec.UpgradeStrategy.ClusterUpgradeOptions
	}
	return pacing{
		MaxSurge: clamp(ptr.Deref(o.MaxSurgePercent, 100), 1, 100),
		Step:     clamp(ptr.Deref(o.StepSizePercent, 100), 1, 100),
		Interval: time.Duration(max(ptr.Deref(o.IntervalSeconds, 0), 0)) * time.Second,
	}
}

func clamp(v, lo, hi int32) int32 { return min(max(v, lo), hi) }

// split is the state of an incremental upgrade: each cluster's Serve target capacity and
// the pending cluster's share of the HTTPRoute traffic (the active cluster gets the rest).
type split struct {
	ActiveCapacity  int32
	PendingCapacity int32
	PendingTraffic  int32
	// LastMigrated is when PendingTraffic last changed (nil: never).
	LastMigrated *time.Time
}

func (s split) ActiveTraffic() int32 { return 100 - s.PendingTraffic }

func (s split) String() string {
	return fmt.Sprintf("capacity active %d%% / pending %d%%, traffic active %d%% / pending %d%%",
		s.ActiveCapacity, s.PendingCapacity, s.ActiveTraffic(), s.PendingTraffic)
}

// direction is where traffic is going.
type direction int

const (
	// towardPending: an upgrade; the pending cluster is the target.
	towardPending direction = iota
	// towardActive: a rollback; the active cluster is the target.
	towardActive
)

// stepKind is what one step does.
type stepKind int

const (
	stepWait         stepKind = iota // nothing to do until Until (or until ready)
	stepTraffic                      // move Step% more traffic to the target
	stepGrowTarget                   // raise the target cluster's capacity by MaxSurge
	stepShrinkSource                 // lower the source cluster's capacity by MaxSurge
	stepComplete                     // the target has all capacity and traffic
)

func (k stepKind) String() string {
	return [...]string{"wait", "shift traffic", "grow target capacity", "shrink source capacity", "complete"}[k]
}

// step is nextStep's answer: the split after the step, or when to look again.
type step struct {
	Kind  stepKind
	Next  split
	Until time.Time // for stepWait on the interval: when the next traffic step is due
}

// nextStep is one step of the capacity/traffic loop (KubeRay's reconcileServeTargetCapacity
// and calculateTrafficRoutedPercent as one pure function). In the direction of the target:
//
//  1. done when the target has 100% capacity and traffic and the source 0% capacity;
//  2. while the target's traffic is below its capacity, shift Step% traffic, at most once
//     per Interval and never beyond the target's capacity;
//  3. once traffic caught up: if total capacity exceeds 100%, shrink the source by MaxSurge
//     (never below the traffic it still carries), else grow the target by MaxSurge.
//
// So total capacity stays within 100% + MaxSurge, a cluster never gets more traffic than
// its capacity, and a rollback is the same walk back. The caller only asks for a step when
// the previous one took effect and the target's applications are RUNNING.
func nextStep(s split, p pacing, dir direction, now time.Time) step {
	tCap, sCap, tTraffic := s.PendingCapacity, s.ActiveCapacity, s.PendingTraffic
	if dir == towardActive {
		tCap, sCap, tTraffic = s.ActiveCapacity, s.PendingCapacity, s.ActiveTraffic()
	}
	put := func(kind stepKind, tc, sc, tt int32, migrated *time.Time) step {
		n := split{LastMigrated: migrated}
		if dir == towardPending {
			n.PendingCapacity, n.ActiveCapacity, n.PendingTraffic = tc, sc, tt
		} else {
			n.ActiveCapacity, n.PendingCapacity, n.PendingTraffic = tc, sc, 100-tt
		}
		return step{Kind: kind, Next: n}
	}
	switch {
	case tTraffic >= 100 && tCap >= 100 && sCap <= 0:
		return put(stepComplete, tCap, sCap, tTraffic, s.LastMigrated)
	case tTraffic < tCap:
		if s.LastMigrated != nil && now.Before(s.LastMigrated.Add(p.Interval)) {
			w := put(stepWait, tCap, sCap, tTraffic, s.LastMigrated)
			w.Until = s.LastMigrated.Add(p.Interval)
			return w
		}
		t := now
		return put(stepTraffic, tCap, sCap, min(100, tTraffic+p.Step, tCap), &t)
	case tCap+sCap > 100:
		return put(stepShrinkSource, tCap, max(sCap-p.MaxSurge, 100-tTraffic, 0), tTraffic, s.LastMigrated)
	default:
		return put(stepGrowTarget, min(100, tCap+p.MaxSurge), sCap, tTraffic, s.LastMigrated)
	}
}

// splitOf reads the upgrade state from the two roles' status, with KubeRay's defaults: the
// active cluster at 100% capacity and traffic, the pending one at 0%. Values outside 0–100
// (a status edited by hand) are clamped, so weights always sum to 100.
func splitOf(active, pending rayv1.RayServiceStatus) split {
	s := split{
		ActiveCapacity:  clamp(ptr.Deref(active.TargetCapacity, 100), 0, 100),
		PendingCapacity: clamp(ptr.Deref(pending.TargetCapacity, 0), 0, 100),
		PendingTraffic:  clamp(ptr.Deref(pending.TrafficRoutedPercent, 0), 0, 100),
	}
	if t := pending.LastTrafficMigratedTime; t != nil {
		tt := t.Time
		s.LastMigrated = &tt
	}
	return s
}
