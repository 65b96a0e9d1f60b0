package v1

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// RayClusterSpec is the desired shape of a Ray cluster: one head group and any number of
// worker groups, each described by a pod template.
type RayClusterSpec struct {
	// UpgradeStrategy says what happens to running pods when the pod templates change.
	// +optional
	UpgradeStrategy *RayClusterUpgradeStrategy `json:"upgradeStrategy,omitempty"`
	// AuthOptions configures token authentication of the Ray cluster's endpoints: with mode
	// "token", every Ray process requires a token read from a Secret (generated per cluster,
	// or named in secretName).
	// +optional
	AuthOptions *AuthOptions `json:"authOptions,omitempty"`
	// Suspend deletes every pod of the cluster while keeping the object, so it can be
	// resumed later by setting it back to false.
	// +optional
	Suspend *bool `json:"suspend,omitempty"`
	// ManagedBy names the controller responsible for this cluster. Unset or
	// 'ray.io/kuberay-operator' means this operator; 'kueue.x-k8s.io/multikueue' hands the
	// cluster to Kueue. Immutable.
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="the managedBy field is immutable"
	// +kubebuilder:validation:XValidation:rule="self in ['ray.io/kuberay-operator', 'kueue.x-k8s.io/multikueue']",message="the managedBy field value must be either 'ray.io/kuberay-operator' or 'kueue.x-k8s.io/multikueue'"
	// +optional
	ManagedBy *string `json:"managedBy,omitempty"`
	// AutoscalerOptions tunes the Ray autoscaler sidecar added when enableInTreeAutoscaling is true.
	// +optional
	AutoscalerOptions *AutoscalerOptions `json:"autoscalerOptions,omitempty"`
	// HeadServiceAnnotations are added to the head Service.
	// +optional
	HeadServiceAnnotations map[string]string `json:"headServiceAnnotations,omitempty"`
	// EnableInTreeAutoscaling adds the Ray autoscaler as a sidecar of the head pod; it then
	// decides worker replicas and which workers to remove.
	// +optional
	EnableInTreeAutoscaling *bool `json:"enableInTreeAutoscaling,omitempty"`
	// GcsFaultToleranceOptions makes the GCS state survive a head pod restart by keeping it
	// in an external Redis.
	// +optional
	GcsFaultToleranceOptions *GcsFaultToleranceOptions `json:"gcsFaultToleranceOptions,omitempty"`
	// HistoryServerOptions adds the Ray history server collector sidecar to every Ray pod.
	// +optional
	HistoryServerOptions *HistoryServerOptions `json:"historyServerOptions,omitempty"`
	// NetworkPolicy isolates the cluster's pods with NetworkPolicies raygate creates and owns.
	// +optional
	NetworkPolicy *NetworkPolicyConfig `json:"networkPolicy,omitempty"`
	// TLSOptions enables mutual TLS between the cluster's Ray processes, with certificates
	// from cert-manager (feature gate RayClusterMTLS). Cannot be turned on or off on an
	// existing RayCluster.
	// +optional
	TLSOptions *TLSOptions `json:"tlsOptions,omitempty"`
	// HeadGroupSpec describes the head pod.
	HeadGroupSpec HeadGroupSpec `json:"headGroupSpec"`
	// RayVersion is the Ray version of the image, e.g. "2.52.0". It selects version-dependent
	// behaviour such as the default autoscaler version.
	// +optional
	RayVersion string `json:"rayVersion,omitempty"`
	// WorkerGroupSpecs describes the worker groups.
	// +optional
	WorkerGroupSpecs []WorkerGroupSpec `json:"workerGroupSpecs,omitempty"`
}

// RayClusterUpgradeType is how a RayCluster replaces pods when its templates change.
// +kubebuilder:validation:Enum=Recreate;None
type RayClusterUpgradeType string

const (
	// RayClusterRecreate deletes every pod when the spec changes, then creates new ones.
	RayClusterRecreate RayClusterUpgradeType = "Recreate"
	// RayClusterUpgradeNone leaves existing pods alone; only new pods get the new template.
	RayClusterUpgradeNone RayClusterUpgradeType = "None"
)

// RayClusterUpgradeStrategy selects how pods are replaced on a spec change.
type RayClusterUpgradeStrategy struct {
	// Type is Recreate or None. Not allowed on clusters owned by a RayService.
	// +optional
	Type *RayClusterUpgradeType `json:"type,omitempty"`
}

