// Package rayspec holds the pure functions about a RayCluster spec that admission and both
// controllers must agree on: the spec hash that decides upgrades, desired worker counts, and
// the names of every object derived from a RayCluster or RayService.
package rayspec

import (
	"crypto/sha256"
	"encoding/base32"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"

	"k8s.io/utils/ptr"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
)

// HashWithoutReplicas hashes a cluster spec without the fields that change while a cluster
// runs (replicas, minReplicas, maxReplicas, workersToDelete) and without upgradeStrategy, so
// only a change to what the pods run gives a different hash. Callers pass the *defaulted*
// spec: a default added by a newer raygate must not look like a user change. It drives the
// RayCluster Recreate strategy; RayServices decide on SpecHash (clusters they stamped
// before SpecHash existed carry this hash).
//
// It runs on every RayCluster pass, so it copies only the groups' own fields, not what they
// point to (the pod templates): the fields left out are replaced on the copies, and nothing
// shared is changed.
func HashWithoutReplicas(spec rayv1.RayClusterSpec) (string, error) {
	spec.WorkerGroupSpecs = slices.Clone(spec.WorkerGroupSpecs)
	for i := range spec.WorkerGroupSpecs {
		g := &spec.WorkerGroupSpecs[i]
		g.Replicas, g.MinReplicas, g.MaxReplicas = nil, nil, nil
		g.ScaleStrategy.WorkersToDelete = nil
	}
	spec.UpgradeStrategy = nil
	return hashJSON(&spec)
}

func hashJSON(v any) (string, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return "", fmt.Errorf("hashing spec: %w", err)
	}
	sum := sha256.Sum256(b)
	return strings.ToLower(base32.HexEncoding.WithPadding(base32.NoPadding).EncodeToString(sum[:20])), nil
}

// WorkerGroupDesiredReplicas is the number of worker *replicas* a group should have:
// replicas clamped to [minReplicas, maxReplicas], 0 while the group is suspended.
func WorkerGroupDesiredReplicas(g rayv1.WorkerGroupSpec) int32 {
	if ptr.Deref(g.Suspend, false) {
		return 0
	}
	minR := ptr.Deref(g.MinReplicas, 0)
	maxR := ptr.Deref(g.MaxReplicas, math.MaxInt32)
	r := ptr.Deref(g.Replicas, minR)
	switch {
	case r < minR:
		r = minR
	case r > maxR:
		r = maxR
	}
	return r
}

// NumOfHosts is a group's pods per replica (at least 1).
func NumOfHosts(g rayv1.WorkerGroupSpec) int32 {
	return max(g.NumOfHosts, 1)
}

// WorkerGroupDesiredPods is the number of worker *pods* a group should have:
// desired replicas × numOfHosts, saturating instead of overflowing.
func WorkerGroupDesiredPods(g rayv1.WorkerGroupSpec) int32 {
	return mulSat(WorkerGroupDesiredReplicas(g), NumOfHosts(g))
}

func mulSat(a, b int32) int32 {
	return SaturateInt32(int64(a) * int64(b))
}

// SaturateInt32 clamps v into int32's range: counts that a tenant can make overflow
// (replicas × numOfHosts summed over groups) stay at the extreme instead of wrapping around.
func SaturateInt32(v int64) int32 {
	if v > math.MaxInt32 {
		return math.MaxInt32
	}
	if v < math.MinInt32 {
		return math.MinInt32
	}
	return int32(v)
}

// AutoscalingEnabled reports whether the Ray autoscaler runs in the head pod.
func AutoscalingEnabled(spec *rayv1.RayClusterSpec) bool {
	return ptr.Deref(spec.EnableInTreeAutoscaling, false)
}
