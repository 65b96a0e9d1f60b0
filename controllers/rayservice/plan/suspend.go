package plan

import (
	"maps"
	"slices"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
)

// spec.suspend, as in KubeRay, is atomic: the pass that first sees it only stores
// Suspending=True; the passes after that delete every RayCluster, Service, Gateway and
// HTTPRoute the RayService controls, whatever spec.suspend says meanwhile, and once they are
// all gone Suspended=True. While suspended nothing is created. When spec.suspend is false
// again the RayService starts from scratch: a new cluster, Ready=False Initializing (so
// ray.io/initializing-timeout applies again, counted from the resume).

// planSuspend returns the status of a pass that suspension or resumption decides alone
// (ok); otherwise the caller plans as usual.
func planSuspend(in inputs, act *Effects, out *Outcome) (rayv1.RayServiceStatuses, bool) {
	if in.want.Invalid != "" {
		// Nothing was observed: a rejected spec freezes a suspension too, until it is fixed.
		return rayv1.RayServiceStatuses{}, false
	}
	stored := in.stored
	suspending := meta.IsStatusConditionTrue(stored.Conditions, string(rayv1.RayServiceSuspending))
	suspended := meta.IsStatusConditionTrue(stored.Conditions, string(rayv1.RayServiceSuspended))
	wanted := in.want.Service.Spec.Suspend
	switch {
	case suspending || (wanted && suspended):
		return tearDown(in, act, out), true
	case wanted:
		return commitSuspend(in, out), true
	case suspended:
		return resume(in, out), true
	}
	return rayv1.RayServiceStatuses{}, false
}

// commitSuspend stores Suspending=True and nothing else: only once that is stored does
// anything get deleted, so a suspension that started always finishes.
func commitSuspend(in inputs, out *Outcome) rayv1.RayServiceStatuses {
	st := *in.stored.DeepCopy()
	gen := in.want.Service.Generation
	st.ObservedGeneration = gen
	now := metav1.NewTime(in.now)
	const msg = "spec.suspend is true: the RayService's clusters and Services are being deleted"
	setCondition(&st, rayv1.RayServiceSuspending, true, rayv1.SuspendInProgress, msg, gen, now)
	setCondition(&st, rayv1.RayServiceSuspended, false, rayv1.SuspendInProgress, msg, gen, now)
	setCondition(&st, rayv1.RayServiceReady, false, rayv1.SuspendInProgress, msg, gen, now)
	out.tell(NormalEvent(nil, EventSuspending, "Suspend", "%s", msg))
	out.note("spec.suspend: committing the suspension")
	out.Wake.Soon = true
	stampUpdate(in, &st)
	return st
}

// tearDown deletes what the RayService controls; once nothing is left it is Suspended.
func tearDown(in inputs, act *Effects, out *Outcome) rayv1.RayServiceStatuses {
	st := *in.stored.DeepCopy()
	gen := in.want.Service.Generation
	st.ObservedGeneration = gen
	// Nothing serves anymore: the status forgets the clusters, so resuming starts afresh.
	st.ActiveServiceStatus, st.PendingServiceStatus = rayv1.RayServiceStatus{}, rayv1.RayServiceStatus{}
	st.NumServeEndpoints = 0
	if left := deleteAllOwned(in, act); left > 0 {
		st.ServiceStatus = rayv1.NotRunning
		stampUpdate(in, &st)
		return st
	}
	st.ServiceStatus = ""
	now := metav1.NewTime(in.now)
	const msg = "every RayCluster and Service of the RayService was deleted"
	if !meta.IsStatusConditionTrue(st.Conditions, string(rayv1.RayServiceSuspended)) {
		out.tell(NormalEvent(nil, EventSuspended, "Suspend", "%s", msg))
		out.note("spec.suspend: suspended")
		// A change of spec.suspend during the teardown did not wake this pass's caller for
		// good: look at the spec again once this status is stored.
		out.Wake.Soon = true
	}
	for _, t := range []rayv1.RayServiceConditionType{rayv1.RayServiceSuspending, rayv1.UpgradeInProgress, rayv1.RollbackInProgress, rayv1.RayServiceReady} {
		setCondition(&st, t, false, rayv1.SuspendComplete, msg, gen, now)
	}
	setCondition(&st, rayv1.RayServiceSuspended, true, rayv1.SuspendComplete, msg, gen, now)
	stampUpdate(in, &st)
	return st
}

// Suspension deletes the Gateway and HTTPRoute the RayService controls (deleteObject, with
// a UID precondition).
// +kubebuilder:rbac:groups=gateway.networking.k8s.io,resources=gateways;httproutes,verbs=delete

// deleteAllOwned plans the deletion of every cluster, Service, Gateway and HTTPRoute the
// RayService controls and returns how many still exist (deleted by this pass or going).
// Objects with raygate's names that the RayService does not control are not its to delete.
func deleteAllOwned(in inputs, act *Effects) int {
	left := 0
	for _, v := range in.obs.Clusters {
		left++
		if rc := v.Cluster; rc.DeletionTimestamp == nil {
			act.do(DeleteCluster{Cluster: rc, Done: NormalEvent(rc, EventDeletedCluster, "Delete",
				"deleted RayCluster %s: the RayService is suspended", rc.Name)})
		}
	}
	svc := in.want.Service
	var objects []Object
	for _, name := range slices.Sorted(maps.Keys(in.obs.Services)) {
		objects = append(objects, in.obs.Services[name])
	}
	if in.obs.Gateway != nil {
		objects = append(objects, in.obs.Gateway)
	}
	if in.obs.Route != nil {
		objects = append(objects, in.obs.Route)
	}
	for _, o := range objects {
		if !metav1.IsControlledBy(o, svc) {
			continue
		}
		left++
		if o.GetDeletionTimestamp() == nil {
			act.do(DeleteObject{Object: o})
		}
	}
	return left
}

// resume forgets the suspension: the next pass plans as for a new RayService.
func resume(in inputs, out *Outcome) rayv1.RayServiceStatuses {
	st := *in.stored.DeepCopy()
	gen := in.want.Service.Generation
	st.ObservedGeneration = gen
	now := metav1.NewTime(in.now)
	setCondition(&st, rayv1.RayServiceSuspended, false, rayv1.RayServiceResumed, "spec.suspend is false: the RayService starts again", gen, now)
	// Initializing again, with the clock restarted: the initializing timeout counts from
	// the resume (meta's helper would keep the time of the earlier False).
	meta.RemoveStatusCondition(&st.Conditions, string(rayv1.RayServiceReady))
	setCondition(&st, rayv1.RayServiceReady, false, rayv1.RayServiceInitializing, "resumed: preparing a new RayCluster", gen, now)
	out.tell(NormalEvent(nil, EventResumed, "Resume", "spec.suspend is false: the RayService starts again with a new RayCluster"))
	out.note("spec.suspend: resuming")
	out.Wake.Soon = true
	stampUpdate(in, &st)
	return st
}

// setCondition sets one condition; meta's helper keeps lastTransitionTime unless the status
// flips.
func setCondition(st *rayv1.RayServiceStatuses, t rayv1.RayServiceConditionType, ok bool, reason, msg string, gen int64, now metav1.Time) {
	status := metav1.ConditionFalse
	if ok {
		status = metav1.ConditionTrue
	}
	meta.SetStatusCondition(&st.Conditions, metav1.Condition{
		Type: string(t), Status: status, Reason: reason, Message: msg, ObservedGeneration: gen, LastTransitionTime: now,
	})
}
