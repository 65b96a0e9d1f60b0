package plan

import "time"

// During an incremental upgrade the HTTPRoute splits the Gateway's traffic by weight, but
// the serve Service `<service>-serve-svc` selects the pods of one cluster, and in-cluster
// clients reach Serve through it. It must never select a cluster whose target_capacity is 0
// (Serve has no replicas there), so it follows the upgrade:
//
//   - it moves to the cluster the HTTPRoute sends all traffic to, in the pass that applies
//     that last traffic step: in-cluster clients move with the Gateway's last clients;
//   - while traffic is split it stays where it is (both clusters have capacity then: the
//     source keeps at least the share of traffic it still carries);
//   - the source cluster's capacity drops to 0 only once the Service no longer selects it
//     and one interval after the last traffic step, so the Service's endpoints (and every
//     node's kube-proxy) have moved before the last replicas go.
//
// A rollback mirrors this: the Service returns to the active cluster when the route gives
// it all traffic back.

// serveSide is the role of the cluster the serve Service selects.
type serveSide int

const (
	sideActive serveSide = iota
	sidePending
)

// serveServiceSide is where the serve Service points during an incremental upgrade or
// rollback, given where it points now (cur), the split as this pass applies it and whether
// each cluster's applications run. It moves only to a cluster with capacity whose
// applications run, and stays on one that has capacity while its applications cannot be
// read (a dashboard down for a while must not flip in-cluster traffic back and forth).
func serveServiceSide(cur serveSide, s split, activeReady, pendingReady bool) serveSide {
	capacity := map[serveSide]bool{sideActive: s.ActiveCapacity > 0, sidePending: s.PendingCapacity > 0}
	ready := map[serveSide]bool{sideActive: activeReady, sidePending: pendingReady}
	other := sidePending
	if cur == sidePending {
		other = sideActive
	}
	switch {
	case s.PendingTraffic >= 100 && capacity[sidePending] && ready[sidePending]:
		return sidePending
	case s.PendingTraffic <= 0 && capacity[sideActive] && ready[sideActive]:
		return sideActive
	case capacity[cur]:
		return cur
	case capacity[other] && ready[other]:
		return other
	}
	return cur
}

// minLastShrinkHold is the least time between the last traffic step and the source
// cluster's capacity going to 0. A gateway applies a route change some time after it is
// written: Traefik batches configuration changes that come less than 2 s apart
// (providersThrottleDuration), so with intervalSeconds 1 it still routed to the source
// after its last replicas were gone. 3 s covers that throttle with a margin for a loaded
// gateway.
const minLastShrinkHold = 3 * time.Second

// holdLastShrink reports whether the step that takes the source cluster's capacity to 0
// must wait, and until when (zero: until the serve Service has left the source, which a
// watch event reports): the Service still selects the source, or the last traffic step was
// less than one interval (and at least minLastShrinkHold) ago.
func holdLastShrink(serviceOnSource bool, lastMigrated *time.Time, interval time.Duration, now time.Time) (bool, time.Time) {
	if serviceOnSource {
		return true, time.Time{}
	}
	if lastMigrated != nil {
		if until := lastMigrated.Add(max(interval, minLastShrinkHold)); now.Before(until) {
			return true, until
		}
	}
	return false, time.Time{}
}

// promotable: once the serve Service selects the pending cluster, blue/green promotes it at
// once; an incremental upgrade (whose serve Service moves one step before the end) only when
// all capacity and traffic are on it and nothing is rolling back.
func promotable(in inputs, r roles, traffic trafficState) bool {
	if !in.want.incremental() || !in.obs.GatewayAPI || r.Active.View == nil {
		return true
	}
	return r.Rollback == "" && traffic.Settled && nextStep(r.split(), in.want.Pacing, towardPending, in.now).Kind == stepComplete
}
