package raypod

import (
	"maps"
	"strconv"

	corev1 "k8s.io/api/core/v1"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/rayspec"
)

// Environment of GCS fault tolerance (Ray reads these names).
const (
	EnvRedisAddress             = "RAY_REDIS_ADDRESS"
	EnvRedisUsername            = "REDIS_USERNAME"
	EnvRedisPassword            = "REDIS_PASSWORD"
	EnvExternalStorageNamespace = "RAY_external_storage_namespace"
	EnvGCSReconnectTimeout      = "RAY_gcs_rpc_server_reconnect_timeout_s"

	// workerGCSReconnectTimeout: how long a worker's raylet waits for a restarted GCS before
	// it exits. Ray's 60 s default is shorter than a new head pod typically takes to come up,
	// so without it the workers would die with the head after all.
	workerGCSReconnectTimeout = "600"
)

// gcsFaultToleranceStartParams is the head's rayStartParams with the Redis credentials of
// gcsFaultToleranceOptions given as references to the env vars that hold them, so their
// values never appear in the command line or the pod spec.
func gcsFaultToleranceStartParams(rc *rayv1.RayCluster, params map[string]string) map[string]string {
	o := rc.Spec.GcsFaultToleranceOptions
	if o == nil || (o.RedisUsername == nil && o.RedisPassword == nil) {
		return params
	}
	p := maps.Clone(params)
	if p == nil {
		p = map[string]string{}
	}
	if o.RedisUsername != nil {
		p["redis-username"] = "$" + EnvRedisUsername
	}
	if o.RedisPassword != nil {
		p["redis-password"] = "$" + EnvRedisPassword
	}
	return p
}

// gcsFaultTolerance sets GCS fault tolerance up on a pod as KubeRay does: the head pod
// records whether it is on (ray.io/ft-enabled) and its storage namespace; the head's Ray
// container gets the Redis address, credentials and storage namespace (with the rocksdb
// backend: the backend, its directory and the claim mounted there); workers wait longer
// for a restarted GCS. Values the user set in the container's env are kept, except those
// the options own.
func gcsFaultTolerance(rc *rayv1.RayCluster, pod *corev1.Pod, node rayv1.RayNodeType) {
	enabled := rayspec.GCSFaultToleranceEnabled(&rc.Spec, rc.Annotations)
	if node == rayv1.HeadNode {
		pod.Annotations[rayv1.FTEnabledKey] = strconv.FormatBool(enabled)
	}
	if !enabled {
		return
	}
	c := &pod.Spec.Containers[rayv1.RayContainerIndex]
	if node == rayv1.WorkerNode {
		addEnv(c, corev1.EnvVar{Name: EnvGCSReconnectTimeout, Value: workerGCSReconnectTimeout}, false)
		return
	}
	if EmbeddedGCSStorage(&rc.Spec) {
		// No Redis, so no storage namespace: the claim is the cluster's alone.
		addEmbeddedGCSStorage(rc, pod)
		return
	}
	ns := rayspec.ExternalStorageNamespace(rc)
	pod.Annotations[rayv1.ExternalStorageNamespaceKey] = ns
	addEnv(c, corev1.EnvVar{Name: EnvExternalStorageNamespace, Value: ns}, false)
	o := rc.Spec.GcsFaultToleranceOptions
	if o == nil {
		// Legacy form: the address is in the user's env. A password given in rayStartParams
		// is copied to REDIS_PASSWORD too, because the cleanup Job reads it from there.
		if v, ok := rc.Spec.HeadGroupSpec.RayStartParams["redis-password"]; ok {
			addEnv(c, corev1.EnvVar{Name: EnvRedisPassword, Value: v}, false)
		}
		return
	}
	addEnv(c, corev1.EnvVar{Name: EnvRedisAddress, Value: o.RedisAddress}, true)
	if cred := o.RedisUsername; cred != nil {
		addEnv(c, corev1.EnvVar{Name: EnvRedisUsername, Value: cred.Value, ValueFrom: cred.ValueFrom.DeepCopy()}, true)
	}
	if cred := o.RedisPassword; cred != nil {
		addEnv(c, corev1.EnvVar{Name: EnvRedisPassword, Value: cred.Value, ValueFrom: cred.ValueFrom.DeepCopy()}, true)
	}
}
