package plan

import (
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/validation"
)

// A RayService annotated ray.io/initializing-timeout that is still Initializing (no cluster
// ever served) when the timeout passes fails for good, as in KubeRay: Ready turns False
// with reason InitializingTimeout, the status forgets its clusters, which are then deleted
// after the deletion delay, and nothing else is done for it — a spec change does not retry;
// the RayService must be deleted and created again.

// planInitializingTimeout returns the status of a pass that finds the RayService failed
// (ok): it failed in an earlier pass, or its timeout passes now. The caller plans nothing
// else.
func planInitializingTimeout(in inputs, act *Effects, out *Outcome) (rayv1.RayServiceStatuses, bool) {
	if initializingTimedOut(in.stored) {
		cleanUpAfterTimeout(in, act, out)
		return *in.stored.DeepCopy(), true
	}
	at, timeout, ok := initializingDeadline(in.want.Service, in.stored)
	if !ok || in.now.Before(at) {
		return rayv1.RayServiceStatuses{}, false
	}
	st := *in.stored.DeepCopy()
	st.ObservedGeneration = in.want.Service.Generation
	// The clusters it prepared are deleted once this status is stored.
	st.ActiveServiceStatus, st.PendingServiceStatus = rayv1.RayServiceStatus{}, rayv1.RayServiceStatus{}
	st.NumServeEndpoints, st.ServiceStatus = 0, rayv1.NotRunning
	spent := in.now.Sub(at.Add(-timeout)).Truncate(time.Second)
	msg := "the RayService did not become ready within " + validation.InitializingTimeoutAnnotation + "=" + timeout.String() +
		" (initializing for " + spent.String() + "); its RayClusters are deleted and it is not retried: delete it and create it again"
	setReady(&st, in.want.Service.Generation, rayv1.RayServiceInitializingTimeout, msg, in.now)
	out.tell(WarningEvent(nil, EventInitializingTimeout, "Initialize", "%s", msg))
	out.note("initializing timeout passed: failing the RayService")
	out.Wake.Soon = true // retire its clusters once this status is stored
	stampUpdate(in, &st)
	return st, true
}

// initializingTimedOut: the status says the RayService failed to initialize in time.
func initializingTimedOut(st *rayv1.RayServiceStatuses) bool {
	c := findCondition(st.Conditions, rayv1.RayServiceReady)
	return c != nil && c.Status == metav1.ConditionFalse && c.Reason == rayv1.RayServiceInitializingTimeout
}

// initializingDeadline is when a RayService whose status st says it is Initializing fails,
// and its timeout (ok false: no timeout applies). The clock starts when Ready last turned
// False, which for a RayService that never served is when it was first seen.
func initializingDeadline(svc *rayv1.RayService, st *rayv1.RayServiceStatuses) (at time.Time, timeout time.Duration, ok bool) {
	timeout, set, valid := validation.InitializingTimeout(svc.Annotations)
	c := findCondition(st.Conditions, rayv1.RayServiceReady)
	if !set || !valid || c == nil || c.Status != metav1.ConditionFalse || c.Reason != rayv1.RayServiceInitializing {
		return time.Time{}, 0, false
	}
	return c.LastTransitionTime.Add(timeout), timeout, true
}

// wakeForInitializingTimeout makes the pass come back when the timeout of a RayService the
// pass leaves Initializing passes.
func wakeForInitializingTimeout(in inputs, out *Outcome) {
	if at, _, ok := initializingDeadline(in.want.Service, &out.Status); ok {
		out.Wake.due(at)
	}
}

// cleanUpAfterTimeout deletes every cluster of a failed RayService after the deletion
// delay, whatever still selects it: the RayService serves nothing anymore.
func cleanUpAfterTimeout(in inputs, act *Effects, out *Outcome) {
	for _, v := range in.obs.Clusters {
		rc := v.Cluster
		if rc.DeletionTimestamp != nil {
			continue
		}
		deleteWhenDue(in, rc, act, out, "the RayService failed to initialize in time")
	}
}

// setReady sets the Ready condition to False with reason and message.
func setReady(st *rayv1.RayServiceStatuses, generation int64, reason, msg string, now time.Time) {
	meta.SetStatusCondition(&st.Conditions, metav1.Condition{
		Type: string(rayv1.RayServiceReady), Status: metav1.ConditionFalse, Reason: reason, Message: msg,
		ObservedGeneration: generation, LastTransitionTime: metav1.NewTime(now),
	})
}
