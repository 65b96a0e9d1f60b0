package plan

import (
	"slices"
	"strconv"

	"k8s.io/utils/ptr"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/rayspec"
)

// strategyOf is the upgrade strategy of a (defaulted) RayService; NewCluster when unset.
func strategyOf(spec *rayv1.RayServiceSpec) rayv1.RayServiceUpgradeType {
	if spec.UpgradeStrategy == nil || spec.UpgradeStrategy.Type == nil {
		return rayv1.NewCluster
	}
	return *spec.UpgradeStrategy.Type
}

// goal is the cluster spec the RayService asks for and its hashes.
type goal struct {
	// Spec is the defaulted spec (what new clusters get); Stored the spec as stored, which
	// is what KubeRay hashes.
	Spec, Stored rayv1.RayClusterSpec
	// Hash is raygate's hash of Spec (rayspec.SpecHash), KubeRayHash KubeRay's of Stored.
	Hash, KubeRayHash string
}

func newGoal(stored, defaulted rayv1.RayClusterSpec) (goal, error) {
	h, err := rayspec.SpecHash(defaulted)
	if err != nil {
		return goal{}, err
	}
	k, err := rayspec.KubeRayHash(stored)
	if err != nil {
		return goal{}, err
	}
	return goal{Spec: defaulted, Stored: stored, Hash: h, KubeRayHash: k}, nil
}

// stamp is what a RayCluster's annotations say about the spec it was built from.
type stamp struct {
	// SpecHash is raygate's hash (rayv1.SpecHashKey); empty on clusters made by KubeRay or
	// by raygate before that key existed.
	SpecHash string
	// Hash is the value under KubeRay's key: KubeRay's hash, or on clusters made by an
	// older raygate that raygate's hash (rayspec.HashWithoutReplicas).
	Hash            string
	NumWorkerGroups int
	Version         string
}

func stampOf(c *rayv1.RayCluster) stamp {
	n, _ := strconv.Atoi(c.Annotations[rayv1.NumWorkerGroupsKey])
	return stamp{
		SpecHash:        c.Annotations[rayv1.SpecHashKey],
		Hash:            c.Annotations[rayv1.HashWithoutReplicasAndWorkersToDeleteKey],
		NumWorkerGroups: n,
		Version:         c.Annotations[rayv1.KubeRayVersionKey],
	}
}

// origin says who stamped the cluster, which decides the hash function to compare with.
func (s stamp) origin() string {
	switch {
	case s.SpecHash != "":
		return "raygate"
	case rayspec.IsKubeRayHash(s.Hash):
		return "KubeRay"
	case s.Hash != "":
		return "an older raygate"
	}
	return "nobody"
}

// match is how a cluster relates to the goal spec.
type match int

const (
	// matchChanged: something the pods run changed; the cluster must be replaced (or, with
	// the None strategy, updated in place).
	matchChanged match = iota
	// matchSame: the cluster runs the goal spec (replica counts aside).
	matchSame
	// matchAppendedGroups: the goal only appends worker groups; update the cluster in place.
	matchAppendedGroups
	// matchRestamp: the cluster runs the goal spec but its stamp must be rewritten: it was
	// stamped by KubeRay or an older raygate (whose hashes are computed differently), or
	// only KubeRay's hash changed (tolerations or scheduling gates, which raygate's hash
	// leaves out). Its pods and spec are left alone.
	matchRestamp
)

func (m match) String() string {
	return [...]string{"changed", "same", "worker groups appended", "same, stamp outdated"}[m]
}

// runsGoal: the cluster runs the goal spec, whoever stamped it.
func (m match) runsGoal() bool { return m == matchSame || m == matchRestamp }

