package rayspec

import "strings"

// Names of the objects raygate derives from a RayCluster or a RayService. Admission checks
// that every one of them fits Kubernetes limits (DNS-1035 labels of 63 characters for
// Services, 63 characters for label values), so a name that is too long is rejected at
// apply time rather than failing later inside a controller.

// MaxLabelValueLength is Kubernetes' limit on label values and DNS-1035 labels.
const MaxLabelValueLength = 63

// ClusterNameSuffixLength is the length of the random suffix of a RayService's clusters.
const ClusterNameSuffixLength = 5

// HeadServiceName is the head Service of a RayCluster.
func HeadServiceName(cluster string) string { return cluster + "-head-svc" }

// HeadPodGenerateName is the generateName prefix of a RayCluster's head pod.
func HeadPodGenerateName(cluster string) string { return cluster + "-head-" }

// WorkerPodGenerateName is the generateName prefix of a worker group's pods. Group names may
// have upper-case letters (they are kept as written in the ray.io/group label) but pod names
// may not, so the prefix is lower-cased, as KubeRay does.
func WorkerPodGenerateName(cluster, group string) string {
	return strings.ToLower(cluster + "-" + group + "-worker-")
}

// HeadIdentifier and WorkerIdentifier are the ray.io/identifier label values.
func HeadIdentifier(cluster string) string   { return cluster + "-head" }
func WorkerIdentifier(cluster string) string { return cluster + "-worker" }

// AutoscalerServiceAccountName is the ServiceAccount (and Role, RoleBinding) of a cluster's
// autoscaler sidecar.
func AutoscalerServiceAccountName(cluster string) string { return cluster }

// ServeServiceName is the Service that sends a RayService's traffic to its serving cluster.
func ServeServiceName(service string) string { return service + "-serve-svc" }

// ServiceHeadServiceName is the RayService-level head Service (points at the active cluster).
func ServiceHeadServiceName(service string) string { return service + "-head-svc" }

// HeadlessWorkerServiceName is the headless Service through which the pods of multi-host
// worker groups find each other.
func HeadlessWorkerServiceName(cluster string) string { return cluster + "-headless" }

// ClusterServeServiceName is a cluster's own serve Service: an HTTPRoute backend during
// incremental upgrades of a RayService, or the serve Service of a standalone RayCluster
// annotated ray.io/enable-serve-service=true.
func ClusterServeServiceName(cluster string) string { return cluster + "-serve-svc" }

// GatewayName and HTTPRouteName are the Gateway API objects of an incremental upgrade.
func GatewayName(service string) string   { return service + "-gateway" }
func HTTPRouteName(service string) string { return service + "-httproute" }

// GRPCRouteName is the GRPCRoute of Serve's gRPC port (as long as HTTPRouteName, so the
// name bounds that cover one cover the other).
func GRPCRouteName(service string) string { return service + "-grpcroute" }

// ClusterNamePrefix is the prefix of a RayService's cluster names; a random
// ClusterNameSuffixLength-character suffix follows.
func ClusterNamePrefix(service string) string { return service + "-" }

// ClusterDerivedNames are the names derived from a RayCluster name that must each fit in
// MaxLabelValueLength (the generateName prefixes are excluded: the API server truncates them).
func ClusterDerivedNames(cluster string) []string {
	return []string{cluster, HeadServiceName(cluster), HeadIdentifier(cluster), WorkerIdentifier(cluster), ClusterServeServiceName(cluster), HeadlessWorkerServiceName(cluster)}
}

// ServiceDerivedNames are the names derived from a RayService name that must each fit in
// MaxLabelValueLength, including those of its clusters (a placeholder suffix stands in for
// the random one).
func ServiceDerivedNames(service string) []string {
	names := []string{service, ServeServiceName(service), ServiceHeadServiceName(service), GatewayName(service), HTTPRouteName(service)}
	return append(names, ClusterDerivedNames(ClusterNamePrefix(service)+"xxxxx")...)
}
