package raypod

import (
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
)

// The history server collector is a sidecar in every Ray pod (head and workers) of a cluster
// with historyServerOptions.collectorOptions. It reads Ray's session directory (/tmp/ray,
// shared with the Ray container) and receives Ray's events over HTTP on localhost, then
// uploads both to the storage its environment names, for the history server to show after
// the cluster is gone. Names, ports and defaults are KubeRay's.
const (
	CollectorContainer = "collector"
	// DefaultCollectorImage is used when collectorOptions.image is unset.
	DefaultCollectorImage = "kuberay/collector:latest"
	// CollectorEventsPort is where the collector receives Ray's events (8080 is Ray's metrics
	// port).
	CollectorEventsPort = 8084

	EnvCollectorPodIP      = "POD_IP"
	EnvCollectorEventsPort = "EVENTS_PORT"

	// Ray's switches for exporting events to the collector, set on the Ray container unless
	// the user sets them.
	EnvRayEnableEvents        = "RAY_enable_ray_event"
	EnvRayCoreWorkerEvents    = "RAY_enable_core_worker_ray_event_to_aggregator"
	EnvRayEventsExportAddress = "RAY_DASHBOARD_AGGREGATOR_AGENT_EVENTS_EXPORT_ADDR"
)

// CollectorReservedEnv are the collector's variables raygate sets; collectorOptions.env may
// not set them.
var CollectorReservedEnv = []string{EnvCollectorPodIP, EnvCollectorEventsPort}

// nodeIDScript waits for the raylet and writes its node ID where the collector looks for it,
// so uploads are filed under the Ray node. awk, not grep -P, so it runs on minimal images.
const nodeIDScript = `while true; do
  id=$(ps -eo args 2>/dev/null | awk '/raylet\/raylet.*--node_id=/{for(i=1;i<=NF;i++){if(index($i,"--node_id=")==1){print substr($i,11)}}}')
  if [ -n "$id" ]; then echo "$id" > ` + RayLogsMountPath + `/raylet_node_id; break; fi
  sleep 1
done`

// WantsHistoryCollector reports whether a cluster's pods get the collector sidecar.
func WantsHistoryCollector(spec *rayv1.RayClusterSpec) bool {
	return spec.HistoryServerOptions != nil && spec.HistoryServerOptions.CollectorOptions != nil
}

// addHistoryCollector adds the collector sidecar to a Ray pod of a cluster that asks for it:
// the container, the session directory shared with the Ray container, a postStart hook on
// the Ray container recording the raylet's node ID (unless the template has its own hook),
// and Ray's event export settings.
func addHistoryCollector(rc *rayv1.RayCluster, pod *corev1.Pod, node rayv1.RayNodeType) {
	if !WantsHistoryCollector(&rc.Spec) {
		return
	}
	ray := &pod.Spec.Containers[rayv1.RayContainerIndex]
	addEmptyDir(pod, ray, RayLogsVolumeName, RayLogsMountPath, corev1.StorageMediumDefault, nil)
	volume := RayLogsVolumeName
	for _, m := range ray.VolumeMounts {
		if m.MountPath == RayLogsMountPath {
			volume = m.Name // the template's own volume at /tmp/ray
		}
	}
	if ray.Lifecycle == nil {
		ray.Lifecycle = &corev1.Lifecycle{}
	}
	if ray.Lifecycle.PostStart == nil {
		ray.Lifecycle.PostStart = &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{"/bin/sh", "-c", nodeIDScript}}}
	}
	port := strconv.Itoa(CollectorEventsPort)
	addEnv(ray, corev1.EnvVar{Name: EnvRayEnableEvents, Value: "true"}, false)
	addEnv(ray, corev1.EnvVar{Name: EnvRayCoreWorkerEvents, Value: "true"}, false)
	addEnv(ray, corev1.EnvVar{Name: EnvRayEventsExportAddress, Value: "http://localhost:" + port + "/v1/events"}, false)
	pod.Spec.Containers = append(pod.Spec.Containers, collectorContainer(rc, node, volume))
}

func collectorContainer(rc *rayv1.RayCluster, node rayv1.RayNodeType, volume string) corev1.Container {
	o := rc.Spec.HistoryServerOptions.CollectorOptions
	role := "Worker"
	if node == rayv1.HeadNode {
		role = "Head"
	}
	port := strconv.Itoa(CollectorEventsPort)
	c := corev1.Container{
		Name:            CollectorContainer,
		Image:           DefaultCollectorImage,
		ImagePullPolicy: corev1.PullIfNotPresent,
		Args: []string{
			"--role=" + role,
			"--ray-cluster-name=" + rc.Name,
			"--ray-cluster-namespace=" + rc.Namespace,
			"--ray-root-dir=" + RayLogsMountPath,
			"--events-port=" + port,
		},
		Env: []corev1.EnvVar{
			fieldEnv(EnvCollectorPodIP, "status.podIP"),
			{Name: EnvCollectorEventsPort, Value: port},
		},
		VolumeMounts: []corev1.VolumeMount{{Name: volume, MountPath: RayLogsMountPath}},
		Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("128Mi")},
			Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("200m"), corev1.ResourceMemory: resource.MustParse("256Mi")},
		},
	}
	if o.Image != nil && *o.Image != "" {
		c.Image = *o.Image
	}
	if o.ImagePullPolicy != nil && *o.ImagePullPolicy != "" {
		c.ImagePullPolicy = *o.ImagePullPolicy
	}
	if o.Resources != nil {
		c.Resources = *o.Resources.DeepCopy()
	}
	for _, e := range o.Env {
		c.Env = append(c.Env, *e.DeepCopy())
	}
	return c
}
