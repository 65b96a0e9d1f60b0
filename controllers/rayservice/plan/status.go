package plan

import (
	"fmt"
	"maps"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
)

// conditionInputs are the facts the three conditions are computed from.
type conditionInputs struct {
	// ValidationError, when set, is why the spec was rejected; nothing else is computed.
	ValidationError string
	ActiveName      string
	PendingName     string
	Endpoints       int32
	// FirstClusterMessage says what the first cluster waits for (no active cluster yet).
	FirstClusterMessage string
	// UpgradeMessage says where the upgrade is (phase, capacities, traffic, what it waits for).
	UpgradeMessage string
	// PendingUnhealthy lists the pending cluster's applications that failed ("name (STATUS:
	// message)"): no traffic moves to it.
	PendingUnhealthy []string
	// Blocked, when set, is why a wanted upgrade cannot start (e.g. no Gateway API).
	Blocked string
	// RollingBack is set while traffic and capacity move back to the active cluster.
	RollingBack     bool
	RollbackMessage string
	// PodsRefused says which of the clusters cannot create pods and why ("": none).
	PodsRefused string
}

// setConditions computes Ready, UpgradeInProgress and RollbackInProgress. meta's helper
// keeps lastTransitionTime unless the status flips, so unchanged inputs change nothing.
func setConditions(st *rayv1.RayServiceStatuses, generation int64, in conditionInputs, now metav1.Time) {
	set := func(t rayv1.RayServiceConditionType, ok bool, reason, msg string) {
		status := metav1.ConditionFalse
		if ok {
			status = metav1.ConditionTrue
		}
		meta.SetStatusCondition(&st.Conditions, metav1.Condition{
			Type: string(t), Status: status, Reason: reason, Message: msg,
			ObservedGeneration: generation, LastTransitionTime: now,
		})
	}
	if in.ValidationError != "" {
		set(rayv1.RayServiceReady, false, rayv1.ValidationFailed, in.ValidationError)
		st.ServiceStatus = rayv1.NotRunning
		return
	}

	switch {
	case in.Endpoints > 0:
		set(rayv1.RayServiceReady, true, rayv1.NonZeroServeEndpoints, joinNotes(fmt.Sprintf("%d serve endpoint(s) ready", in.Endpoints), in.PodsRefused))
	case in.ActiveName == "" && !servedBefore(st):
		set(rayv1.RayServiceReady, false, rayv1.RayServiceInitializing, orDefault(in.FirstClusterMessage, "preparing the first RayCluster"))
	default:
		set(rayv1.RayServiceReady, false, rayv1.ZeroServeEndpoints, joinNotes("no ready pod behind the serve Service", in.PodsRefused))
	}
	st.ServiceStatus = rayv1.NotRunning
	if meta.IsStatusConditionTrue(st.Conditions, string(rayv1.RayServiceReady)) {
		st.ServiceStatus = rayv1.Running
	}

	switch {
	case in.ActiveName != "" && in.PendingName != "" && len(in.PendingUnhealthy) > 0 && !in.RollingBack:
		set(rayv1.UpgradeInProgress, true, rayv1.PendingApplicationsUnhealthy,
			fmt.Sprintf("no traffic moves to pending cluster %s: Serve applications not RUNNING: %s", in.PendingName, strings.Join(in.PendingUnhealthy, "; ")))
	case in.ActiveName != "" && in.PendingName != "":
		set(rayv1.UpgradeInProgress, true, rayv1.BothActivePendingClustersExist,
			joinNotes(in.PodsRefused, orDefault(in.UpgradeMessage, "active cluster "+in.ActiveName+", pending cluster "+in.PendingName)))
	case in.Blocked != "":
		set(rayv1.UpgradeInProgress, false, ReasonGatewayAPIUnavailable, in.Blocked)
	case in.ActiveName != "":
		set(rayv1.UpgradeInProgress, false, rayv1.NoPendingCluster, "active cluster "+in.ActiveName+" serves; no pending cluster")
	default:
		set(rayv1.UpgradeInProgress, false, rayv1.NoActiveCluster, "no active cluster yet")
	}

	if in.RollingBack {
		set(rayv1.RollbackInProgress, true, rayv1.DesiredClusterSpecChanged, in.RollbackMessage)
	} else {
		set(rayv1.RollbackInProgress, false, rayv1.NoRollback, "the spec does not ask to go back to the active cluster")
	}
}

