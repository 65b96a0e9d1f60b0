package validation

import (
	"fmt"
	"math"

	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/rayspec"
)

// Default pod bounds (manager flags --max-pods-per-group and --max-pods-per-cluster).
// Kubernetes is tested up to 5,000 nodes and Ray's clusters up to a few thousand nodes, and
// a Ray pod usually fills a node (GPU and TPU hosts always do), so a group of more than
// 5,000 pods, or a cluster of more than 10,000, is a mistake rather than a workload: a TPU
// v6e-256 slice is 64 hosts, so a group holds 78 of them.
const (
	DefaultMaxPodsPerGroup   int32 = 5000
	DefaultMaxPodsPerCluster int32 = 10000
)

// Limits bound the pods one cluster may ask for, so that no tenant's object can make the
// operator create, track or plan for an unbounded number of pods.
type Limits struct {
	// MaxPodsPerGroup bounds replicas × numOfHosts and minReplicas × numOfHosts of each
	// worker group; 0 means DefaultMaxPodsPerGroup.
	MaxPodsPerGroup int32
	// MaxPodsPerCluster bounds the head plus max(replicas, minReplicas) × numOfHosts of every
	// worker group; 0 means DefaultMaxPodsPerCluster.
	MaxPodsPerCluster int32
}

// DefaultLimits are the limits when the manager flags are not given.
func DefaultLimits() Limits {
	return Limits{MaxPodsPerGroup: DefaultMaxPodsPerGroup, MaxPodsPerCluster: DefaultMaxPodsPerCluster}
}

func (l Limits) orDefault() Limits {
	if l.MaxPodsPerGroup <= 0 {
		l.MaxPodsPerGroup = DefaultMaxPodsPerGroup
	}
	if l.MaxPodsPerCluster <= 0 {
		l.MaxPodsPerCluster = DefaultMaxPodsPerCluster
	}
	return l
}

// pods is count × numOfHosts (at least 1 host; a negative count is 0). Both factors fit in
// an int32, so the product fits in an int64.
func pods(count *int32, numOfHosts int32) int64 {
	return int64(max(ptr.Deref(count, 0), 0)) * int64(max(numOfHosts, 1))
}

// requestedPods is what a group asks for: replicas × numOfHosts, at least
// minReplicas × numOfHosts (the controller clamps replicas up to minReplicas).
func requestedPods(g *rayv1.WorkerGroupSpec) int64 {
	return max(pods(g.Replicas, g.NumOfHosts), pods(g.MinReplicas, g.NumOfHosts))
}

// ClusterPods is the head plus every worker group's requested pods, saturating at the
// largest int64 instead of overflowing.
func ClusterPods(spec *rayv1.RayClusterSpec) int64 {
	total := int64(1)
	for i := range spec.WorkerGroupSpecs {
		total = satAdd(total, requestedPods(&spec.WorkerGroupSpecs[i]))
	}
	return total
}

// podBounds checks the Limits. On update (oldSpec set) a count over its bound counts only
// if it grew: an object stored before the bound was lowered can still be relabelled and
// scaled down, but not up. The errors are decided here, not by the path ratchet.
func (c *check) podBounds(oldSpec, spec *rayv1.RayClusterSpec, path *field.Path) (field.ErrorList, []string) {
	var errs field.ErrorList
	var warnings []string
	perGroup, perCluster := int64(c.limits.MaxPodsPerGroup), int64(c.limits.MaxPodsPerCluster)
	for i := range spec.WorkerGroupSpecs {
		g := &spec.WorkerGroupSpecs[i]
		gPath := func() *field.Path { return path.Child("workerGroupSpecs").Index(i) } // only for an error or a warning
		old := storedGroup(oldSpec, i, g.GroupName)
		for _, f := range [...]struct {
			name       string
			count, old *int32
		}{
			{"replicas", g.Replicas, old.Replicas},
			{"minReplicas", g.MinReplicas, old.MinReplicas},
		} {
			n := pods(f.count, g.NumOfHosts)
			if n > perGroup && (oldSpec == nil || n > pods(f.old, old.NumOfHosts)) {
				errs = append(errs, c.decide(field.Invalid(gPath().Child(f.name), *f.count, fmt.Sprintf(
					"with numOfHosts %d this is %d pods; a worker group may have at most %d pods (the manager's --max-pods-per-group)",
					max(g.NumOfHosts, 1), n, perGroup)))...)
			}
		}
		if maxR := ptr.Deref(g.MaxReplicas, math.MaxInt32); maxR != math.MaxInt32 && pods(&maxR, g.NumOfHosts) > perGroup && c.admission() {
			warnings = append(warnings, fmt.Sprintf(WarnMaxReplicasOverLimit, gPath().Child("maxReplicas"), maxR,
				pods(&maxR, g.NumOfHosts), perGroup, perGroup/int64(max(g.NumOfHosts, 1))))
		}
	}
	if n := ClusterPods(spec); n > perCluster && (oldSpec == nil || n > ClusterPods(oldSpec)) {
		errs = append(errs, c.decide(&field.Error{Type: field.ErrorTypeTooMany, Field: path.Child("workerGroupSpecs").String(), BadValue: omit,
			Detail: fmt.Sprintf("the cluster would have %d pods (the head plus max(replicas, minReplicas) × numOfHosts of each worker group); "+
				"a cluster may have at most %d pods (the manager's --max-pods-per-cluster)", n, perCluster)})...)
	}
	return errs, warnings
}

