package v1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ServiceStatus is the deprecated one-word readiness of a RayService.
type ServiceStatus string

const (
	// Running means the RayService serves requests (same as the Ready condition).
	Running ServiceStatus = "Running"
	// NotRunning is the empty value: not ready.
	NotRunning ServiceStatus = ""
)

// RayServiceUpgradeType is how a RayService moves to a new cluster spec.
type RayServiceUpgradeType string

const (
	// NewClusterWithIncrementalUpgrade creates a new cluster and shifts capacity and traffic
	// to it in steps through a Gateway API HTTPRoute. Needs the RayServiceIncrementalUpgrade
	// feature gate.
	NewClusterWithIncrementalUpgrade RayServiceUpgradeType = "NewClusterWithIncrementalUpgrade"
	// NewCluster creates a new cluster, waits until its applications run, then switches all
	// traffic at once (blue/green).
	NewCluster RayServiceUpgradeType = "NewCluster"
	// None updates the serving cluster in place; no new cluster is created.
	None RayServiceUpgradeType = "None"
)

// Ray Serve application statuses as reported by the dashboard.
const (
	ApplicationStatusNotStarted   = "NOT_STARTED"
	ApplicationStatusDeploying    = "DEPLOYING"
	ApplicationStatusRunning      = "RUNNING"
	ApplicationStatusDeployFailed = "DEPLOY_FAILED"
	ApplicationStatusDeleting     = "DELETING"
	ApplicationStatusUnhealthy    = "UNHEALTHY"
)

// Ray Serve deployment statuses as reported by the dashboard.
const (
	DeploymentStatusUpdating  = "UPDATING"
	DeploymentStatusHealthy   = "HEALTHY"
	DeploymentStatusUnhealthy = "UNHEALTHY"
)

// ClusterUpgradeOptions paces a NewClusterWithIncrementalUpgrade upgrade.
type ClusterUpgradeOptions struct {
	// MaxSurgePercent is how much target capacity (percent of Serve replicas) the new
	// cluster gains per scaling step; total capacity never exceeds 100% + this. 1–100,
	// default 100.
	// +kubebuilder:default:=100
	// +optional
	MaxSurgePercent *int32 `json:"maxSurgePercent,omitempty"`
	// StepSizePercent is how much traffic moves to the new cluster every intervalSeconds.
	// 1–maxSurgePercent.
	StepSizePercent *int32 `json:"stepSizePercent"`
	// IntervalSeconds is the time between traffic steps. At least 1.
	IntervalSeconds *int32 `json:"intervalSeconds"`
	// GatewayClassName is the GatewayClass of the Gateway created for the RayService.
	GatewayClassName string `json:"gatewayClassName"`
}

// RayServiceUpgradeStrategy selects and tunes how a RayService upgrades.
type RayServiceUpgradeStrategy struct {
	// Type is NewCluster (default), NewClusterWithIncrementalUpgrade or None.
	// +optional
	Type *RayServiceUpgradeType `json:"type,omitempty"`
	// ClusterUpgradeOptions is required with NewClusterWithIncrementalUpgrade and
	// ignored otherwise.
	// +optional
	ClusterUpgradeOptions *ClusterUpgradeOptions `json:"clusterUpgradeOptions,omitempty"`
}

// RayServiceSpec is the desired Serve applications and the cluster that runs them.
type RayServiceSpec struct {
	// RayClusterDeletionDelaySeconds is how long an old cluster is kept after traffic left
	// it, so in-flight requests finish. Default 60.
	// +kubebuilder:validation:Minimum=0
	// +optional
	RayClusterDeletionDelaySeconds *int32 `json:"rayClusterDeletionDelaySeconds,omitempty"`
	// ServiceUnhealthySecondThreshold is deprecated and ignored.
	// +optional
	ServiceUnhealthySecondThreshold *int32 `json:"serviceUnhealthySecondThreshold,omitempty"`
	// DeploymentUnhealthySecondThreshold is deprecated and ignored.
	// +optional
	DeploymentUnhealthySecondThreshold *int32 `json:"deploymentUnhealthySecondThreshold,omitempty"`
	// ServeService overrides fields of the generated `<name>-serve-svc` Service.
	// +optional
	ServeService *corev1.Service `json:"serveService,omitempty"`
	// UpgradeStrategy selects how changes to rayClusterConfig are rolled out.
	// +optional
	UpgradeStrategy *RayServiceUpgradeStrategy `json:"upgradeStrategy,omitempty"`
	// ServeConfigV2 is the Ray Serve config (YAML) with the applications to run. At most
	// 262144 characters (256 KiB); admission also bounds it in bytes and bounds what it
	// expands to.
	// +kubebuilder:validation:MaxLength=262144
	// +optional
	ServeConfigV2 string `json:"serveConfigV2,omitempty"`
	// RayClusterSpec is the spec of the RayClusters created for this service.
	RayClusterSpec RayClusterSpec `json:"rayClusterConfig"`
	// ExcludeHeadPodFromServeSvc keeps the head pod out of the serve Service.
	// +optional
	ExcludeHeadPodFromServeSvc bool `json:"excludeHeadPodFromServeSvc,omitempty"`
	// Suspend, when true, removes the service's RayClusters and Services while keeping the
	// object, e.g. while a queueing system such as Kueue holds the workload. Once started, a
	// suspension completes (conditions Suspending, then Suspended); false again starts the
	// service from scratch with a new RayCluster.
	// +optional
	Suspend bool `json:"suspend,omitempty"`
	// ManagedBy names the controller responsible for this service. Unset or
	// 'ray.io/kuberay-operator' means this operator; 'kueue.x-k8s.io/multikueue' hands the
	// service to Kueue's MultiKueue, and this operator leaves it alone. Immutable.
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="the managedBy field is immutable"
	// +kubebuilder:validation:XValidation:rule="self in ['ray.io/kuberay-operator', 'kueue.x-k8s.io/multikueue']",message="the managedBy field value must be either 'ray.io/kuberay-operator' or 'kueue.x-k8s.io/multikueue'"
	// +optional
	ManagedBy *string `json:"managedBy,omitempty"`
}