// servedBefore: the RayService had serve endpoints once. As in KubeRay it is then never
// Initializing again (its active cluster deleted by hand, say): Ready says
// ZeroServeEndpoints, and ray.io/initializing-timeout no longer applies.
func servedBefore(st *rayv1.RayServiceStatuses) bool {
	c := findCondition(st.Conditions, rayv1.RayServiceReady)
	return c != nil && (c.Reason == rayv1.NonZeroServeEndpoints || c.Reason == rayv1.ZeroServeEndpoints)
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// unhealthyApps lists applications that are neither RUNNING nor on their way there
// (DEPLOYING, NOT_STARTED), sorted, as "name (STATUS: message)".
func unhealthyApps(apps map[string]rayv1.AppStatus) []string {
	var out []string
	for name, a := range apps {
		switch a.Status {
		case rayv1.ApplicationStatusRunning, rayv1.ApplicationStatusDeploying, rayv1.ApplicationStatusNotStarted, "":
			continue
		}
		s := name + " (" + a.Status
		if a.Message != "" {
			s += ": " + a.Message
		}
		out = append(out, s+")")
	}
	sort.Strings(out)
	return out
}

// appsRunning reports whether every wanted application is present and RUNNING.
func appsRunning(apps map[string]rayv1.AppStatus, wanted []string) bool {
	for _, name := range wanted {
		if apps[name].Status != rayv1.ApplicationStatusRunning {
			return false
		}
	}
	return true
}

// statusChanged compares two statuses ignoring lastUpdateTime, so the time alone never
// causes a write.
func statusChanged(old, cur *rayv1.RayServiceStatuses) bool {
	a, b := old.DeepCopy(), cur.DeepCopy()
	a.LastUpdateTime, b.LastUpdateTime = nil, nil
	return !equality.Semantic.DeepEqual(a, b)
}

// buildStatus is the status the pass leaves: the roles' upgrade fields, each cluster's
// status and applications as observed, the serve endpoints and the conditions. It tells the
// events that announce a condition raygate adds (ownership conflicts, the strategy
// fallback, pods refused), once: when the stored status does not say so yet.
func buildStatus(in inputs, r roles, serve serveStates, traffic trafficState, sv serving, prog progress, out *Outcome) rayv1.RayServiceStatuses {
	st := *in.stored.DeepCopy()
	gen := in.want.Service.Generation
	st.ObservedGeneration = gen
	st.ActiveServiceStatus, st.PendingServiceStatus = *r.Active.Status.DeepCopy(), *r.Pending.Status.DeepCopy()
	for _, c := range []struct {
		role slot
		st   *rayv1.RayServiceStatus
	}{{r.Active, &st.ActiveServiceStatus}, {r.Pending, &st.PendingServiceStatus}} {
		if c.role.View == nil {
			continue
		}
		c.st.RayClusterStatus = *c.role.cluster().Status.DeepCopy()
		if apps := serve[c.role.name()].Apps; apps != nil {
			c.st.Applications = maps.Clone(apps)
		}
	}
	st.NumServeEndpoints = sv.Endpoints
	refused := podsRefused(r)
	conds := conditionInputs{
		ActiveName: r.Active.name(), PendingName: r.Pending.name(), Endpoints: sv.Endpoints,
		FirstClusterMessage: joinNotes(refused, prog.First), UpgradeMessage: prog.Upgrade, PendingUnhealthy: prog.Unhealthy,
		Blocked: r.Blocked, RollingBack: r.Rollback != "", PodsRefused: refused,
	}
	if conds.RollingBack {
		conds.RollbackMessage = r.Rollback + "; " + prog.Upgrade
	}
	now := metav1.NewTime(in.now)
	setConditions(&st, gen, conds, now)
	tellPodsRefused(in, refused, out)
	setOwnershipConflict(in, &st, out.Conflicts, now, out)
	setStrategyFallback(in, &st, now, out)
	setUpgradeAction(in, &st, r.Control, now, out)
	setRouteAccepted(in, &st, traffic.RouteAccepted, now, out)
	setUpgradeGates(in, &st, r, prog.Gate, now)
	stampUpdate(in, &st)
	return st
}

// rejectedStatus says why the spec is rejected; the rest of the status stays as it was.
func rejectedStatus(in inputs, out *Outcome) rayv1.RayServiceStatuses {
	st := *in.stored.DeepCopy()
	st.ObservedGeneration = in.want.Service.Generation
	setConditions(&st, st.ObservedGeneration, conditionInputs{ValidationError: in.want.Invalid}, metav1.NewTime(in.now))
	if c := findCondition(in.stored.Conditions, rayv1.RayServiceReady); c == nil || c.Reason != rayv1.ValidationFailed || c.Message != in.want.Invalid {
		out.tell(WarningEvent(nil, EventValidationFailed, "Validate", "spec rejected, nothing is created or deleted until it is fixed: %s", in.want.Invalid))
	}
	stampUpdate(in, &st)
	return st
}

// stampUpdate sets lastUpdateTime when anything else changed, so time alone never causes a
// write.
func stampUpdate(in inputs, st *rayv1.RayServiceStatuses) {
	if statusChanged(in.stored, st) {
		st.LastUpdateTime = &metav1.Time{Time: in.now}
	}
}

func findCondition(conds []metav1.Condition, t rayv1.RayServiceConditionType) *metav1.Condition {
	for i := range conds {
		if conds[i].Type == string(t) {
			return &conds[i]
		}
	}
	return nil
}
