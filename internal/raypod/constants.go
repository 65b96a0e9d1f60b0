package raypod

import (
	"os"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

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

// DefaultClusterDomain is the DNS suffix of in-cluster Service names unless the operator's
// CLUSTER_DOMAIN environment variable says otherwise.
const DefaultClusterDomain = "cluster.local"

// EnvClusterDomain names the operator's environment variable with the cluster's DNS domain
// (the Helm value clusterDomain sets it), as KubeRay reads it.
const EnvClusterDomain = "CLUSTER_DOMAIN"

// ClusterDomain is the cluster's DNS domain: CLUSTER_DOMAIN when it is a valid DNS name
// (a trailing dot dropped), else cluster.local. Workers find the GCS at the head Service's
// name in it, so a wrong domain leaves them waiting forever.
func ClusterDomain() string {
	d := strings.TrimSuffix(strings.TrimSpace(os.Getenv(EnvClusterDomain)), ".")
	if d == "" || len(validation.IsDNS1123Subdomain(d)) > 0 {
		return DefaultClusterDomain
	}
	return d
}
