package v1

// RayClusterConditionType is a condition type of a RayCluster.
type RayClusterConditionType string

const (
	// RayClusterProvisioned turns true once every pod was ready at the same time, and stays.
	RayClusterProvisioned RayClusterConditionType = "RayClusterProvisioned"
	// HeadPodReady says whether the head pod is ready.
	HeadPodReady RayClusterConditionType = "HeadPodReady"
	// RayClusterReplicaFailure is present only while creating or deleting a pod fails.
	RayClusterReplicaFailure RayClusterConditionType = "ReplicaFailure"
	// RayClusterSuspending is true while pods are being deleted for spec.suspend.
	RayClusterSuspending RayClusterConditionType = "RayClusterSuspending"
	// RayClusterSuspended is true once every pod was deleted for spec.suspend.
	RayClusterSuspended RayClusterConditionType = "RayClusterSuspended"
	// OwnershipConflict (raygate-only) is present while an object raygate needs for the
	// cluster exists under the name it would use but is not controlled by the cluster:
	// raygate leaves such an object untouched.
	OwnershipConflict RayClusterConditionType = "OwnershipConflict"
)

// RayCluster condition reasons.
const (
	AllPodRunningAndReadyFirstTime = "AllPodRunningAndReadyFirstTime"
	RayClusterPodsProvisioning     = "RayClusterPodsProvisioning"
	HeadPodNotFound                = "HeadPodNotFound"
	HeadPodRunningAndReady         = "HeadPodRunningAndReady"
	// UnknownReason is used when no better reason is known.
	UnknownReason = "Unknown"

	// ReplicaFailure reasons.
	FailedDeleteAllPods   = "FailedDeleteAllPods"
	FailedDeleteHeadPod   = "FailedDeleteHeadPod"
	FailedCreateHeadPod   = "FailedCreateHeadPod"
	FailedDeleteWorkerPod = "FailedDeleteWorkerPod"
	FailedCreateWorkerPod = "FailedCreateWorkerPod"
	// MultipleHeadPods: more than one head pod exists; raygate never picks one to delete.
	MultipleHeadPods = "MultipleHeadPods"

	// ForeignObject is the OwnershipConflict reason: an object with the wanted name belongs
	// to someone else.
	ForeignObject = "ForeignObject"

	// ValidationFailed: the spec breaks a rule the admission webhook enforces (it was stored
	// while the webhook was off or bypassed). Nothing is created or deleted for it.
	ValidationFailed = "ValidationFailed"
)

// RayServiceConditionType is a condition type of a RayService.
type RayServiceConditionType string

const (
	// RayServiceReady: requests can be served (at least one serve endpoint).
	RayServiceReady RayServiceConditionType = "Ready"
	// UpgradeInProgress: a pending cluster exists next to the active one.
	UpgradeInProgress RayServiceConditionType = "UpgradeInProgress"
	// RollbackInProgress: the spec went back to the active cluster's during an upgrade and
	// traffic and capacity are moving back to it.
	RollbackInProgress RayServiceConditionType = "RollbackInProgress"
	// RayServiceOwnershipConflict (raygate-only) is present while an object raygate needs for
	// the RayService (a Service, the Gateway, the HTTPRoute, a cluster's serve config
	// ConfigMap) exists under the name it would use but is not controlled by the RayService
	// (or its cluster): raygate leaves it untouched and the upgrade does not move.
	RayServiceOwnershipConflict RayServiceConditionType = "OwnershipConflict"
	// UpgradeStrategyFallback (raygate-only) is present while the spec asks for a strategy
	// whose feature gate is off (NewClusterWithIncrementalUpgrade without
	// RayServiceIncrementalUpgrade): the RayService keeps serving and upgrades with NewCluster.
	UpgradeStrategyFallback RayServiceConditionType = "UpgradeStrategyFallback"
	// UpgradeAction (raygate-only) is present while a raygate.ray.io/upgrade-action applies:
	// True with reason UpgradePaused, UpgradeAborting, UpgradeAborted or UpgradePromoting,
	// False with UpgradeResumed. It is stored before the action is carried out.
	UpgradeAction RayServiceConditionType = "UpgradeAction"
	// RayServiceSuspending: spec.suspend asked for the RayService's clusters and Services to
	// go, and they are being deleted. Once True it stays True until they are all gone, even
	// if spec.suspend turns false meanwhile.
	RayServiceSuspending RayServiceConditionType = "Suspending"
	// RayServiceSuspended: every cluster and Service of the RayService was deleted for
	// spec.suspend.
	RayServiceSuspended RayServiceConditionType = "Suspended"
)

// RayService condition reasons.
const (
	RayServiceInitializing         = "Initializing"
	RayServiceInitializingTimeout  = "InitializingTimeout"
	ZeroServeEndpoints             = "ZeroServeEndpoints"
	NonZeroServeEndpoints          = "NonZeroServeEndpoints"
	BothActivePendingClustersExist = "BothActivePendingClustersExist"
	NoPendingCluster               = "NoPendingCluster"
	NoActiveCluster                = "NoActiveCluster"
	// PendingApplicationsUnhealthy: the pending cluster's applications are not all RUNNING,
	// so no traffic moves to it.
	PendingApplicationsUnhealthy = "PendingApplicationsUnhealthy"
	// DesiredClusterSpecChanged is KubeRay's reason for RollbackInProgress=True: the spec went
	// back to the active cluster's during an incremental upgrade. Use it for that condition so
	// tools written for KubeRay recognise the rollback.
	DesiredClusterSpecChanged = "DesiredClusterSpecChanged"
	// RollingBack: traffic and capacity are moving back to the active cluster. raygate-only;
	// prefer DesiredClusterSpecChanged as the RollbackInProgress reason.
	RollingBack = "RollingBack"
	// NoRollback: the spec does not ask to go back.
	NoRollback = "NoRollback"
	// SuspendInProgress: the RayService's clusters and Services are being deleted.
	SuspendInProgress = "SuspendInProgress"
	// SuspendComplete: every cluster and Service of the RayService is gone.
	SuspendComplete = "SuspendComplete"
	// RayServiceResumed: spec.suspend turned false after a suspension; the RayService
	// starts again from scratch.
	RayServiceResumed = "RayServiceResumed"
)

// EventReason is the reason of an event KubeRay emits about a RayCluster; raygate keeps the
// same values so event-based alerts written for KubeRay keep matching.
type EventReason string

const (
	// RayConfigError: the cluster's configuration cannot be turned into pods.
	RayConfigError EventReason = "RayConfigError"
	// PodReconciliationError: creating or deleting the cluster's pods failed.
	PodReconciliationError EventReason = "PodReconciliationError"
)

// Reasons of the raygate-only UpgradeAction condition.
const (
	UpgradePaused    = "UpgradePaused"
	UpgradeResumed   = "UpgradeResumed"
	UpgradeAborting  = "UpgradeAborting"
	UpgradePromoting = "UpgradePromoting"
	UpgradeAborted   = "UpgradeAborted"
)
