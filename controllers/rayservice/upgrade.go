package rayservice

import (
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

// goal is the cluster spec the RayService asks for, defaulted, and its hash.
type goal struct {
	Spec rayv1.RayClusterSpec
	Hash string
}

func newGoal(spec rayv1.RayClusterSpec) (goal, error) {
	h, err := rayspec.HashWithoutReplicas(spec)
	if err != nil {
		return goal{}, err
	}
	return goal{Spec: spec, Hash: h}, nil
}

// stamp is what a RayCluster's annotations say about the spec it was built from.
type stamp struct {
	Hash            string
	NumWorkerGroups int
	Version         string
}

func stampOf(c *rayv1.RayCluster) stamp {
	n, _ := strconv.Atoi(c.Annotations[rayv1.NumWorkerGroupsKey])
	return stamp{
		Hash:            c.Annotations[rayv1.HashWithoutReplicasAndWorkersToDeleteKey],
		NumWorkerGroups: n,
		Version:         c.Annotations[rayv1.KubeRayVersionKey],
	}
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
	// matchOtherVersion: the cluster was stamped by another raygate version, whose hash may
	// be computed differently; re-stamp it instead of replacing a healthy cluster.
	matchOtherVersion
)

func (m match) String() string {
	return [...]string{"changed", "same", "worker groups appended", "stamped by another raygate version"}[m]
}

// matchGoal compares a cluster's stamp with the goal.
func matchGoal(s stamp, g goal, version string) match {
	switch {
	case s.Hash == g.Hash:
		return matchSame
	case s.Version != version:
		return matchOtherVersion
	case s.NumWorkerGroups > 0 && len(g.Spec.WorkerGroupSpecs) > s.NumWorkerGroups:
		prefix, err := rayspec.HashWithWorkerGroups(g.Spec, s.NumWorkerGroups)
		if err == nil && prefix == s.Hash {
			return matchAppendedGroups
		}
	}
	return matchChanged
}

// clusterChange is what happens to the RayService's clusters in this reconcile.
type clusterChange string

const (
	actNone           clusterChange = "None"
	actCreatePending  clusterChange = "CreatePending"
	actUpdateActive   clusterChange = "UpdateActiveInPlace"
	actAppendActive   clusterChange = "AppendWorkerGroupsToActive"
	actRestampActive  clusterChange = "RestampActive"
	actUpdatePending  clusterChange = "UpdatePendingInPlace"
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
	Version         string // this raygate's version
	GatewayAPI      bool   // the Gateway API CRDs are installed
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
//   - no pending cluster: a real change starts an upgrade (None: update in place).
func decideClusters(in clusterInputs) clusterPlan {
	incremental := in.Strategy == rayv1.NewClusterWithIncrementalUpgrade
	if in.Active == nil && in.Pending == nil {
		return clusterPlan{actCreatePending, "the RayService has no RayCluster yet"}
	}
	if in.Pending != nil {
		switch m := matchGoal(*in.Pending, in.Goal, in.Version); m {
		case matchSame:
			return clusterPlan{actNone, "the pending cluster runs the goal spec"}
		case matchAppendedGroups:
			return clusterPlan{actAppendPending, "worker groups were appended; updating the pending cluster in place"}
		case matchOtherVersion:
			return clusterPlan{actRestampPending, "the pending cluster was " + m.String()}
		}
		if in.Strategy == rayv1.None {
			return clusterPlan{actUpdatePending, "the None strategy updates clusters in place"}
		}
		if in.Active == nil {
			return clusterPlan{actReplacePending, "the spec changed before the first cluster served; replacing it"}
		}
		backToActive := matchGoal(*in.Active, in.Goal, in.Version) == matchSame
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
	switch m := matchGoal(*in.Active, in.Goal, in.Version); m {
	case matchSame:
		return clusterPlan{actNone, "the active cluster runs the goal spec"}
	case matchAppendedGroups:
		return clusterPlan{actAppendActive, "worker groups were appended; updating the active cluster in place"}
	case matchOtherVersion:
		return clusterPlan{actRestampActive, "the active cluster was " + m.String()}
	}
	switch {
	case in.Strategy == rayv1.None:
		return clusterPlan{actUpdateActive, "the cluster spec changed; the None strategy updates the active cluster in place"}
	case incremental && !in.GatewayAPI:
		return clusterPlan{actBlockedNoGwAPI, "NewClusterWithIncrementalUpgrade needs the Gateway API CRDs (Gateway, HTTPRoute); install them and restart raygate"}
	}
	return clusterPlan{actCreatePending, "the cluster spec changed; preparing a new cluster"}
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

// inPlaceSpec is the spec an existing cluster gets when updated in place. With the
// autoscaler on, the replica counts and pending deletions of groups that keep their name
// stay as the autoscaler set them; onlyAppend keeps the existing groups untouched.
func inPlaceSpec(current rayv1.RayClusterSpec, g goal, onlyAppend bool) rayv1.RayClusterSpec {
	want := pendingClusterSpec(g, false)
	if onlyAppend && len(current.WorkerGroupSpecs) <= len(want.WorkerGroupSpecs) {
		out := *current.DeepCopy()
		out.WorkerGroupSpecs = append(out.WorkerGroupSpecs, want.WorkerGroupSpecs[len(current.WorkerGroupSpecs):]...)
		return out
	}
	if rayspec.AutoscalingEnabled(&want) {
		prev := map[string]rayv1.WorkerGroupSpec{}
		for _, wg := range current.WorkerGroupSpecs {
			prev[wg.GroupName] = wg
		}
		for i, wg := range want.WorkerGroupSpecs {
			if p, ok := prev[wg.GroupName]; ok {
				want.WorkerGroupSpecs[i].Replicas = p.Replicas
				want.WorkerGroupSpecs[i].ScaleStrategy = p.ScaleStrategy
			}
		}
	}
	return want
}

// deletionDelaySeconds is rayClusterDeletionDelaySeconds with its default.
func deletionDelaySeconds(spec *rayv1.RayServiceSpec) int32 {
	return max(ptr.Deref(spec.RayClusterDeletionDelaySeconds, int32(defaultDeletionDelay.Seconds())), 0)
}
