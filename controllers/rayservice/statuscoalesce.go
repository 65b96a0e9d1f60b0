package rayservice

import (
	"time"

	"k8s.io/apimachinery/pkg/api/equality"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/statuspatch"
)

// DefaultMessageCoalesce is how long a status change that only tells progress may wait to be
// written with the next change. An incremental step passes through several short waits (the
// route just written, a target capacity not yet taken up), each with its own
// UpgradeInProgress message; written at once, they cost four status writes per step on top
// of the three that carry the step (traffic, shrink, grow), and fifty upgrades at once made
// that a write every second per RayService. Progress is those messages, the copies of the
// clusters' own statuses (the new cluster's first status and its Ready each cost a write of
// their own before its config was even submitted) and the serve endpoint count (it drops
// when the Services leave the old cluster, one pass before the last shrink). Everything
// else — capacities, traffic, clusters, applications, a condition's status or reason, any
// condition raygate reads back as a record — is written at once.
const DefaultMessageCoalesce = 2 * time.Second

// progressConditions are the conditions whose message only tells progress: nothing reads
// it back, so a late message changes no decision.
var progressConditions = map[string]bool{
	string(rayv1.RayServiceReady):   true,
	string(rayv1.UpgradeInProgress): true,
}

// messagesOnly says whether cur differs from old only in progress: lastUpdateTime, the
// messages of progress conditions whose type, status and reason stay (a Ready condition
// reporting a rejected spec is a record, not progress), the copies of the clusters'
// statuses and the serve endpoint count. raygate reads none of them back; a cluster's
// own status says the same, and the Ready condition's reason says whether any endpoint
// serves.
func messagesOnly(old, cur *rayv1.RayServiceStatuses) bool {
	a, b := old.DeepCopy(), cur.DeepCopy()
	a.LastUpdateTime, b.LastUpdateTime = nil, nil
	for _, st := range []*rayv1.RayServiceStatuses{a, b} {
		st.ActiveServiceStatus.RayClusterStatus, st.PendingServiceStatus.RayClusterStatus = rayv1.RayClusterStatus{}, rayv1.RayClusterStatus{}
		st.NumServeEndpoints = 0
	}
	if len(a.Conditions) != len(b.Conditions) {
		return false
	}
	for i := range a.Conditions {
		ca, cb := &a.Conditions[i], &b.Conditions[i]
		if ca.Type != cb.Type || ca.Status != cb.Status || ca.Reason != cb.Reason ||
			!progressConditions[ca.Type] || ca.Reason == rayv1.ValidationFailed {
			continue
		}
		ca.Message, cb.Message = "", ""
	}
	return equality.Semantic.DeepEqual(a, b)
}

// messageWait says how long a planned status that differs from the stored one may still
// wait (0: write it now). quiet says the pass has nothing else that must follow the write
// (no event, no recorded action, no gate failure, no finished upgrade); pendingSince is
// when such a change was first seen.
func messageWait(stored, planned *rayv1.RayServiceStatuses, quiet bool, pendingSince, now time.Time, window time.Duration) time.Duration {
	if window <= 0 || !quiet || !messagesOnly(stored, planned) {
		return 0
	}
	if pendingSince.IsZero() || pendingSince.After(now) {
		pendingSince = now
	}
	if waited := now.Sub(pendingSince); waited < window {
		return window - waited
	}
	return 0
}

// messagePolicy is the RayService's status write policy: a change that messageWait lets
// wait is written with the next change or when the wait is over; the pending state is since
// when it waits.
func messagePolicy(quiet bool, window time.Duration) statuspatch.Policy[rayv1.RayServiceStatuses, time.Time] {
	return func(stored, planned rayv1.RayServiceStatuses, since, now time.Time) statuspatch.Decision[time.Time] {
		if since.IsZero() {
			since = now
		}
		if wait := messageWait(&stored, &planned, quiet, since, now, window); wait > 0 {
			return statuspatch.Decision[time.Time]{After: wait, Pending: since}
		}
		return statuspatch.Decision[time.Time]{Write: true}
	}
}

// serviceStatusWriter writes the RayServices' statuses (internal/statuspatch): Get reads a
// RayService from the API while the cache has not seen the last status write, and the
// changes messagePolicy leaves waiting are kept there.
type serviceStatusWriter = statuspatch.Writer[*rayv1.RayService, rayv1.RayServiceStatuses, time.Time, serviceStatus]

// serviceStatus reaches a RayService's status for the writer.
type serviceStatus struct{}

func (serviceStatus) Status(svc *rayv1.RayService) *rayv1.RayServiceStatuses { return &svc.Status }

func (serviceStatus) Copy(s *rayv1.RayServiceStatuses) *rayv1.RayServiceStatuses {
	return s.DeepCopy()
}
