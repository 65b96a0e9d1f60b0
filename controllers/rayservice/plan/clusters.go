package plan

import (
	"k8s.io/utils/ptr"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/rayspec"
)

// assignRoles finds the active and pending clusters: those the stored status names, a
// first cluster that already serves, or a cluster to adopt.
func assignRoles(in inputs, out *Outcome) roles {
	r := rolesInStatus(in, out)
	if r.Active.View == nil && r.Pending.View != nil && selectedByServeService(in, r.Pending.name()) {
		// The pass that switched the serve Service to this first cluster lost its status
		// write: the cluster serves, so it is the active one. Replacing it now would leave
		// nothing to serve until a new cluster is ready.
		out.note("RayCluster " + r.Pending.name() + " already serves: completing its promotion")
		r = promote(in, r, out)
	}
	return adopt(in, r, out)
}

// rolesInStatus are the clusters the stored status names. A named cluster that is gone
// (deleted by hand) is forgotten, with a warning; the one left takes its traffic.
func rolesInStatus(in inputs, out *Outcome) roles {
	live := func(name string) *ClusterView {
		if v := in.obs.cluster(name); v != nil && v.Cluster.DeletionTimestamp == nil {
			return v
		}
		return nil
	}
	r := roles{
		Active:  slot{Status: *in.stored.ActiveServiceStatus.DeepCopy()},
		Pending: slot{Status: *in.stored.PendingServiceStatus.DeepCopy()},
	}
	activeGone, pendingGone := false, false
	if n := r.Active.Status.RayClusterName; n != "" {
		if r.Active.View = live(n); r.Active.View == nil {
			out.tell(WarningEvent(nil, EventFailedCluster, "Observe", "active RayCluster %s is gone; a new one will be created", n))
			r.Active.Status, activeGone = rayv1.RayServiceStatus{}, true
		}
	}
	if n := r.Pending.Status.RayClusterName; n != "" {
		if r.Pending.View = live(n); r.Pending.View == nil {
			out.tell(WarningEvent(nil, EventFailedCluster, "Observe", "pending RayCluster %s is gone", n))
			r.Pending.Status, pendingGone = rayv1.RayServiceStatus{}, true
		}
	}
	if !in.want.incremental() {
		return r
	}
	switch {
	case pendingGone && r.Active.View != nil:
		// Its traffic can only go to the active cluster, which needs its full capacity
		// back before another upgrade starts.
		r.Active.Status.TargetCapacity, r.Active.Status.TrafficRoutedPercent = ptr.To[int32](100), ptr.To[int32](100)
	case activeGone && r.Pending.View != nil:
		// The pending cluster is all that is left: it serves as a first cluster does, at
		// full capacity.
		r.Pending.Status.TargetCapacity = ptr.To[int32](100)
	}
	return r
}

// adopt takes as the pending cluster, when there is none and the active cluster does not
// run the spec, an unnamed cluster made for the spec that never ran a serve config: raygate
// created it just before a crash or a lost status write, and must not create another. A
// cluster that ran a serve config may have served (the active cluster demoted by the
// previous pass looks the same until it is retired), so it is retired with the deletion
// delay instead.
func adopt(in inputs, r roles, out *Outcome) roles {
	if r.Pending.View != nil || (r.Active.View != nil && matchGoal(stampOf(r.Active.cluster()), in.want.Goal).runsGoal()) {
		return r
	}
	for _, v := range in.obs.Clusters {
		c := v.Cluster
		if c.DeletionTimestamp == nil && c.Name != r.Active.name() && c.Annotations[rayv1.DeleteAfterKey] == "" &&
			matchGoal(stampOf(c), in.want.Goal).runsGoal() && submittedOn(c).Hash == "" {
			out.note("adopting RayCluster " + c.Name + ", created for the current spec, as the pending cluster")
			r.Pending = slot{View: v, Status: rayv1.RayServiceStatus{RayClusterName: c.Name}}
			return withPendingDefaults(r, in.want)
		}
	}
	return r
}

// withPendingDefaults fills the capacity fields a pending cluster's status lacks: an
// incremental upgrade starts it at 0% capacity and traffic (the active cluster at 100%); a
// first cluster takes 100% at once. Fields already set are progress and are kept.
func withPendingDefaults(r roles, want *Desired) roles {
	if !want.incremental() {
		return r
	}
	fill := func(f **int32, v int32) {
		if *f == nil {
			*f = ptr.To(v)
		}
	}
	if r.Active.View == nil {
		fill(&r.Pending.Status.TargetCapacity, 100)
		return r
	}
	fill(&r.Pending.Status.TargetCapacity, 0)
	fill(&r.Pending.Status.TrafficRoutedPercent, 0)
	fill(&r.Active.Status.TargetCapacity, 100)
	fill(&r.Active.Status.TrafficRoutedPercent, 100)
	return r
}

