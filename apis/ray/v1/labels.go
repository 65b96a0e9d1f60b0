package v1

// Label keys set on the objects raygate creates. They are KubeRay's keys, so tools written
// for KubeRay (dashboards, kubectl selectors, the Ray autoscaler) keep working.
const (
	// ClusterLabelKey names the RayCluster a pod or service belongs to.
	ClusterLabelKey = "ray.io/cluster"
	// NodeTypeLabelKey is "head" or "worker".
	NodeTypeLabelKey = "ray.io/node-type"
	// NodeGroupLabelKey is the worker group name, or "headgroup" on the head.
	NodeGroupLabelKey = "ray.io/group"
	// IsRayNodeLabelKey is "yes" on every Ray pod.
	IsRayNodeLabelKey = "ray.io/is-ray-node"
	// IdentifierLabelKey is "<cluster>-<node type>".
	IdentifierLabelKey = "ray.io/identifier"
	// ServeLabelKey is "true" on pods that should receive serve traffic.
	ServeLabelKey = "ray.io/serve"
	// OriginatedFromCRNameLabelKey and OriginatedFromCRDLabelKey name the custom resource an
	// object was created for (e.g. the RayService behind a RayCluster).
	OriginatedFromCRNameLabelKey = "ray.io/originated-from-cr-name"
	OriginatedFromCRDLabelKey    = "ray.io/originated-from-crd"
	// WorkerReplicaNameLabelKey groups the pods of one multi-host replica.
	WorkerReplicaNameLabelKey = "ray.io/worker-group-replica-name"
	// WorkerReplicaIndexLabelKey is a multi-host replica's index within its group.
	WorkerReplicaIndexLabelKey = "ray.io/worker-group-replica-index"
	// ReplicaHostIndexLabelKey is a pod's host index within its multi-host replica.
	ReplicaHostIndexLabelKey = "ray.io/replica-host-index"
	// HeadlessWorkerServiceLabelKey names the cluster on its headless worker Service.
	HeadlessWorkerServiceLabelKey = "ray.io/headless-worker-svc"

	// KubernetesApplicationNameLabelKey and KubernetesCreatedByLabelKey are the well-known
	// Kubernetes labels.
	KubernetesApplicationNameLabelKey = "app.kubernetes.io/name"
	KubernetesCreatedByLabelKey       = "app.kubernetes.io/created-by"

	// HeadGroupLabelValue is the ray.io/group value of the head pod.
	HeadGroupLabelValue = "headgroup"
	// ApplicationName is the app.kubernetes.io/name value (KubeRay's, for compatibility).
	ApplicationName = "kuberay"
	// ComponentName is the app.kubernetes.io/created-by value.
	ComponentName = "kuberay-operator"
)

// Annotation keys.
const (
	// HashWithoutReplicasAndWorkersToDeleteKey holds a hash of the cluster spec without
	// replica counts and workersToDelete. On a head pod it is raygate's hash of the defaulted
	// spec and drives Recreate. On a RayService's cluster it is KubeRay's hash of the stored
	// rayClusterConfig (so KubeRay, run on the same objects, sees the cluster as current);
	// clusters stamped by raygate before SpecHashKey existed hold raygate's hash there.
	HashWithoutReplicasAndWorkersToDeleteKey = "ray.io/hash-without-replicas-and-workers-to-delete"
	// NumWorkerGroupsKey is the number of worker groups when the hash was taken; a larger
	// number with the same groups means groups were only added.
	NumWorkerGroupsKey = "ray.io/num-worker-groups"
	// KubeRayVersionKey is the operator version that built an object; a pod built by another
	// version is re-stamped instead of recreated.
	KubeRayVersionKey = "ray.io/kuberay-version"
	// DisableProvisionedHeadRestartKey: "true" means a head pod lost after the cluster was
	// provisioned is not recreated.
	DisableProvisionedHeadRestartKey = "ray.io/disable-provisioned-head-restart"
	// OverwriteContainerCmdKey: "true" leaves the Ray container's command alone; the
	// generated command is still in KUBERAY_GEN_RAY_START_CMD.
	OverwriteContainerCmdKey = "ray.io/overwrite-container-cmd"
	// FTEnabledKey marks a cluster with GCS fault tolerance.
	FTEnabledKey = "ray.io/ft-enabled"
	// EnableServeServiceKey: "true" on a RayCluster that serves traffic directly.
	EnableServeServiceKey = "ray.io/enable-serve-service"

	// RaygateKeyPrefix starts every annotation and label key raygate keeps for itself.
	RaygateKeyPrefix = "raygate.ray.io/"

	// ServeConfigHashKey holds the hash of the serve config last accepted by a RayService
	// cluster's dashboard: on the RayCluster, so an operator restart never resubmits or
	// forgets a config. ServeConfigTargetCapacityKey held the target_capacity sent with it;
	// raygate no longer writes it (the dashboard reports what it runs) and removes it.
	ServeConfigHashKey           = "raygate.ray.io/serve-config-hash"
	ServeConfigTargetCapacityKey = "raygate.ray.io/serve-target-capacity"
	// SpecHashKey holds, on a RayService's cluster, raygate's hash of the defaulted
	// rayClusterConfig it runs (replica counts, tolerations and scheduling gates left out):
	// what the RayService decides "new cluster" on.
	SpecHashKey = "raygate.ray.io/spec-hash"
	// DeleteAfterKey holds the RFC 3339 time after which a RayService's old cluster may be
	// deleted; recorded once, so a restart neither forgets nor hurries the deletion.
	DeleteAfterKey = "raygate.ray.io/delete-after"

	// UpgradeActionKey, on a RayService, is a one-shot control of the upgrade in flight:
	// pause, resume, abort or promote. UpgradeTargetKey names the pending RayCluster the
	// action is meant for, so an action left on the object never applies to a later upgrade.
	UpgradeActionKey = "raygate.ray.io/upgrade-action"
	UpgradeTargetKey = "raygate.ray.io/upgrade-target"
	// AbortedSpecHashKey holds, on the active cluster, the spec hash of the upgrade that was
	// aborted: no new upgrade to that spec starts until the spec changes or resume is asked.
	// It is written before the abort is carried out, so a restart keeps the decision.
	AbortedSpecHashKey = "raygate.ray.io/aborted-spec-hash"
)

// Upgrade actions, the values of UpgradeActionKey.
const (
	UpgradeActionPause   = "pause"
	UpgradeActionResume  = "resume"
	UpgradeActionAbort   = "abort"
	UpgradeActionPromote = "promote"
)

// UpgradeActions are the values UpgradeActionKey accepts.
var UpgradeActions = []string{UpgradeActionPause, UpgradeActionResume, UpgradeActionAbort, UpgradeActionPromote}

// RayContainerIndex is the index of the Ray container in head and worker pods.
const RayContainerIndex = 0
