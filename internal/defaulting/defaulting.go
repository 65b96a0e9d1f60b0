// Package defaulting sets the defaults of RayCluster and RayService objects. The mutating
// webhook and both controllers call it.
//
// Every function is idempotent (Default(Default(x)) == Default(x)) and only fills values
// that are unset, so defaulting an object that is already stored changes nothing. Spec
// hashes are taken over the defaulted spec: a field left unset and the same field given its
// default value explicitly hash the same, so adding a default never restarts a cluster.
package defaulting

import (
	"math"

	"k8s.io/utils/ptr"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
)

// Default values, exported so validation, docs and tests name the same numbers.
const (
	// UpgradeType is the RayService upgrade strategy when none is given.
	UpgradeType = rayv1.NewCluster
	// MaxSurgePercent is clusterUpgradeOptions.maxSurgePercent when none is given.
	MaxSurgePercent int32 = 100
	// RayClusterDeletionDelaySeconds is how long an old RayService cluster is kept.
	RayClusterDeletionDelaySeconds int32 = 60
	// NumOfHosts is the number of pods per worker replica.
	NumOfHosts int32 = 1
	// MinReplicas and MaxReplicas bound a worker group's replicas.
	MinReplicas int32 = 0
	MaxReplicas int32 = math.MaxInt32
)

// RayCluster defaults a RayCluster in place.
func RayCluster(rc *rayv1.RayCluster) {
	if rc == nil {
		return
	}
	RayClusterSpec(&rc.Spec)
}

// RayClusterSpec defaults a cluster spec in place (also the rayClusterConfig of a RayService).
func RayClusterSpec(spec *rayv1.RayClusterSpec) {
	if spec == nil {
		return
	}
	if spec.HeadGroupSpec.RayStartParams == nil {
		spec.HeadGroupSpec.RayStartParams = map[string]string{}
	}
	for i := range spec.WorkerGroupSpecs {
		workerGroup(&spec.WorkerGroupSpecs[i])
	}
}

func workerGroup(g *rayv1.WorkerGroupSpec) {
	// numOfHosts is a plain int32 with omitempty: 0 is "unset".
	if g.NumOfHosts == 0 {
		g.NumOfHosts = NumOfHosts
	}
	if g.MinReplicas == nil {
		g.MinReplicas = ptr.To(MinReplicas)
	}
	if g.MaxReplicas == nil {
		g.MaxReplicas = ptr.To(MaxReplicas)
	}
	if g.Replicas == nil {
		// A negative minReplicas is reported by validation at minReplicas; copying it here
		// would report the same mistake a second time at a path the user never wrote.
		g.Replicas = ptr.To(max(*g.MinReplicas, 0))
	}
	if g.RayStartParams == nil {
		g.RayStartParams = map[string]string{}
	}
}

// RayService defaults a RayService in place.
func RayService(svc *rayv1.RayService) {
	if svc == nil {
		return
	}
	RayServiceSpec(&svc.Spec)
}

// RayServiceSpec defaults a RayService spec in place, including its rayClusterConfig.
func RayServiceSpec(spec *rayv1.RayServiceSpec) {
	if spec == nil {
		return
	}
	RayServiceUpgradeStrategy(spec)
	if spec.RayClusterDeletionDelaySeconds == nil {
		spec.RayClusterDeletionDelaySeconds = ptr.To(RayClusterDeletionDelaySeconds)
	}
	RayClusterSpec(&spec.RayClusterSpec)
}

// RayServiceUpgradeStrategy defaults only spec.upgradeStrategy: the type, and with
// NewClusterWithIncrementalUpgrade the maxSurgePercent of options that are given (missing
// options stay missing so validation can say they are required).
func RayServiceUpgradeStrategy(spec *rayv1.RayServiceSpec) {
	if spec.UpgradeStrategy == nil {
		spec.UpgradeStrategy = &rayv1.RayServiceUpgradeStrategy{}
	}
	s := spec.UpgradeStrategy
	if s.Type == nil {
		s.Type = ptr.To(UpgradeType)
	}
	if *s.Type == rayv1.NewClusterWithIncrementalUpgrade && s.ClusterUpgradeOptions != nil && s.ClusterUpgradeOptions.MaxSurgePercent == nil {
		s.ClusterUpgradeOptions.MaxSurgePercent = ptr.To(MaxSurgePercent)
	}
}