// planClusters carries the new-cluster decision into actions and roles.
func planClusters(in inputs, r roles, act *Effects, out *Outcome) roles {
	d := decideClusters(clusterInputs{
		Strategy: in.want.Strategy, Goal: in.want.Goal, GatewayAPI: in.obs.GatewayAPI,
		Active: stampIn(r.Active), Pending: stampIn(r.Pending),
	})
	if d.Change == actCreatePending && r.Control.Mode == ctlAborted {
		d = clusterPlan{actNone, r.Control.Message}
	}
	if d.Change != actNone {
		out.note(string(d.Change) + ": " + d.Reason)
	}
	switch d.Change {
	case actCreatePending:
		return createPending(in, r, d.Reason, act, out)
	case actReplacePending:
		dropCluster(in, r.Pending, "replaced: "+d.Reason, act, out)
		r.Pending = slot{}
		return createPending(in, r, d.Reason, act, out)
	case actDropPending:
		dropCluster(in, r.Pending, d.Reason, act, out)
		r.Pending = slot{}
		out.Wake.Soon = true
	case actAppendActive:
		r.Active = updateInPlace(in, r.Active, d.Reason, act)
	case actAppendPending:
		r.Pending = updateInPlace(in, r.Pending, d.Reason, act)
	case actNotApplied:
		// Said once per spec edit: the pass that first sees a generation.
		if in.stored.ObservedGeneration != in.want.Service.Generation {
			out.tell(NormalEvent(nil, EventSpecNotApplied, "Upgrade", "%s", d.Reason))
		}
	case actRestampActive:
		r.Active = restamp(in, r.Active, d.Reason, act)
	case actRestampPending:
		r.Pending = restamp(in, r.Pending, d.Reason, act)
	case actRollback:
		r.Rollback = d.Reason
	case actBlockedNoGwAPI:
		r.Blocked = d.Reason
		if c := findCondition(in.stored.Conditions, rayv1.UpgradeInProgress); c == nil || c.Reason != ReasonGatewayAPIUnavailable {
			out.tell(WarningEvent(nil, EventGatewayAPIUnavailable, "Upgrade", "%s", d.Reason))
		}
	}
	return r
}

func stampIn(s slot) *stamp {
	if s.View == nil {
		return nil
	}
	st := stampOf(s.View.Cluster)
	return &st
}

func createPending(in inputs, r roles, reason string, act *Effects, out *Outcome) roles {
	upgrade := r.Active.View != nil
	rc := newRayCluster(in.want.Service, in.obs.NewClusterName, in.want.Goal, in.want.Version, upgrade && in.want.incremental())
	done := NormalEvent(rc, EventCreatedCluster, "Create", "created RayCluster %s", rc.Name)
	if upgrade {
		done = NormalEvent(rc, EventUpgradeStarted, "Create", "created pending RayCluster %s (%s strategy) to replace %s: %s",
			rc.Name, in.want.Strategy, r.Active.name(), reason)
	}
	act.doFirst(CreateCluster{Cluster: rc, Done: done})
	if in.want.Capped != "" {
		out.tell(WarningEvent(rc, EventCappedAtPodLimits, "Create", "RayCluster %s is created with fewer pods than the spec asks for: %s", rc.Name, in.want.Capped))
	}
	r.Pending = slot{View: &ClusterView{Cluster: rc.DeepCopy()}, Status: rayv1.RayServiceStatus{RayClusterName: rc.Name}}
	out.Wake.Soon = true
	return withPendingDefaults(r, in.want)
}

// dropCluster deletes a pending cluster that is no longer wanted, if it cannot have served.
// One that may have (it ran a serve config, so a pass may have switched the Services to it
// and lost its status write; or the route gives it a share; or its status records a
// traffic step) is left to planCleanup instead, which retires it with the deletion delay
// once the status without it is stored, so requests in flight can finish.
func dropCluster(in inputs, s slot, why string, act *Effects, out *Outcome) {
	rc := s.cluster()
	if submittedOn(rc).Hash != "" || mayCarryTraffic(in, rc.Name) || ptr.Deref(s.Status.TrafficRoutedPercent, 0) > 0 || s.Status.LastTrafficMigratedTime != nil {
		out.note("keeping RayCluster " + rc.Name + " for the deletion delay: traffic may reach it")
		return
	}
	act.doFirst(DeleteCluster{Cluster: rc, Done: NormalEvent(rc, EventDeletedCluster, "Delete", "deleted RayCluster %s: %s", rc.Name, why)})
}

// mayCarryTraffic: the serve Service selects the cluster, or the route gives it a share.
func mayCarryTraffic(in inputs, cluster string) bool {
	return selectedByServeService(in, cluster) || (in.obs.Route != nil && rayspec.RouteWeights(in.obs.Route)[cluster] > 0)
}

func selectedByServeService(in inputs, cluster string) bool {
	s := in.obs.Services[ServeServiceName(in.want.Service)]
	return s != nil && s.Spec.Selector[rayv1.ClusterLabelKey] == cluster
}

// updateInPlace adds the worker groups appended to the spec to a cluster.
func updateInPlace(in inputs, s slot, reason string, act *Effects) slot {
	rc := s.cluster().DeepCopy()
	rc.Spec = appendedGroupsSpec(rc.Spec, in.want.Goal)
	setAnnotations(rc, stampAnnotations(in.want.Goal, in.want.Version))
	act.doFirst(UpdateCluster{Cluster: rc, Done: NormalEvent(rc, EventUpdatedCluster, "Update", "updated RayCluster %s in place: %s", rc.Name, reason)})
	return s.withCluster(rc.DeepCopy())
}

func restamp(in inputs, s slot, reason string, act *Effects) slot {
	rc := s.cluster().DeepCopy()
	ann := stampAnnotations(in.want.Goal, in.want.Version)
	setAnnotations(rc, ann)
	done := NormalEvent(rc, EventUpdatedCluster, "Update", "re-stamped RayCluster %s with the current spec hash instead of replacing it: %s", rc.Name, reason)
	act.doFirst(AnnotateCluster{Cluster: rc, Annotations: ann, Done: &done})
	return s.withCluster(rc.DeepCopy())
}

// withCluster is the slot with the cluster as this pass's actions leave it; its pods and
// applications are those observed.
func (s slot) withCluster(rc *rayv1.RayCluster) slot {
	v := *s.View
	v.Cluster = rc
	s.View = &v
	return s
}

func setAnnotations(rc *rayv1.RayCluster, ann map[string]string) {
	if rc.Annotations == nil {
		rc.Annotations = map[string]string{}
	}
	for k, v := range ann {
		rc.Annotations[k] = v
	}
}