// HeadGroupSpec describes the head pod, which runs the GCS, the dashboard and, with
// autoscaling, the autoscaler.
type HeadGroupSpec struct {
	// Template is the head pod's template. The Ray container must be the first container.
	Template corev1.PodTemplateSpec `json:"template"`
	// HeadService overrides fields of the generated head Service.
	// +optional
	HeadService *corev1.Service `json:"headService,omitempty"`
	// EnableIngress creates the Ingress `<cluster>-head-ingress` to the dashboard port of the head Service.
	// +optional
	EnableIngress *bool `json:"enableIngress,omitempty"`
	// IngressOptions sets the host, path, path type and TLS of the dashboard Ingress.
	// +optional
	IngressOptions *IngressOptions `json:"ingressOptions,omitempty"`
	// Resources are Ray logical resources of the head node (e.g. {"CPU": "0"}). They override
	// the same resources given in rayStartParams; the pod's container resources are unchanged.
	// +optional
	Resources map[string]string `json:"resources,omitempty"`
	// Labels are Ray node labels of the head node; also added to the pod.
	// +optional
	Labels map[string]string `json:"labels,omitempty"`
	// RayStartParams are extra `ray start` flags without the leading dashes,
	// e.g. {"dashboard-host": "0.0.0.0", "num-cpus": "0"}.
	// +optional
	RayStartParams map[string]string `json:"rayStartParams"`
	// ServiceType is the type of the head Service (ClusterIP by default).
	// +optional
	ServiceType corev1.ServiceType `json:"serviceType,omitempty"`
}

// WorkerGroupSpec describes one group of identical worker pods.
type WorkerGroupSpec struct {
	// Suspend deletes every pod of this group. Not allowed with the autoscaler on.
	// +optional
	Suspend *bool `json:"suspend,omitempty"`
	// GroupName identifies the group; unique in the cluster and a DNS-1123 label.
	GroupName string `json:"groupName"`
	// Replicas is the desired number of replicas; the operator clamps it to
	// [minReplicas, maxReplicas], so the stored default of 0 means minReplicas.
	// Each replica is numOfHosts pods. The schema caps it at 100000 (with numOfHosts at most
	// 10000, replicas × numOfHosts always fits an int32); the operator's admission allows
	// far fewer pods per group (--max-pods-per-group).
	// +kubebuilder:default:=0
	// +kubebuilder:validation:Maximum=100000
	// +optional
	Replicas *int32 `json:"replicas,omitempty"`
	// MinReplicas is the lower bound for replicas. Defaults to 0; at most 100000.
	// +kubebuilder:default:=0
	// +kubebuilder:validation:Maximum=100000
	MinReplicas *int32 `json:"minReplicas"`
	// MaxReplicas is the upper bound for replicas. Defaults to 2147483647.
	// +kubebuilder:default:=2147483647
	MaxReplicas *int32 `json:"maxReplicas"`
	// IdleTimeoutSeconds is how long autoscaler v2 waits before removing an idle worker of
	// this group. Needs autoscaler v2.
	// +optional
	IdleTimeoutSeconds *int32 `json:"idleTimeoutSeconds,omitempty"`
	// Priority makes autoscaler v2 prefer this group for scale-up when several can serve a demand.
	// +kubebuilder:default:=0
	// +optional
	Priority *int32 `json:"priority,omitempty"`
	// Resources are Ray logical resources of this group's nodes (e.g. {"GPU": "1"}). They
	// override rayStartParams; the pod's container resources are unchanged.
	// +optional
	Resources map[string]string `json:"resources,omitempty"`
	// Labels are Ray node labels of this group's nodes; also added to the pods.
	// +optional
	Labels map[string]string `json:"labels,omitempty"`
	// RayStartParams are extra `ray start` flags without the leading dashes.
	// +optional
	RayStartParams map[string]string `json:"rayStartParams"`
	// Template is the worker pod's template. The Ray container must be the first container.
	Template corev1.PodTemplateSpec `json:"template"`
	// ScaleStrategy names specific workers to remove.
	// +optional
	ScaleStrategy ScaleStrategy `json:"scaleStrategy,omitempty"`
	// NumOfHosts is the number of pods per replica (multi-host groups, e.g. TPU slices).
	// Defaults to 1; at most 10000 (the largest TPU slices have a few thousand hosts).
	// +kubebuilder:default:=1
	// +kubebuilder:validation:Maximum=10000
	// +optional
	NumOfHosts int32 `json:"numOfHosts,omitempty"`
}