// matchGoal compares a cluster's stamp with the goal, using the hash function of whoever
// stamped it: an operator update or a switch from KubeRay never looks like a spec change.
func matchGoal(s stamp, g goal) match {
	switch s.origin() {
	case "raygate":
		m := compareStamp(s.SpecHash, s.NumWorkerGroups, func(n int) []string { return hashes(rayspec.SpecHash, rayspec.FirstWorkerGroups(g.Spec, n)) }, len(g.Spec.WorkerGroupSpecs))
		if m == matchSame && s.Hash != g.KubeRayHash {
			return matchRestamp
		}
		return m
	case "KubeRay":
		return restampIfSame(compareStamp(s.Hash, s.NumWorkerGroups, func(n int) []string {
			h, _ := rayspec.KubeRayHashesBeforeDefaults(rayspec.FirstWorkerGroups(g.Stored, n))
			return h
		}, len(g.Stored.WorkerGroupSpecs)))
	case "an older raygate":
		return restampIfSame(compareStamp(s.Hash, s.NumWorkerGroups, func(n int) []string {
			return hashes(rayspec.HashWithoutReplicas, rayspec.FirstWorkerGroups(g.Spec, n))
		}, len(g.Spec.WorkerGroupSpecs)))
	}
	return matchChanged
}

func restampIfSame(m match) match {
	if m == matchSame {
		return matchRestamp
	}
	return m
}

// compareStamp compares a recorded hash with the goal's hash over its first n worker
// groups: all of them (same), or as many as the cluster had (only groups appended).
func compareStamp(recorded string, clusterGroups int, goalHashes func(n int) []string, goalGroups int) match {
	switch {
	case slices.Contains(goalHashes(goalGroups), recorded):
		return matchSame
	case clusterGroups > 0 && goalGroups > clusterGroups && slices.Contains(goalHashes(clusterGroups), recorded):
		return matchAppendedGroups
	}
	return matchChanged
}

func hashes(f func(rayv1.RayClusterSpec) (string, error), spec rayv1.RayClusterSpec) []string {
	h, err := f(spec)
	if err != nil {
		return nil
	}
	return []string{h}
}

// clusterChange is what happens to the RayService's clusters in this reconcile.
type clusterChange string

const (
	actNone           clusterChange = "None"
	actCreatePending  clusterChange = "CreatePending"
	actNotApplied     clusterChange = "NotAppliedWithStrategyNone"
	actAppendActive   clusterChange = "AppendWorkerGroupsToActive"
	actRestampActive  clusterChange = "RestampActive"
	actAppendPending  clusterChange = "AppendWorkerGroupsToPending"
	actRestampPending clusterChange = "RestampPending"
	actReplacePending clusterChange = "ReplacePending"
	actDropPending    clusterChange = "DropPending"
	actRollback       clusterChange = "Rollback"
	actBlockedNoGwAPI clusterChange = "BlockedWithoutGatewayAPI"
)

// clusterInputs are the facts decideClusters needs.
type clusterInputs struct {
	Strategy        rayv1.RayServiceUpgradeType
	Active, Pending *stamp // nil: no such cluster
	Goal            goal
	GatewayAPI      bool // the Gateway API CRDs are installed
}

// clusterPlan is decideClusters' answer.
type clusterPlan struct {
	Change clusterChange
	Reason string
}

