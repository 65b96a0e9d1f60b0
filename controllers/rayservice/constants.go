package rayservice

import (
	"time"

	"github.com/raygate/raygate/internal/rayspec"
)

const (
	// ServeConfigKey holds, on a RayService's RayCluster, the serve config (JSON, without
	// target_capacity) its dashboard last accepted. During an incremental upgrade the active
	// cluster's target capacity is changed by resubmitting exactly this config, so an operator
	// restart can never push the new config to the active cluster by accident.
	ServeConfigKey = "raygate.ray.io/serve-config"

	// rayServiceKind is the value of ray.io/originated-from-crd on our RayClusters.
	rayServiceKind = "RayService"

	// defaultDeletionDelay is rayClusterDeletionDelaySeconds' default.
	defaultDeletionDelay = 60 * time.Second

	// servePortName is the container and Service port name of Ray Serve's HTTP proxy.
	servePortName = rayspec.ServePortName

	// gatewayListenerName and gatewayListenerPort are the Gateway's one HTTP listener.
	gatewayListenerName = "http"
	gatewayListenerPort = 80
)

// raygate-only condition reasons (KubeRay's are in apis/ray/v1).
const (
	// ReasonGatewayAPIUnavailable: the incremental strategy needs the Gateway API CRDs.
	ReasonGatewayAPIUnavailable = "GatewayAPIUnavailable"
)

// Event reasons.
const (
	EventCreatedCluster        = "CreatedRayCluster"
	EventUpdatedCluster        = "UpdatedRayCluster"
	EventDeletedCluster        = "DeletedRayCluster"
	EventFailedCluster         = "FailedToReconcileRayCluster"
	EventSubmittedServeConfig  = "SubmittedServeConfig"
	EventFailedServeConfig     = "FailedToSubmitServeConfig"
	EventTargetCapacity        = "UpdatedTargetCapacity"
	EventTrafficShifted        = "ShiftedTraffic"
	EventPromoted              = "PromotedPendingCluster"
	EventRollback              = "RollingBack"
	EventUpgradeStarted        = "UpgradeStarted"
	EventValidationFailed      = "ValidationFailed"
	EventGatewayAPIUnavailable = "GatewayAPIUnavailable"
	EventPendingUnhealthy      = "PendingApplicationsUnhealthy"
	EventFailedService         = "FailedToReconcileService"
	EventFailedGateway         = "FailedToReconcileGateway"
)
