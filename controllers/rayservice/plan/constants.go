package plan

import "time"

const (
	// LegacyServeConfigKey held, on clusters made by raygate before serve configs moved to a
	// ConfigMap, the accepted serve config (JSON). It is still read, so an upgrade that was
	// in progress when raygate was updated keeps its active cluster's config, and removed
	// when the cluster records its next accepted config. A config near the size limit does
	// not fit in an annotation, so raygate no longer writes it.
	LegacyServeConfigKey = "raygate.ray.io/serve-config"

	// conflictRecheck is how often a RayService with an object it cannot manage looks again:
	// a foreign object is not cached (the cache holds objects raygate labels), so its removal
	// is noticed by looking.
	conflictRecheck = 30 * time.Second

	// rayServiceKind is the value of ray.io/originated-from-crd on our RayClusters.
	RayServiceKind = "RayService"

	// defaultDeletionDelay is rayClusterDeletionDelaySeconds' default.
	defaultDeletionDelay = 60 * time.Second

	// gatewayListenerName and gatewayListenerPort are the Gateway's one HTTP listener.
	gatewayListenerName = "http"
	gatewayListenerPort = 80
)

// raygate-only condition reasons (KubeRay's are in apis/ray/v1).
const (
	// ReasonGatewayAPIUnavailable: the incremental strategy needs the Gateway API CRDs.
	ReasonGatewayAPIUnavailable = "GatewayAPIUnavailable"
	// ReasonFeatureGateDisabled is the UpgradeStrategyFallback reason: the strategy's gate is
	// off, so the RayService upgrades with NewCluster.
	ReasonFeatureGateDisabled = "FeatureGateDisabled"
)

// Event reasons.
const (
	EventCreatedCluster        = "CreatedRayCluster"
	EventUpdatedCluster        = "UpdatedRayCluster"
	EventDeletedCluster        = "DeletedRayCluster"
	EventFailedCluster         = "FailedToReconcileRayCluster"
	EventSubmittedServeConfig  = "SubmittedServeConfig"
	EventFailedServeConfig     = "FailedToSubmitServeConfig"
	EventTrafficShifted        = "ShiftedTraffic"
	EventPromoted              = "PromotedPendingCluster"
	EventRollback              = "RollingBack"
	EventUpgradeStarted        = "UpgradeStarted"
	EventValidationFailed      = "ValidationFailed"
	EventGatewayAPIUnavailable = "GatewayAPIUnavailable"
	EventPendingUnhealthy      = "PendingApplicationsUnhealthy"
	EventFailedService         = "FailedToReconcileService"
	EventFailedGateway         = "FailedToReconcileGateway"
	EventOwnershipConflict     = "OwnershipConflict"
	EventStrategyFallback      = "UpgradeStrategyFallback"
	EventPodsRefused           = "RayClusterReplicaFailure"
	EventCappedAtPodLimits     = "CappedAtPodLimits"
	EventSpecNotApplied        = "ClusterSpecNotApplied"
	EventInitializingTimeout   = "RayServiceInitializingTimeout"
	EventSuspending            = "Suspending"
	EventSuspended             = "Suspended"
	EventResumed               = "Resumed"
	// KubeRay's reasons for the head pod's serve label.
	EventUpdatedHeadPodServeLabel = "UpdatedHeadPodServeLabel"
	EventFailedHeadPodServeLabel  = "FailedToUpdateHeadPodServeLabel"
)