// ScaleStrategy names workers to remove; the autoscaler writes it, the operator deletes
// the pods and clears the list.
type ScaleStrategy struct {
	// WorkersToDelete are names of worker pods to delete.
	// +optional
	WorkersToDelete []string `json:"workersToDelete,omitempty"`
}

// AutoscalerOptions tunes the Ray autoscaler sidecar.
type AutoscalerOptions struct {
	// Resources of the autoscaler container (default 500m CPU, 512Mi memory).
	// +optional
	Resources *corev1.ResourceRequirements `json:"resources,omitempty"`
	// Image of the autoscaler container (defaults to the Ray container's image).
	// +optional
	Image *string `json:"image,omitempty"`
	// ImagePullPolicy of the autoscaler container.
	// +optional
	ImagePullPolicy *corev1.PullPolicy `json:"imagePullPolicy,omitempty"`
	// SecurityContext of the autoscaler container.
	// +optional
	SecurityContext *corev1.SecurityContext `json:"securityContext,omitempty"`
	// IdleTimeoutSeconds before the autoscaler removes an idle worker (default 60).
	// +optional
	IdleTimeoutSeconds *int32 `json:"idleTimeoutSeconds,omitempty"`
	// UpscalingMode is Conservative, Default or Aggressive.
	// +optional
	UpscalingMode *UpscalingMode `json:"upscalingMode,omitempty"`
	// Version is v1 or v2; unset means chosen by rayVersion (v2 from Ray 2.47.0).
	// +optional
	Version *AutoscalerVersion `json:"version,omitempty"`
	// Env of the autoscaler container.
	// +optional
	Env []corev1.EnvVar `json:"env,omitempty"`
	// EnvFrom of the autoscaler container.
	// +optional
	EnvFrom []corev1.EnvFromSource `json:"envFrom,omitempty"`
	// VolumeMounts of the autoscaler container.
	// +optional
	VolumeMounts []corev1.VolumeMount `json:"volumeMounts,omitempty"`
	// Command overrides the autoscaler container's command.
	// +optional
	Command []string `json:"command,omitempty"`
	// Args overrides the autoscaler container's args.
	// +optional
	Args []string `json:"args,omitempty"`
}

// UpscalingMode is how fast the autoscaler adds workers.
// +kubebuilder:validation:Enum=Default;Aggressive;Conservative
type UpscalingMode string

const (
	// UpscalingModeDefault adds as many workers as the pending demand needs at once.
	UpscalingModeDefault UpscalingMode = "Default"
	// UpscalingModeAggressive is another name for Default.
	UpscalingModeAggressive UpscalingMode = "Aggressive"
	// UpscalingModeConservative caps pending workers at the current cluster size.
	UpscalingModeConservative UpscalingMode = "Conservative"
)

// AutoscalerVersion is the Ray autoscaler generation.
// +kubebuilder:validation:Enum=v1;v2
type AutoscalerVersion string

const (
	// AutoscalerVersionV1 is the original Ray autoscaler.
	AutoscalerVersionV1 AutoscalerVersion = "v1"
	// AutoscalerVersionV2 is the autoscaler that also honours per-group idle timeouts and priorities.
	AutoscalerVersionV2 AutoscalerVersion = "v2"
)

// ClusterState is the overall state of a Ray cluster (kept for KubeRay compatibility;
// conditions say more).
type ClusterState string

const (
	// Ready: every pod is running and ready.
	Ready ClusterState = "ready"
	// Failed is deprecated and never set; kept for wire compatibility.
	Failed ClusterState = "failed"
	// Suspended: every pod was deleted because spec.suspend is true.
	Suspended ClusterState = "suspended"
)

