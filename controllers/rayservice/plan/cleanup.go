package plan

import (
	"time"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
)

// planCleanup retires, then deletes, the clusters that no longer serve. The deletion time
// is recorded only once the status that demotes a cluster is stored (the pass after a
// promotion or a finished rollback): recorded earlier, a slow or conflicting status write
// would eat into the delay that lets in-flight requests finish. A cluster raygate created
// but never recorded (a crash between create and status write) may have been reached
// through its Services, so it gets the same delay. The time is recorded on the cluster, so
// a restart neither forgets the deletion nor brings it forward.
func planCleanup(in inputs, r roles, act *Effects, out *Outcome) {
	for _, v := range in.obs.Clusters {
		rc := v.Cluster
		if rc.DeletionTimestamp != nil || rc.Name == r.Active.name() || rc.Name == r.Pending.name() || act.deletes(rc.Name) {
			continue
		}
		if recordedIn(in.stored, rc.Name) {
			out.Wake.Soon = true // demoted by this pass: retire it in the next one
			continue
		}
		if mayCarryTraffic(in, rc.Name) {
			// The route or the serve Service still sends it traffic (this pass moves it, or
			// the active cluster is gone): its deletion delay starts once they no longer do.
			continue
		}
		deleteWhenDue(in, rc, act, out, "its deletion delay after it stopped serving has passed")
	}
}

// deleteWhenDue deletes a retired cluster once its deletion delay passed (why says what made
// it retired, for the event), else wakes the RayService when it will have.
func deleteWhenDue(in inputs, rc *rayv1.RayCluster, act *Effects, out *Outcome, why string) {
	at, ok := deleteAfter(in, rc, act)
	switch {
	case !ok:
		out.tell(WarningEvent(rc, EventFailedCluster, "Delete", "annotation %s=%q is not an RFC 3339 time; delete RayCluster %s by hand",
			rayv1.DeleteAfterKey, rc.Annotations[rayv1.DeleteAfterKey], rc.Name))
	case !in.now.Before(at):
		act.do(DeleteCluster{Cluster: rc, Done: NormalEvent(rc, EventDeletedCluster, "Delete", "deleted RayCluster %s: %s", rc.Name, why)})
	default:
		out.Wake.due(at)
	}
}

// deleteAfter is when a retired cluster may be deleted: the time recorded on it, or, for a
// cluster retired in this pass, now plus the deletion delay, recorded by an action. It is
// rounded up to the second the annotation can hold, so the delay is never cut short.
func deleteAfter(in inputs, rc *rayv1.RayCluster, act *Effects) (time.Time, bool) {
	if v := rc.Annotations[rayv1.DeleteAfterKey]; v != "" {
		at, err := time.Parse(time.RFC3339, v)
		return at, err == nil
	}
	at := in.now.Add(time.Duration(in.want.deletionDelay()) * time.Second)
	if t := at.Truncate(time.Second); !t.Equal(at) {
		at = t.Add(time.Second)
	}
	act.do(AnnotateCluster{Cluster: rc, Annotations: map[string]string{rayv1.DeleteAfterKey: at.UTC().Format(time.RFC3339)}})
	return at, true
}

// deletes reports whether the plan already deletes the cluster.
func (e *Effects) deletes(name string) bool {
	for _, a := range append(e.ClusterActions, e.Actions...) {
		if d, ok := a.(DeleteCluster); ok && d.Cluster.Name == name {
			return true
		}
	}
	return false
}

// recordedIn reports whether a status names the cluster as active or pending.
func recordedIn(st *rayv1.RayServiceStatuses, name string) bool {
	return name == st.ActiveServiceStatus.RayClusterName || name == st.PendingServiceStatus.RayClusterName
}
