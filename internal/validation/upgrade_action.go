package validation

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/util/validation/field"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
)

var (
	upgradeActionPath = field.NewPath("metadata", "annotations").Key(rayv1.UpgradeActionKey)
	upgradeTargetPath = field.NewPath("metadata", "annotations").Key(rayv1.UpgradeTargetKey)
)

// UpgradeTargeted: the action applies to one upgrade, named by its pending cluster (resume
// also lifts an abort, after which no pending cluster is left to name).
func UpgradeTargeted(action string) bool {
	return action == rayv1.UpgradeActionPause || action == rayv1.UpgradeActionAbort || action == rayv1.UpgradeActionPromote
}

// UpgradeInFlight is the pending cluster of the upgrade the status describes: a pending
// cluster next to an active one ("" when no upgrade runs; a first cluster is no upgrade).
func UpgradeInFlight(st *rayv1.RayServiceStatuses) string {
	if st.ActiveServiceStatus.RayClusterName == "" {
		return ""
	}
	return st.PendingServiceStatus.RayClusterName
}

// upgradeAction checks a raygate.ray.io/upgrade-action set or changed by this request
// against the upgrade the stored status describes. Admission only, and only when the action
// or its target changes: a stored action that no longer applies (the upgrade finished) is
// inert and never blocks other updates.
func (c *check) upgradeAction(old, svc *rayv1.RayService) field.ErrorList {
	action, target := svc.Annotations[rayv1.UpgradeActionKey], svc.Annotations[rayv1.UpgradeTargetKey]
	if !c.admission() || (action == "" && target == "") {
		return nil
	}
	if old != nil && old.Annotations[rayv1.UpgradeActionKey] == action && old.Annotations[rayv1.UpgradeTargetKey] == target {
		return nil
	}
	return c.decide(UpgradeActionErrors(action, target, &svc.Status)...)
}

// UpgradeActionErrors are the reasons an action is refused for an object whose status is st:
// an unknown action, a target that is not the pending cluster, or no upgrade to act on.
func UpgradeActionErrors(action, target string, st *rayv1.RayServiceStatuses) field.ErrorList {
	pending := UpgradeInFlight(st)
	switch {
	case action == "" && target != "":
		return field.ErrorList{field.Required(upgradeActionPath, "an upgrade target needs an action: one of pause, resume, abort, promote")}
	case action == rayv1.UpgradeActionResume:
		if target != "" && target != pending {
			return field.ErrorList{field.Invalid(upgradeTargetPath, target, notPending(target, pending))}
		}
		return nil
	case !UpgradeTargeted(action):
		return field.ErrorList{field.NotSupported(upgradeActionPath, action, rayv1.UpgradeActions)}
	case pending == "":
		return field.ErrorList{field.Invalid(upgradeActionPath, action, "no upgrade is running: the RayService has no pending RayCluster to "+action)}
	case target == "":
		return field.ErrorList{field.Required(upgradeTargetPath, fmt.Sprintf("name the pending RayCluster the %s is for (now %s), so it never applies to a later upgrade", action, pending))}
	case target != pending:
		return field.ErrorList{field.Invalid(upgradeTargetPath, target, notPending(target, pending))}
	case action == rayv1.UpgradeActionPromote && meta.IsStatusConditionTrue(st.Conditions, string(rayv1.RollbackInProgress)):
		// The goal is the active cluster's spec again, so the controller would walk back anyway
		// while the condition said "Promoting": refuse instead of accepting an action it cannot do.
		return field.ErrorList{field.Invalid(upgradeActionPath, action, fmt.Sprintf(
			"the upgrade to %s is rolling back (the spec is the active RayCluster's again), so there is nothing to promote: change the spec to upgrade again, or abort to drop %s", pending, pending))}
	}
	return nil
}

func notPending(target, pending string) string {
	if pending == "" {
		return fmt.Sprintf("RayCluster %s is not upgrading this RayService: no upgrade is running", target)
	}
	return fmt.Sprintf("RayCluster %s is not the pending cluster of this RayService (the upgrade in flight is to %s)", target, pending)
}