// RayClusterStatus is the observed state of a RayCluster.
type RayClusterStatus struct {
	// State is "ready" once every pod has been running and ready, "suspended" while
	// suspended. Deprecated in favour of conditions.
	// +optional
	State ClusterState `json:"state,omitempty"`
	// DesiredCPU is the CPU requested by all desired pods.
	// +optional
	DesiredCPU resource.Quantity `json:"desiredCPU,omitempty"`
	// DesiredMemory is the memory requested by all desired pods.
	// +optional
	DesiredMemory resource.Quantity `json:"desiredMemory,omitempty"`
	// DesiredGPU is the GPUs requested by all desired pods.
	// +optional
	DesiredGPU resource.Quantity `json:"desiredGPU,omitempty"`
	// DesiredTPU is the TPUs requested by all desired pods.
	// +optional
	DesiredTPU resource.Quantity `json:"desiredTPU,omitempty"`
	// LastUpdateTime is when the status last changed.
	// +nullable
	LastUpdateTime *metav1.Time `json:"lastUpdateTime,omitempty"`
	// StateTransitionTimes is when the cluster last entered each state.
	// +optional
	StateTransitionTimes map[ClusterState]*metav1.Time `json:"stateTransitionTimes,omitempty"`
	// Endpoints maps head service port names to port numbers.
	// +optional
	Endpoints map[string]string `json:"endpoints,omitempty"`
	// Head is where the head pod and service can be reached.
	// +optional
	Head HeadInfo `json:"head,omitempty"`
	// Reason explains the current state, e.g. why the spec was rejected.
	// +optional
	Reason string `json:"reason,omitempty"`
	// Conditions: HeadPodReady, RayClusterProvisioned, RayClusterSuspending,
	// RayClusterSuspended and ReplicaFailure.
	// +patchMergeKey=type
	// +patchStrategy=merge
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty" patchStrategy:"merge" patchMergeKey:"type"`
	// ReadyWorkerReplicas is the number of ready worker pods.
	// +optional
	ReadyWorkerReplicas int32 `json:"readyWorkerReplicas,omitempty"`
	// AvailableWorkerReplicas is the number of running worker pods.
	// +optional
	AvailableWorkerReplicas int32 `json:"availableWorkerReplicas,omitempty"`
	// DesiredWorkerReplicas is the sum of replicas × numOfHosts over worker groups.
	// +optional
	DesiredWorkerReplicas int32 `json:"desiredWorkerReplicas,omitempty"`
	// MinWorkerReplicas is the sum of minReplicas × numOfHosts over worker groups.
	// +optional
	MinWorkerReplicas int32 `json:"minWorkerReplicas,omitempty"`
	// MaxWorkerReplicas is the sum of maxReplicas × numOfHosts over worker groups.
	// +optional
	MaxWorkerReplicas int32 `json:"maxWorkerReplicas,omitempty"`
	// ObservedGeneration is the generation this status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
}

// HeadInfo says where the head can be reached.
type HeadInfo struct {
	// PodIP of the head pod.
	// +optional
	PodIP string `json:"podIP,omitempty"`
	// ServiceIP of the head Service (the pod IP when the Service is headless).
	// +optional
	ServiceIP string `json:"serviceIP,omitempty"`
	// PodName of the head pod.
	// +optional
	PodName string `json:"podName,omitempty"`
	// ServiceName of the head Service.
	// +optional
	ServiceName string `json:"serviceName,omitempty"`
}

// RayNodeType is the role of a Ray pod.
type RayNodeType string

const (
	// HeadNode is the head pod (GCS, dashboard, autoscaler).
	HeadNode RayNodeType = "head"
	// WorkerNode is a pod of a worker group.
	WorkerNode RayNodeType = "worker"
	// RedisCleanupNode is the pod of a Redis cleanup Job (GCS fault tolerance).
	RedisCleanupNode RayNodeType = "redis-cleanup"
)

// RayCluster runs a Ray cluster: a head pod, worker groups, a head Service and status.
// +kubebuilder:object:root=true
// +kubebuilder:resource:categories=all
// +kubebuilder:subresource:status
// +kubebuilder:storageversion
// +kubebuilder:printcolumn:name="Desired Workers",type=integer,JSONPath=".status.desiredWorkerReplicas"
// +kubebuilder:printcolumn:name="Ready Workers",type=integer,JSONPath=".status.readyWorkerReplicas"
// +kubebuilder:printcolumn:name="CPUs",type=string,JSONPath=".status.desiredCPU"
// +kubebuilder:printcolumn:name="Memory",type=string,JSONPath=".status.desiredMemory"
// +kubebuilder:printcolumn:name="GPUs",type=string,JSONPath=".status.desiredGPU",priority=1
// +kubebuilder:printcolumn:name="Status",type=string,JSONPath=".status.state"
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=".status.reason",priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=".metadata.creationTimestamp"
// +kubebuilder:printcolumn:name="Head Pod IP",type=string,JSONPath=".status.head.podIP",priority=1
// +kubebuilder:printcolumn:name="Head Service IP",type=string,JSONPath=".status.head.serviceIP",priority=1
type RayCluster struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the desired cluster.
	Spec RayClusterSpec `json:"spec,omitempty"`
	// Status is the observed cluster.
	// +optional
	Status RayClusterStatus `json:"status,omitempty"`
}

// RayClusterList is a list of RayClusters.
// +kubebuilder:object:root=true
type RayClusterList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items are the RayClusters.
	Items []RayCluster `json:"items"`
}