// storedGroup is the stored version of the worker group at index i named name: the stored
// group at the same index if it has that name, else the first of that name, else an empty
// group (no pods), which is shared and only read.
func storedGroup(spec *rayv1.RayClusterSpec, i int, name string) *rayv1.WorkerGroupSpec {
	if spec == nil {
		return &noStoredGroup
	}
	if i < len(spec.WorkerGroupSpecs) && spec.WorkerGroupSpecs[i].GroupName == name {
		return &spec.WorkerGroupSpecs[i]
	}
	for j := range spec.WorkerGroupSpecs {
		if spec.WorkerGroupSpecs[j].GroupName == name {
			return &spec.WorkerGroupSpecs[j]
		}
	}
	return &noStoredGroup
}

var noStoredGroup rayv1.WorkerGroupSpec

// upgradeSurgeWarnings: NewCluster and incremental upgrades run the old and the new cluster
// side by side, so a RayService briefly has up to twice its cluster's pods.
func (c *check) upgradeSurgeWarnings(svc *rayv1.RayService) []string {
	if !c.admission() {
		return nil
	}
	t := *effectiveStrategy(&svc.Spec).Type
	if t != rayv1.NewCluster && t != rayv1.NewClusterWithIncrementalUpgrade {
		return nil
	}
	n, limit := ClusterPods(&svc.Spec.RayClusterSpec), int64(c.limits.MaxPodsPerCluster)
	if n > limit || satAdd(n, n) <= limit {
		return nil // over the bound is an error already
	}
	return []string{fmt.Sprintf(WarnUpgradeSurgeOverLimit, upgradeTypePath, t, satAdd(n, n), limit)}
}

// CapPods lowers, in place, the replicas and minReplicas of a (defaulted) cluster spec so it
// asks for at most the Limits: each group at most MaxPodsPerGroup pods, and the head plus
// the groups, in order, at most MaxPodsPerCluster. Admission refuses such specs; this is for
// the controllers, which must never create beyond the bounds for an object stored before a
// bound was lowered or while the webhook was off. It says what it lowered, one line per
// group.
func CapPods(spec *rayv1.RayClusterSpec, l Limits) []string {
	l = l.orDefault()
	var notes []string
	budget := int64(l.MaxPodsPerCluster) - 1 // the head
	for i := range spec.WorkerGroupSpecs {
		g := &spec.WorkerGroupSpecs[i]
		hosts := int64(max(g.NumOfHosts, 1))
		allowed := min(int64(l.MaxPodsPerGroup), max(budget, 0)) / hosts
		capped := false
		for _, count := range []*int32{g.Replicas, g.MinReplicas} {
			if count != nil && int64(*count) > allowed {
				*count = rayspec.SaturateInt32(allowed)
				capped = true
			}
		}
		if capped {
			notes = append(notes, fmt.Sprintf("worker group %s is capped at %d replicas (%d pods): the manager's --max-pods-per-group is %d and --max-pods-per-cluster %d",
				g.GroupName, allowed, allowed*hosts, l.MaxPodsPerGroup, l.MaxPodsPerCluster))
		}
		budget -= requestedPods(g)
	}
	return notes
}