// RayServiceStatuses is the observed state of a RayService.
type RayServiceStatuses struct {
	// Conditions: Ready, UpgradeInProgress and RollbackInProgress.
	// +patchMergeKey=type
	// +patchStrategy=merge
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty" patchStrategy:"merge" patchMergeKey:"type"`
	// LastUpdateTime is when the status last changed.
	// +optional
	LastUpdateTime *metav1.Time `json:"lastUpdateTime,omitempty"`
	// ServiceStatus is "Running" when Ready is true. Deprecated in favour of conditions.
	// +optional
	ServiceStatus ServiceStatus `json:"serviceStatus,omitempty"`
	// ActiveServiceStatus describes the cluster that serves traffic.
	// +optional
	ActiveServiceStatus RayServiceStatus `json:"activeServiceStatus,omitempty"`
	// PendingServiceStatus describes the cluster being prepared by an upgrade.
	// +optional
	PendingServiceStatus RayServiceStatus `json:"pendingServiceStatus,omitempty"`
	// NumServeEndpoints is the number of ready pods behind the serve Service.
	// +optional
	NumServeEndpoints int32 `json:"numServeEndpoints,omitempty"`
	// ObservedGeneration is the generation this status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
}

// RayServiceStatus describes one of the RayService's clusters.
type RayServiceStatus struct {
	// Applications are the Serve applications on this cluster, by name.
	// +optional
	Applications map[string]AppStatus `json:"applicationStatuses,omitempty"`
	// TargetCapacity is the Serve target_capacity (percent of replicas) set on this cluster.
	// +optional
	TargetCapacity *int32 `json:"targetCapacity,omitempty"`
	// TrafficRoutedPercent is the HTTPRoute weight of this cluster.
	// +optional
	TrafficRoutedPercent *int32 `json:"trafficRoutedPercent,omitempty"`
	// LastTrafficMigratedTime is when TrafficRoutedPercent last changed.
	// +optional
	LastTrafficMigratedTime *metav1.Time `json:"lastTrafficMigratedTime,omitempty"`
	// RayClusterName is the RayCluster's name.
	// +optional
	RayClusterName string `json:"rayClusterName,omitempty"`
	// RayClusterStatus is a copy of the RayCluster's status.
	// +optional
	RayClusterStatus RayClusterStatus `json:"rayClusterStatus,omitempty"`
}

// AppStatus is the status of a Serve application.
type AppStatus struct {
	// Deployments are the application's deployments, by name.
	// +optional
	Deployments map[string]ServeDeploymentStatus `json:"serveDeploymentStatuses,omitempty"`
	// Status is NOT_STARTED, DEPLOYING, RUNNING, DEPLOY_FAILED, DELETING or UNHEALTHY.
	// +optional
	Status string `json:"status,omitempty"`
	// Message from Ray Serve.
	// +optional
	Message string `json:"message,omitempty"`
}

// ServeDeploymentStatus is the status of a Serve deployment.
type ServeDeploymentStatus struct {
	// Status is UPDATING, HEALTHY or UNHEALTHY.
	// +optional
	Status string `json:"status,omitempty"`
	// Message from Ray Serve.
	// +optional
	Message string `json:"message,omitempty"`
}

// RayService serves Ray Serve applications from a RayCluster and upgrades them without downtime.
// +kubebuilder:object:root=true
// +kubebuilder:resource:categories=all
// +kubebuilder:subresource:status
// +kubebuilder:storageversion
// +kubebuilder:printcolumn:name="Strategy",type=string,JSONPath=".spec.upgradeStrategy.type"
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=".status.conditions[?(@.type==\"Ready\")].status"
// +kubebuilder:printcolumn:name="Upgrading",type=string,JSONPath=".status.conditions[?(@.type==\"UpgradeInProgress\")].status"
// +kubebuilder:printcolumn:name="Pending Traffic",type=integer,JSONPath=".status.pendingServiceStatus.trafficRoutedPercent"
// +kubebuilder:printcolumn:name="Pending Capacity",type=integer,JSONPath=".status.pendingServiceStatus.targetCapacity"
// +kubebuilder:printcolumn:name="Endpoints",type=integer,JSONPath=".status.numServeEndpoints"
// +kubebuilder:printcolumn:name="Active Cluster",type=string,JSONPath=".status.activeServiceStatus.rayClusterName",priority=1
// +kubebuilder:printcolumn:name="Pending Cluster",type=string,JSONPath=".status.pendingServiceStatus.rayClusterName",priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=".metadata.creationTimestamp"
type RayService struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	// Spec is the desired service.
	Spec RayServiceSpec `json:"spec,omitempty"`
	// Status is the observed service.
	// +optional
	Status RayServiceStatuses `json:"status,omitempty"`
}

// RayServiceList is a list of RayServices.
// +kubebuilder:object:root=true
type RayServiceList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items are the RayServices.
	Items []RayService `json:"items"`
}
