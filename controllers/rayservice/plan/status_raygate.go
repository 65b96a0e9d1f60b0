package plan

import (
	"regexp"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/untrusted"
)

// The conditions and messages raygate adds to KubeRay's, computed like the others: pure
// functions of the pass, each announced by one event when the stored status does not say
// so yet.

// refusedPodName matches the API server's `pods "<name>" is forbidden` in a refusal.
var refusedPodName = regexp.MustCompile(`pods? "[^"]*" (is forbidden|already exists)`)

// maxRefusalExcerpt is the longest excerpt of a cluster's ReplicaFailure message quoted.
const maxRefusalExcerpt = 200

// podsRefused says which of the active and pending clusters cannot create pods and why (a
// Pod Security level, a quota, an admission policy refused them), as their ReplicaFailure
// conditions say; "" when none. The message comes from the API server through the
// RayCluster's status, which the tenant can write: it is quoted sanitized and cut.
func podsRefused(r roles) string {
	var notes []string
	for _, s := range []slot{r.Active, r.Pending} {
		rc := s.cluster()
		if rc == nil {
			continue
		}
		if c := meta.FindStatusCondition(rc.Status.Conditions, string(rayv1.RayClusterReplicaFailure)); c != nil && c.Status == metav1.ConditionTrue {
			// The refused pod's generated name changes with every attempt; without it the
			// message, and so the status, stays the same while the refusal does.
			msg := refusedPodName.ReplaceAllString(c.Message, "a pod $1")
			notes = append(notes, "RayCluster "+rc.Name+" cannot create pods ("+untrusted.Text(c.Reason, 64)+"): "+untrusted.Text(msg, maxRefusalExcerpt))
		}
	}
	return strings.Join(notes, "; ")
}

// tellPodsRefused warns once about refused pods: when no stored condition quotes it yet.
func tellPodsRefused(in inputs, refused string, out *Outcome) {
	if refused == "" {
		return
	}
	for _, t := range []rayv1.RayServiceConditionType{rayv1.RayServiceReady, rayv1.UpgradeInProgress} {
		if c := findCondition(in.stored.Conditions, t); c != nil && strings.Contains(c.Message, refused) {
			return
		}
	}
	out.tell(WarningEvent(nil, EventPodsRefused, "CreatePods", "%s", refused))
}

// setOwnershipConflict sets OwnershipConflict while objects raygate must manage belong to
// someone else, and removes it when they are gone.
func setOwnershipConflict(in inputs, st *rayv1.RayServiceStatuses, conflicts []string, now metav1.Time, out *Outcome) {
	if len(conflicts) == 0 {
		meta.RemoveStatusCondition(&st.Conditions, string(rayv1.RayServiceOwnershipConflict))
		return
	}
	msg := strings.Join(conflicts, "; ") + ". raygate leaves them untouched and the RayService does not move until they are deleted or renamed."
	meta.SetStatusCondition(&st.Conditions, metav1.Condition{
		Type: string(rayv1.RayServiceOwnershipConflict), Status: metav1.ConditionTrue, Reason: rayv1.ForeignObject,
		Message: msg, ObservedGeneration: in.want.Service.Generation, LastTransitionTime: now,
	})
	if c := findCondition(in.stored.Conditions, rayv1.RayServiceOwnershipConflict); c == nil || c.Message != msg {
		out.tell(WarningEvent(nil, EventOwnershipConflict, "Skip", "%s", msg))
	}
}

// setStrategyFallback says, while the spec asks for a strategy whose feature gate is off,
// that upgrades use NewCluster instead.
func setStrategyFallback(in inputs, st *rayv1.RayServiceStatuses, now metav1.Time, out *Outcome) {
	if in.want.Fallback == "" {
		meta.RemoveStatusCondition(&st.Conditions, string(rayv1.UpgradeStrategyFallback))
		return
	}
	meta.SetStatusCondition(&st.Conditions, metav1.Condition{
		Type: string(rayv1.UpgradeStrategyFallback), Status: metav1.ConditionTrue, Reason: ReasonFeatureGateDisabled,
		Message: in.want.Fallback, ObservedGeneration: in.want.Service.Generation, LastTransitionTime: now,
	})
	if c := findCondition(in.stored.Conditions, rayv1.UpgradeStrategyFallback); c == nil || c.Message != in.want.Fallback {
		out.tell(WarningEvent(nil, EventStrategyFallback, "Upgrade", "%s", in.want.Fallback))
	}
}

// joinNotes joins the non-empty notes with "; ".
func joinNotes(notes ...string) string {
	var kept []string
	for _, n := range notes {
		if n != "" {
			kept = append(kept, n)
		}
	}
	return strings.Join(kept, "; ")
}