// decideClusters is the new-cluster decision. The goal is compared with the pending cluster
// first (the upgrade in flight), then with the active one:
//
//   - no cluster yet: create the first one (as pending; it is promoted once it serves);
//   - the pending cluster matches: nothing (or append groups / re-stamp in place);
//   - the goal went back to the active cluster: drop the pending cluster (NewCluster: it
//     never served) or roll back step by step (incremental: it may carry traffic);
//   - a third spec: replace the pending cluster (NewCluster), or first return to the active
//     cluster as a rollback, then start afresh (incremental);
//   - no pending cluster: a real change starts an upgrade;
//   - with the None strategy a real change is not applied at all, as in KubeRay: no new
//     cluster, and the running one keeps its spec and pods (only appended worker groups are
//     added, and serveConfigV2 changes are still submitted).
func decideClusters(in clusterInputs) clusterPlan {
	incremental := in.Strategy == rayv1.NewClusterWithIncrementalUpgrade
	if in.Active == nil && in.Pending == nil {
		return clusterPlan{actCreatePending, "the RayService has no RayCluster yet"}
	}
	if in.Pending != nil {
		switch matchGoal(*in.Pending, in.Goal) {
		case matchSame:
			return clusterPlan{actNone, "the pending cluster runs the goal spec"}
		case matchAppendedGroups:
			return clusterPlan{actAppendPending, "worker groups were appended; updating the pending cluster in place"}
		case matchRestamp:
			return clusterPlan{actRestampPending, restampReason("pending", *in.Pending)}
		}
		if in.Strategy == rayv1.None {
			return clusterPlan{actNotApplied, noneReason}
		}
		if in.Active == nil {
			return clusterPlan{actReplacePending, "the spec changed before the first cluster served; replacing it"}
		}
		backToActive := matchGoal(*in.Active, in.Goal).runsGoal()
		switch {
		case incremental && backToActive:
			return clusterPlan{actRollback, "the spec went back to the active cluster's; moving traffic and capacity back to it"}
		case incremental:
			return clusterPlan{actRollback, "the spec changed again during the upgrade; returning to the active cluster before upgrading to the new spec"}
		case backToActive:
			return clusterPlan{actDropPending, "the spec went back to the active cluster's; the pending cluster is not needed"}
		default:
			return clusterPlan{actReplacePending, "the spec changed while the pending cluster was being prepared; replacing it"}
		}
	}
	switch matchGoal(*in.Active, in.Goal) {
	case matchSame:
		return clusterPlan{actNone, "the active cluster runs the goal spec"}
	case matchAppendedGroups:
		return clusterPlan{actAppendActive, "worker groups were appended; updating the active cluster in place"}
	case matchRestamp:
		return clusterPlan{actRestampActive, restampReason("active", *in.Active)}
	}
	switch {
	case in.Strategy == rayv1.None:
		return clusterPlan{actNotApplied, noneReason}
	case incremental && !in.GatewayAPI:
		return clusterPlan{actBlockedNoGwAPI, "NewClusterWithIncrementalUpgrade needs the Gateway API CRDs (Gateway, HTTPRoute); install them and restart raygate"}
	}
	return clusterPlan{actCreatePending, "the cluster spec changed; preparing a new cluster"}
}

// noneReason says what the None strategy does with a rayClusterConfig change: nothing.
const noneReason = "rayClusterConfig changed, but upgradeStrategy None neither replaces nor modifies a running RayCluster: " +
	"it keeps its spec and pods (serveConfigV2 changes are still applied); switch to NewCluster to apply the change"

func restampReason(role string, s stamp) string {
	if o := s.origin(); o != "raygate" {
		return "the " + role + " cluster runs the goal spec; it was stamped by " + o + ", whose spec hash is computed differently"
	}
	return "the " + role + " cluster runs the goal spec; only tolerations or scheduling gates changed, which apply to the next new cluster"
}

// pendingClusterSpec is the spec of a new cluster for the goal. A cluster created for an
// incremental upgrade starts at minReplicas (replicas unset): its Serve target capacity
// starts at 0 and the autoscaler grows it as capacity moves over.
func pendingClusterSpec(g goal, incrementalUpgrade bool) rayv1.RayClusterSpec {
	s := *g.Spec.DeepCopy()
	// Validation forbids an upgrade strategy on a RayService's clusters.
	s.UpgradeStrategy = nil
	if incrementalUpgrade {
		for i := range s.WorkerGroupSpecs {
			s.WorkerGroupSpecs[i].Replicas = nil
		}
	}
	return s
}

// appendedGroupsSpec is a cluster's spec with the worker groups appended to the goal added
// at the end. The groups it has stay exactly as they are (replica counts and pending
// deletions are the autoscaler's), as do their pods.
func appendedGroupsSpec(current rayv1.RayClusterSpec, g goal) rayv1.RayClusterSpec {
	want := pendingClusterSpec(g, false)
	out := *current.DeepCopy()
	if len(out.WorkerGroupSpecs) < len(want.WorkerGroupSpecs) {
		out.WorkerGroupSpecs = append(out.WorkerGroupSpecs, want.WorkerGroupSpecs[len(out.WorkerGroupSpecs):]...)
	}
	return out
}

// deletionDelaySeconds is rayClusterDeletionDelaySeconds with its default.
func deletionDelaySeconds(spec *rayv1.RayServiceSpec) int32 {
	return max(ptr.Deref(spec.RayClusterDeletionDelaySeconds, int32(defaultDeletionDelay.Seconds())), 0)
}
