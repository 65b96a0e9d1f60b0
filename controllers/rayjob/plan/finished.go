package plan

import (
	"fmt"
	"time"

	"k8s.io/utils/ptr"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/features"
	"github.com/raygate/raygate/internal/rayjob"
)

// finished cleans up after a job whose final status is stored: what the deletion settings
// ask once their time has come — the deletion
// rules (one action per pass, the one that deletes the most first), the legacy onSuccess
// and onFailure with ttlSecondsAfterFinished, or shutdownAfterJobFinishes. With the
// RayJobDeletionPolicy gate off, deletionStrategy is ignored and shutdownAfterJobFinishes
// applies, as in KubeRay (an event said so when the job ended). A cluster the job does not
// control (clusterSelector, or one that is not its own) is never deleted or changed.
func (s *pass) finished() {
	if rayjob.UsesClusterSelector(s.job) {
		return
	}
	if s.st.EndTime == nil {
		// A final status without an end time (written by hand, or by an older operator):
		// record one, and count the TTLs from it.
		s.st.EndTime = s.stamp(s.now)
		s.out.Wake.soon()
		return
	}
	spec := &s.job.Spec
	ds := spec.DeletionStrategy
	switch {
	case ds != nil && s.set.Gates.Enabled(features.RayJobDeletionPolicy) && len(ds.DeletionRules) > 0:
		s.deletionRules(ds.DeletionRules)
	case ds != nil && s.set.Gates.Enabled(features.RayJobDeletionPolicy):
		s.legacyPolicy(ds)
	case spec.ShutdownAfterJobFinishes:
		policy := rayv1.DeleteCluster
		if s.set.DeleteRayJobAfterJobFinishes {
			policy = rayv1.DeleteSelf
		}
		s.deleteAfter(policy, spec.TTLSecondsAfterFinished, "shutdownAfterJobFinishes")
	}
}

// deletionRules carries out the rules whose condition the job's final status meets and
// whose ttlSeconds passed, the one that deletes the most first, one per pass; it wakes for
// the next one due.
func (s *pass) deletionRules(rules []rayv1.DeletionRule) {
	var overdue []rayv1.DeletionRule
	for _, r := range rules {
		if !s.ruleMatches(r) {
			continue
		}
		due := s.st.EndTime.Add(seconds(int(r.Condition.TTLSeconds)))
		if s.now.Before(due) {
			s.out.Wake.due(due)
			continue
		}
		if !s.deletionDone(r.Policy) {
			overdue = append(overdue, r)
		}
	}
	if len(overdue) == 0 {
		return
	}
	r := mostImpactful(overdue)
	s.execute(r.Policy, fmt.Sprintf("deletion rule %s on %s", r.Policy, conditionOf(r)))
	if len(overdue) > 1 {
		// The next overdue rule is taken up by the next pass.
		s.out.Wake.soon()
	}
}

func (s *pass) ruleMatches(r rayv1.DeletionRule) bool {
	if c := r.Condition.JobStatus; c != nil {
		return *c == s.st.JobStatus
	}
	if c := r.Condition.JobDeploymentStatus; c != nil {
		return *c == s.st.JobDeploymentStatus
	}
	return false
}

func conditionOf(r rayv1.DeletionRule) string {
	if c := r.Condition.JobStatus; c != nil {
		return "jobStatus " + string(*c)
	}
	if c := r.Condition.JobDeploymentStatus; c != nil {
		return "jobDeploymentStatus " + string(*c)
	}
	return "no condition"
}

// impact orders policies by what they delete.
var impact = map[rayv1.DeletionPolicyType]int{rayv1.DeleteNone: 1, rayv1.DeleteWorkers: 2, rayv1.DeleteCluster: 3, rayv1.DeleteSelf: 4}

// mostImpactful is the rule that deletes the most (the first of equals).
func mostImpactful(rules []rayv1.DeletionRule) rayv1.DeletionRule {
	best := rules[0]
	for _, r := range rules[1:] {
		if impact[r.Policy] > impact[best.Policy] {
			best = r
		}
	}
	return best
}

// legacyPolicy carries out onSuccess or onFailure (by the Ray job's final status; a job that
// never reported SUCCEEDED or FAILED has none) ttlSecondsAfterFinished after the end.
func (s *pass) legacyPolicy(ds *rayv1.DeletionStrategy) {
	var p *rayv1.DeletionPolicy
	switch s.st.JobStatus {
	case rayv1.JobStatusSucceeded:
		p = ds.OnSuccess
	case rayv1.JobStatusFailed:
		p = ds.OnFailure
	}
	if p == nil || p.Policy == nil || *p.Policy == rayv1.DeleteNone {
		return
	}
	s.deleteAfter(*p.Policy, s.job.Spec.TTLSecondsAfterFinished, "deletionStrategy "+string(*p.Policy))
}

// deleteAfter carries out a policy ttlSeconds after the end, once.
func (s *pass) deleteAfter(policy rayv1.DeletionPolicyType, ttlSeconds int32, why string) {
	due := s.st.EndTime.Add(seconds(int(ttlSeconds)))
	if s.now.Before(due) {
		s.out.Wake.due(due)
		return
	}
	if !s.deletionDone(policy) {
		s.execute(policy, why)
	}
}

// deletionDone reports whether what a policy deletes is gone already (or is not the job's to
// delete), so a pass carries out each deletion once.
func (s *pass) deletionDone(policy rayv1.DeletionPolicyType) bool {
	rc := s.in.Observed.Cluster
	gone := rc == nil || rc.DeletionTimestamp != nil || !s.controls(&rc.ObjectMeta)
	switch policy {
	case rayv1.DeleteCluster:
		return gone
	case rayv1.DeleteWorkers:
		if gone {
			return true
		}
		for _, g := range rc.Spec.WorkerGroupSpecs {
			if !ptr.Deref(g.Suspend, false) {
				return false
			}
		}
		return true
	case rayv1.DeleteSelf:
		return false
	}
	return true
}

// execute carries out one deletion policy.
func (s *pass) execute(policy rayv1.DeletionPolicyType, why string) {
	rc, ns := s.in.Observed.Cluster, s.job.Namespace
	switch policy {
	case rayv1.DeleteCluster:
		s.act.do(DeleteCluster{Cluster: rc.DeepCopy(), Done: normalEvent(EventDeletedCluster, ActionDelete, "Deleted cluster %s/%s (%s)", ns, rc.Name, why)})
	case rayv1.DeleteWorkers:
		s.act.do(SuspendWorkers{Cluster: rc.DeepCopy(), Done: normalEvent(EventUpdatedCluster, ActionUpdate, "Set the `suspend` field to true for all worker groups in cluster %s/%s (%s)", ns, rc.Name, why)})
	case rayv1.DeleteSelf:
		s.act.do(DeleteRayJob{Done: normalEvent(EventDeletedRayJob, ActionDelete, "Deleted RayJob %s/%s (%s)", ns, s.job.Name, why)})
	default:
		return
	}
	s.out.note(fmt.Sprintf("%s at %s: %s", why, s.now.UTC().Format(time.RFC3339), policy))
}
