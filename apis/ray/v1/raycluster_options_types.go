package v1

import (
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Optional RayCluster features. Any raygate does not implement yet is documented as such
// on its field; the admission webhook rejects it when set.

// TLSOptions configures mutual TLS between the pods of a Ray cluster.
type TLSOptions struct {
	// Enabled turns mutual TLS on (an empty tlsOptions does too); false leaves it off.
	// +optional
	Enabled *bool `json:"enabled,omitempty"`
}

// AuthMode is the authentication mode of a Ray cluster.
type AuthMode string

const (
	// AuthModeDisabled turns authentication off.
	AuthModeDisabled AuthMode = "disabled"
	// AuthModeToken requires a bearer token.
	AuthModeToken AuthMode = "token"
)

// AuthOptions configures authentication of a Ray cluster.
type AuthOptions struct {
	// EnableK8sTokenAuth delegates token checks to the Kubernetes API server: with mode
	// "token", each Ray process presents its pod's projected ServiceAccount token and Ray
	// checks callers' tokens with TokenReview and SubjectAccessReview (the pods'
	// ServiceAccount needs create on both). No token Secret is used; needs Ray 2.55.0 or
	// newer; not on a RayService.
	// +optional
	EnableK8sTokenAuth *bool `json:"enableK8sTokenAuth,omitempty"`
	// SecretName names a Secret in the cluster's namespace whose `auth_token` key holds the
	// token to use; raygate then generates no Secret. Only with mode "token".
	// +optional
	SecretName *string `json:"secretName,omitempty"`
	// Mode is "disabled" or "token"; only "token" turns authentication on.
	// +kubebuilder:validation:Enum=disabled;token
	// +optional
	Mode AuthMode `json:"mode,omitempty"`
}

// GcsFaultToleranceBackend is where GCS state is persisted.
// +kubebuilder:validation:Enum=redis;rocksdb
type GcsFaultToleranceBackend string

const (
	// GcsFTBackendRedis stores GCS state in an external Redis.
	GcsFTBackendRedis GcsFaultToleranceBackend = "redis"
	// GcsFTBackendRocksDB stores GCS state in RocksDB on a volume of the head pod.
	GcsFTBackendRocksDB GcsFaultToleranceBackend = "rocksdb"
)

// GcsFaultToleranceOptions configures GCS fault tolerance.
type GcsFaultToleranceOptions struct {
	// Backend is "redis" (the default) or "rocksdb" (RocksDB on a PersistentVolumeClaim of the
	// head; needs the GCSFaultToleranceEmbeddedStorage feature gate). Immutable.
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="gcsFaultToleranceOptions.backend is immutable"
	// +optional
	Backend GcsFaultToleranceBackend `json:"backend,omitempty"`
	// RedisUsername is the Redis user, inline or from a source.
	// +optional
	RedisUsername *RedisCredential `json:"redisUsername,omitempty"`
	// RedisPassword is the Redis password, inline or from a source.
	// +optional
	RedisPassword *RedisCredential `json:"redisPassword,omitempty"`
	// ExternalStorageNamespace isolates this cluster's keys in the shared store.
	// +optional
	ExternalStorageNamespace string `json:"externalStorageNamespace,omitempty"`
	// RedisAddress is the host:port of the Redis server.
	// +optional
	RedisAddress string `json:"redisAddress,omitempty"`
	// Storage is the volume for the rocksdb backend (immutable): raygate's claim
	// <cluster>-gcs-pvc by default, or claimName.
	// +optional
	Storage *GcsEmbeddedStorage `json:"storage,omitempty"`
}

// GcsEmbeddedStorage is the persistent volume claim used by the rocksdb backend.
type GcsEmbeddedStorage struct {
	// ClaimName uses an existing claim the user owns.
	// +optional
	ClaimName string `json:"claimName,omitempty"`
	// Size of an operator-managed claim.
	// +optional
	Size *resource.Quantity `json:"size,omitempty"`
	// StorageClassName of an operator-managed claim.
	// +optional
	StorageClassName *string `json:"storageClassName,omitempty"`
	// AccessModes of an operator-managed claim.
	// +optional
	AccessModes []corev1.PersistentVolumeAccessMode `json:"accessModes,omitempty"`
	// SubPath mounts a subdirectory of the volume.
	// +optional
	SubPath string `json:"subPath,omitempty"`
	// DeletionPolicy is DeleteWithCluster or Retain.
	// +optional
	DeletionPolicy *GCSStorageDeletionPolicy `json:"deletionPolicy,omitempty"`
}

// GCSStorageDeletionPolicy says whether an operator-managed GCS claim outlives its cluster.
// +kubebuilder:validation:Enum=DeleteWithCluster;Retain
type GCSStorageDeletionPolicy string

const (
	// DeleteWithClusterGCSStorageDeletionPolicy deletes the claim with the cluster.
	DeleteWithClusterGCSStorageDeletionPolicy GCSStorageDeletionPolicy = "DeleteWithCluster"
	// RetainGCSStorageDeletionPolicy keeps the claim after the cluster is deleted.
	RetainGCSStorageDeletionPolicy GCSStorageDeletionPolicy = "Retain"
)

// RedisCredential is a Redis user name or password, given inline or from a source.
type RedisCredential struct {
	// ValueFrom reads the value from a Secret or ConfigMap key.
	// +optional
	ValueFrom *corev1.EnvVarSource `json:"valueFrom,omitempty"`
	// Value is the literal value.
	// +optional
	Value string `json:"value,omitempty"`
}

// HistoryServerOptions configures the Ray history server.
type HistoryServerOptions struct {
	// CollectorOptions configures the collector sidecar.
	// +optional
	CollectorOptions *CollectorOptions `json:"collectorOptions,omitempty"`
}

// CollectorOptions configures the history server collector sidecar.
type CollectorOptions struct {
	// Image of the collector container.
	// +optional
	Image *string `json:"image,omitempty"`
	// ImagePullPolicy of the collector container.
	// +optional
	ImagePullPolicy *corev1.PullPolicy `json:"imagePullPolicy,omitempty"`
	// Resources of the collector container.
	// +optional
	Resources *corev1.ResourceRequirements `json:"resources,omitempty"`
	// Env of the collector container.
	// +optional
	Env []corev1.EnvVar `json:"env,omitempty"`
}

// NetworkPolicyMode is the isolation level of the cluster's NetworkPolicies.
// +kubebuilder:validation:Enum=DenyAll;DenyAllIngress;DenyAllEgress
type NetworkPolicyMode string

const (
	// NetworkPolicyDenyAll denies ingress and egress except within the cluster.
	NetworkPolicyDenyAll NetworkPolicyMode = "DenyAll"
	// NetworkPolicyDenyAllIngress denies ingress except within the cluster.
	NetworkPolicyDenyAllIngress NetworkPolicyMode = "DenyAllIngress"
	// NetworkPolicyDenyAllEgress denies egress except within the cluster.
	NetworkPolicyDenyAllEgress NetworkPolicyMode = "DenyAllEgress"
)

// NetworkPolicyConfig configures NetworkPolicies for the cluster's pods.
type NetworkPolicyConfig struct {
	// Mode is the isolation level.
	// +kubebuilder:default=DenyAll
	// +optional
	Mode *NetworkPolicyMode `json:"mode,omitempty"`
	// Head adds rules to the head pod's policy.
	// +optional
	Head *NetworkPolicyRules `json:"head,omitempty"`
	// Worker adds rules to every worker group's policy.
	// +optional
	Worker *NetworkPolicyRules `json:"worker,omitempty"`
	// WorkerGroups replaces Worker for the named groups.
	// +listType=map
	// +listMapKey=groupName
	// +optional
	WorkerGroups []WorkerGroupNetworkPolicyRules `json:"workerGroups,omitempty"`
}

// WorkerGroupNetworkPolicyRules are NetworkPolicy rules for one worker group.
type WorkerGroupNetworkPolicyRules struct {
	// GroupName is the worker group these rules apply to.
	GroupName string `json:"groupName"`

	NetworkPolicyRules `json:",inline"`
}

// NetworkPolicyRules are extra ingress and egress rules.
type NetworkPolicyRules struct {
	// IngressRules are appended to the base ingress rules.
	// +optional
	IngressRules []networkingv1.NetworkPolicyIngressRule `json:"ingressRules,omitempty"`
	// EgressRules are appended to the base egress rules.
	// +optional
	EgressRules []networkingv1.NetworkPolicyEgressRule `json:"egressRules,omitempty"`
}

// IngressPathType is the path matching mode of the dashboard Ingress.
// +kubebuilder:validation:Enum=Exact;Prefix;ImplementationSpecific
type IngressPathType string

const (
	// IngressPathTypeExact matches the path exactly.
	IngressPathTypeExact IngressPathType = "Exact"
	// IngressPathTypePrefix matches the path and everything below it.
	IngressPathTypePrefix IngressPathType = "Prefix"
	// IngressPathTypeImplementationSpecific leaves matching to the Ingress controller.
	IngressPathTypeImplementationSpecific IngressPathType = "ImplementationSpecific"
)

// IngressOptions configures the dashboard Ingress.
type IngressOptions struct {
	// Host the Ingress rule matches.
	// +optional
	Host *string `json:"host,omitempty"`
	// Path routed to the dashboard.
	// +optional
	Path *string `json:"path,omitempty"`
	// PathType of Path.
	// +optional
	PathType *IngressPathType `json:"pathType,omitempty"`
	// TLS of the Ingress.
	// +optional
	TLS []networkingv1.IngressTLS `json:"tls,omitempty"`
}
