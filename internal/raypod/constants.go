package raypod

// Names of the volumes and containers raygate adds.
const (
	SharedMemoryVolumeName = "shared-mem"
	SharedMemoryMountPath  = "/dev/shm"
	RayLogsVolumeName      = "ray-logs"
	RayLogsMountPath       = "/tmp/ray"
	AutoscalerContainer    = "autoscaler"
	WaitGCSInitContainer   = "wait-gcs-ready"
)

// Environment variables raygate sets on Ray containers. The names are Ray's and KubeRay's, so
// images and scripts written for KubeRay keep working.
const (
	EnvGeneratedStartCmd      = "KUBERAY_GEN_RAY_START_CMD"
	EnvGeneratedAutoscalerCmd = "KUBERAY_GEN_AUTOSCALER_START_CMD"
	EnvClusterName            = "RAY_CLUSTER_NAME"
	EnvClusterNamespace       = "RAY_CLUSTER_NAMESPACE"
	EnvCloudInstanceID        = "RAY_CLOUD_INSTANCE_ID"
	EnvNodeTypeName           = "RAY_NODE_TYPE_NAME"
	EnvFQRayIP                = "FQ_RAY_IP"
	EnvRayIP                  = "RAY_IP"
	EnvRayPort                = "RAY_PORT"
	EnvRayAddress             = "RAY_ADDRESS"
	EnvUsageStatsInUse        = "RAY_USAGE_STATS_KUBERAY_IN_USE"
	EnvUsageStatsExtraTags    = "RAY_USAGE_STATS_EXTRA_TAGS"
	EnvDashboardDiskUsage     = "RAY_DASHBOARD_ENABLE_K8S_DISK_USAGE"
	EnvAutoscalerV2           = "RAY_enable_autoscaler_v2"
	EnvTaskWaitForDeathInfo   = "RAY_timeout_ms_task_wait_for_death_info"
	EnvGCSRequestTimeout      = "RAY_gcs_server_request_timeout_seconds"
	EnvServeKVTimeout         = "RAY_SERVE_KV_TIMEOUT_S"
	EnvUlimitOpenFiles        = "RAY_START_ULIMIT_OPEN_FILES"
)

// DefaultClusterDomain is the DNS suffix of in-cluster Service names unless the operator is
// told another (its CLUSTER_DOMAIN environment variable, read by internal/app).
const DefaultClusterDomain = "cluster.local"
