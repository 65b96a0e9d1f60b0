// Package features defines raygate's feature gates. They are registered on
// k8s.io/apiserver's DefaultMutableFeatureGate, so `--feature-gates=Name=true` on the
// manager sets them, and the webhooks and controllers read the same state.
package features

import (
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/component-base/featuregate"
)

const (
	// RayClusterStatusConditions computes the RayCluster conditions (HeadPodReady,
	// RayClusterProvisioned, RayClusterSuspending, RayClusterSuspended, ReplicaFailure)
	// and drives suspend through them.
	RayClusterStatusConditions featuregate.Feature = "RayClusterStatusConditions"

	// RayServiceIncrementalUpgrade allows upgradeStrategy.type
	// NewClusterWithIncrementalUpgrade: capacity and traffic move to the new cluster in
	// steps through a Gateway API HTTPRoute.
	RayServiceIncrementalUpgrade featuregate.Feature = "RayServiceIncrementalUpgrade"

	// RayMultiHostIndexing labels multi-host worker pods with replica and host indices and
	// manages each multi-host replica as one unit.
	RayMultiHostIndexing featuregate.Feature = "RayMultiHostIndexing"

	// RayClusterHistoryServer allows spec.historyServerOptions: the history server collector
	// sidecar in every Ray pod. Alpha and off, as in KubeRay.
	RayClusterHistoryServer featuregate.Feature = "RayClusterHistoryServer"
	// RayClusterNetworkPolicy allows spec.networkPolicy: raygate-owned NetworkPolicies that
	// isolate a cluster's pods (Alpha and off, as in KubeRay).
	RayClusterNetworkPolicy featuregate.Feature = "RayClusterNetworkPolicy"
	// GCSFaultToleranceEmbeddedStorage allows gcsFaultToleranceOptions.backend rocksdb: the
	// GCS keeps its state in RocksDB on a PersistentVolumeClaim of the head (Alpha and off,
	// as in KubeRay; Ray's backend is alpha too).
	GCSFaultToleranceEmbeddedStorage featuregate.Feature = "GCSFaultToleranceEmbeddedStorage"
	// RayClusterMTLS allows spec.tlsOptions: mutual TLS between a cluster's Ray processes,
	// with certificates from cert-manager (Alpha and off, as in KubeRay).
	RayClusterMTLS featuregate.Feature = "RayClusterMTLS"
	// RayJobDeletionPolicy allows a RayJob's spec.deletionStrategy: what is deleted, and
	// when, once the job is finished (Beta and on, as in KubeRay).
	RayJobDeletionPolicy featuregate.Feature = "RayJobDeletionPolicy"
	// SidecarSubmitterRestart restarts a SidecarMode submitter container that fails (up to
	// spec.submitterConfig.backoffLimit times, default 2) instead of failing the RayJob; it
	// needs Kubernetes 1.35 (per-container restart policies) and Ray 2.54.0 (Alpha and off,
	// as in KubeRay).
	SidecarSubmitterRestart featuregate.Feature = "SidecarSubmitterRestart"
	// RayCronJob runs the RayCronJob controller, which creates RayJobs on a cron schedule
	// (Alpha and off, as in KubeRay). Off, admission refuses new RayCronJobs.
	RayCronJob featuregate.Feature = "RayCronJob"
)

// Specs are the defaults and maturity of every gate.
var Specs = map[featuregate.Feature]featuregate.FeatureSpec{
	RayClusterStatusConditions:       {Default: true, PreRelease: featuregate.Beta},
	RayServiceIncrementalUpgrade:     {Default: true, PreRelease: featuregate.Beta},
	RayMultiHostIndexing:             {Default: true, PreRelease: featuregate.Beta},
	RayClusterHistoryServer:          {Default: false, PreRelease: featuregate.Alpha},
	RayClusterNetworkPolicy:          {Default: false, PreRelease: featuregate.Alpha},
	GCSFaultToleranceEmbeddedStorage: {Default: false, PreRelease: featuregate.Alpha},
	RayClusterMTLS:                   {Default: false, PreRelease: featuregate.Alpha},
	RayJobDeletionPolicy:             {Default: true, PreRelease: featuregate.Beta},
	SidecarSubmitterRestart:          {Default: false, PreRelease: featuregate.Alpha},
	RayCronJob:                       {Default: false, PreRelease: featuregate.Alpha},
}

func init() {
	utilruntime.Must(utilfeature.DefaultMutableFeatureGate.Add(Specs))
}

// Enabled reports whether a gate is on in the process-wide gate.
func Enabled(f featuregate.Feature) bool {
	return utilfeature.DefaultFeatureGate.Enabled(f)
}

// Gates is a read-only view of gate state. Pure validation and defaulting code takes one
// as input instead of reading the global, so tests can pass any combination.
type Gates interface {
	Enabled(featuregate.Feature) bool
}

// Default returns the process-wide gate state.
func Default() Gates { return utilfeature.DefaultFeatureGate }

// EnableFlag returns the command-line flag that turns a gate on, for error messages.
func EnableFlag(f featuregate.Feature) string {
	return "--feature-gates=" + string(f) + "=true"
}

// Feature converts a gate name to its type (for flags and tests).
func Feature(name string) featuregate.Feature { return featuregate.Feature(name) }
