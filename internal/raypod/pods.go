package raypod

import (
	"fmt"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/version"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/rayspec"
	raygateversion "github.com/raygate/raygate/internal/version"
)

// ReplicaIndex places a worker pod in its group when RayMultiHostIndexing is on: the replica's
// index in the group and, for multi-host groups, the replica's name and the pod's host index.
type ReplicaIndex struct {
	Index     int
	Name      string // multi-host only
	Host      int    // multi-host only
	MultiHost bool
}

// HeadPod builds the head pod of a (defaulted) cluster. hash is the spec hash recorded
// for the Recreate strategy; s are the operator's settings (DNS domain, the admin's pod
// defaults, KubeRay's environment switches).
func HeadPod(rc *rayv1.RayCluster, hash string, s Settings) *corev1.Pod {
	spec := &rc.Spec
	head := spec.HeadGroupSpec
	pod := newPod(rc, head.Template, rayv1.HeadNode, rayv1.HeadGroupLabelValue, head.Labels, s.Defaults)
	if s.DeterministicHeadPodName {
		pod.Name = HeadPodName(rc.Name)
	} else {
		pod.GenerateName = rayspec.HeadPodGenerateName(rc.Name)
	}
	pod.Annotations[rayv1.HashWithoutReplicasAndWorkersToDeleteKey] = hash
	pod.Annotations[rayv1.KubeRayVersionKey] = raygateversion.Version
	gcsFaultTolerance(rc, pod, rayv1.HeadNode)

	autoscaling := rayspec.AutoscalingEnabled(spec)
	params := startParams(rayv1.HeadNode, gcsFaultToleranceStartParams(rc, head.RayStartParams), head.Resources, head.Labels, pod.Spec.Containers[rayv1.RayContainerIndex], "", autoscaling)
	if autoscaling {
		addAutoscaler(rc, pod, s)
	}
	addHeadPorts(&pod.Spec.Containers[rayv1.RayContainerIndex], params)
	finishPod(rc, pod, rayv1.HeadNode, params, headFQDN(rc, s.ClusterDomain), s)
	addHistoryCollector(rc, pod, rayv1.HeadNode)
	appendSidecars(pod, s.Defaults.HeadSidecars)
	return pod
}

// WorkerPod builds a pod of a worker group of a (defaulted) cluster. idx is nil unless
// RayMultiHostIndexing is on. s are the operator's settings; workers find the head's GCS
// in its DNS domain.
func WorkerPod(rc *rayv1.RayCluster, group *rayv1.WorkerGroupSpec, idx *ReplicaIndex, s Settings) *corev1.Pod {
	fqdn := headFQDN(rc, s.ClusterDomain)
	headAddress := fqdn + ":" + headPort(&rc.Spec)
	pod := newPod(rc, group.Template, rayv1.WorkerNode, group.GroupName, group.Labels, s.Defaults)
	pod.GenerateName = rayspec.WorkerPodGenerateName(rc.Name, group.GroupName)
	if idx != nil {
		pod.Labels[rayv1.WorkerReplicaIndexLabelKey] = strconv.Itoa(idx.Index)
		if idx.MultiHost {
			pod.Labels[rayv1.WorkerReplicaNameLabelKey] = idx.Name
			pod.Labels[rayv1.ReplicaHostIndexLabelKey] = strconv.Itoa(idx.Host)
		}
	}
	params := startParams(rayv1.WorkerNode, group.RayStartParams, group.Resources, group.Labels, pod.Spec.Containers[rayv1.RayContainerIndex], headAddress, rayspec.AutoscalingEnabled(&rc.Spec))
	addPortIfMissing(&pod.Spec.Containers[rayv1.RayContainerIndex], rayspec.MetricsPortName, metricsPort(params))
	if !s.NoWaitGCSInitContainer {
		pod.Spec.InitContainers = append(pod.Spec.InitContainers, waitGCSContainer(headAddress, pod.Spec.Containers[rayv1.RayContainerIndex], s))
	}
	gcsFaultTolerance(rc, pod, rayv1.WorkerNode)
	finishPod(rc, pod, rayv1.WorkerNode, params, fqdn, s)
	addHistoryCollector(rc, pod, rayv1.WorkerNode)
	appendSidecars(pod, s.Defaults.WorkerSidecars)
	return pod
}

// newPod starts a pod from a group's template: labels, annotations, namespace, owner.
// The admin's default labels and annotations fill in what the pod has not got, before the
// labels raygate sets later (ray.io/serve, the spec hash) replace theirs.
func newPod(rc *rayv1.RayCluster, tmpl corev1.PodTemplateSpec, node rayv1.RayNodeType, group string, groupLabels map[string]string, defaults PodDefaults) *corev1.Pod {
	t := tmpl.DeepCopy()
	pod := &corev1.Pod{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{
			Namespace:       rc.Namespace,
			Labels:          podLabels(rc, node, group, t.Labels, groupLabels),
			Annotations:     t.Annotations,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(rc, rayv1.GroupVersion.WithKind(rayv1.RayClusterKind))},
		},
		Spec: t.Spec,
	}
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	if overwriteContainerCmd(rc) {
		pod.Annotations[rayv1.OverwriteContainerCmdKey] = "true"
	}
	applyDefaultMeta(pod, defaults)
	if createdByRayService(rc) {
		// Workers serve traffic as soon as they are ready; the RayService controller decides
		// when the head joins the serve Service.
		pod.Labels[rayv1.ServeLabelKey] = strconv.FormatBool(node == rayv1.WorkerNode)
	}
	if autoscalerV2(&rc.Spec) && rayspec.AutoscalingEnabled(&rc.Spec) {
		// Autoscaler v2 replaces failed nodes itself; a restarting container would confuse it.
		pod.Spec.RestartPolicy = corev1.RestartPolicyNever
	}
	return pod
}

// podLabels are the template's labels, the group's Ray labels, and KubeRay's labels; the
// identifying ones cannot be overridden.
func podLabels(rc *rayv1.RayCluster, node rayv1.RayNodeType, group string, template, groupLabels map[string]string) map[string]string {
	l := map[string]string{
		rayv1.KubernetesApplicationNameLabelKey: rayv1.ApplicationName,
		rayv1.KubernetesCreatedByLabelKey:       rayv1.ComponentName,
	}
	for k, v := range template {
		l[k] = v
	}
	for k, v := range groupLabels {
		l[k] = v
	}
	for k, v := range selectorLabels(rc.Name, node, group) {
		l[k] = v
	}
	return l
}

// selectorLabels identify a Ray pod; raygate's own lookups rely on them.
func selectorLabels(cluster string, node rayv1.RayNodeType, group string) map[string]string {
	id := rayspec.WorkerIdentifier(cluster)
	if node == rayv1.HeadNode {
		id = rayspec.HeadIdentifier(cluster)
	}
	return map[string]string{
		rayv1.ClusterLabelKey:    cluster,
		rayv1.NodeTypeLabelKey:   string(node),
		rayv1.NodeGroupLabelKey:  group,
		rayv1.IsRayNodeLabelKey:  "yes",
		rayv1.IdentifierLabelKey: id,
	}
}

func overwriteContainerCmd(rc *rayv1.RayCluster) bool {
	return strings.EqualFold(rc.Annotations[rayv1.OverwriteContainerCmdKey], "true")
}

func createdByRayService(rc *rayv1.RayCluster) bool {
	return rc.Labels[rayv1.OriginatedFromCRDLabelKey] == rayv1.RayServiceKind
}

// finishPod sets what head and worker pods share: the Ray container's command and
// environment, shared memory and probes. headFQDN is the head Service's qualified name. The
// admin's default variables go in before raygate's, as KubeRay's do: the template's own win
// over both, and a default takes the place of those raygate only sets when missing.
func finishPod(rc *rayv1.RayCluster, pod *corev1.Pod, node rayv1.RayNodeType, params map[string]string, headFQDN string, s Settings) {
	ray := &pod.Spec.Containers[rayv1.RayContainerIndex]
	startCmd := rayStartCommand(node, params)
	if pod.Annotations[rayv1.OverwriteContainerCmdKey] != "true" {
		if cmd, args, replace := containerCommand(*ray, startCmd, s.Shell()); replace {
			ray.Command, ray.Args = cmd, args
		}
	}
	if _, ok := params["plasma-directory"]; !ok {
		addEmptyDir(pod, ray, SharedMemoryVolumeName, SharedMemoryMountPath, corev1.StorageMediumMemory, sharedMemorySize(*ray))
	}
	applyDefaultEnv(ray, s.Defaults.Env)
	setRayEnv(rc, pod, node, startCmd, headFQDN)
	for i := range pod.Spec.InitContainers {
		addEnv(&pod.Spec.InitContainers[i], corev1.EnvVar{Name: EnvFQRayIP, Value: headFQDN}, true)
		addEnv(&pod.Spec.InitContainers[i], corev1.EnvVar{Name: EnvRayIP, Value: HeadServiceName(rc)}, true)
	}
	if !s.NoProbes {
		setProbes(rc, ray, node, params)
	}
	addTokenAuth(rc, pod)
	addMTLS(rc, pod, node)
}

// sharedMemorySize sizes /dev/shm like the container's memory (limit, else request); nil:
// no size limit. /dev/shm is memory-backed either way, as in KubeRay: the object store lives
// there and a container runtime's 64 MiB default cripples it.
func sharedMemorySize(c corev1.Container) *resource.Quantity {
	if q, ok := c.Resources.Limits[corev1.ResourceMemory]; ok {
		return &q
	}
	if q, ok := c.Resources.Requests[corev1.ResourceMemory]; ok {
		return &q
	}
	return nil
}

// addEmptyDir mounts an emptyDir volume on the given medium, with size as its limit when
// given, into the container unless something is already mounted at the path.
func addEmptyDir(pod *corev1.Pod, c *corev1.Container, name, path string, medium corev1.StorageMedium, size *resource.Quantity) {
	for _, m := range c.VolumeMounts {
		if m.MountPath == path {
			return
		}
	}
	exists := false
	for _, v := range pod.Spec.Volumes {
		exists = exists || v.Name == name
	}
	if !exists {
		src := &corev1.EmptyDirVolumeSource{Medium: medium, SizeLimit: size}
		pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{EmptyDir: src}})
	}
	c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: name, MountPath: path})
}

// HeadServiceName is the head Service's name (the user may override it in headService).
func HeadServiceName(rc *rayv1.RayCluster) string {
	if hs := rc.Spec.HeadGroupSpec.HeadService; hs != nil && hs.Name != "" {
		return hs.Name
	}
	return rayspec.HeadServiceName(rc.Name)
}

// headFQDN is the head Service's fully qualified name in the cluster's DNS domain ("":
// cluster.local), where workers find the GCS.
func headFQDN(rc *rayv1.RayCluster, clusterDomain string) string {
	if clusterDomain == "" {
		clusterDomain = DefaultClusterDomain
	}
	return HeadServiceName(rc) + "." + rc.Namespace + ".svc." + clusterDomain
}

func fieldEnv(name, path string) corev1.EnvVar {
	return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: path}}}
}

// addEnv adds an environment variable; override replaces a value the user gave (for the
// variables raygate owns), otherwise the user's value wins.
func addEnv(c *corev1.Container, e corev1.EnvVar, override bool) {
	for i := range c.Env {
		if c.Env[i].Name == e.Name {
			if override {
				c.Env[i] = e
			}
			return
		}
	}
	c.Env = append(c.Env, e)
}

func setRayEnv(rc *rayv1.RayCluster, pod *corev1.Pod, node rayv1.RayNodeType, startCmd, headFQDN string) {
	c := &pod.Spec.Containers[rayv1.RayContainerIndex]
	port := headPort(&rc.Spec)
	ip := "127.0.0.1"
	if node == rayv1.WorkerNode {
		ip = headFQDN
		addEnv(c, corev1.EnvVar{Name: EnvFQRayIP, Value: ip}, true)
		addEnv(c, corev1.EnvVar{Name: EnvRayIP, Value: HeadServiceName(rc)}, true)
	}
	addEnv(c, fieldEnv(EnvClusterName, fmt.Sprintf("metadata.labels['%s']", rayv1.ClusterLabelKey)), true)
	addEnv(c, fieldEnv(EnvClusterNamespace, "metadata.namespace"), true)
	// Autoscaler v2 identifies nodes by pod name and node type by group.
	addEnv(c, fieldEnv(EnvCloudInstanceID, "metadata.name"), true)
	addEnv(c, fieldEnv(EnvNodeTypeName, fmt.Sprintf("metadata.labels['%s']", rayv1.NodeGroupLabelKey)), true)
	addEnv(c, corev1.EnvVar{Name: EnvGeneratedStartCmd, Value: startCmd}, true)
	addEnv(c, corev1.EnvVar{Name: EnvRayPort, Value: port}, false)
	if createdByRayService(rc) {
		// Fail fast on dead actors and slow GCS calls so Serve requests are retried elsewhere.
		addEnv(c, corev1.EnvVar{Name: EnvTaskWaitForDeathInfo, Value: "0"}, false)
		addEnv(c, corev1.EnvVar{Name: EnvGCSRequestTimeout, Value: "5"}, false)
		addEnv(c, corev1.EnvVar{Name: EnvServeKVTimeout, Value: "5"}, false)
	}
	addEnv(c, corev1.EnvVar{Name: EnvRayAddress, Value: ip + ":" + port}, false)
	addEnv(c, corev1.EnvVar{Name: EnvUsageStatsInUse, Value: "1"}, false)
	if node == rayv1.HeadNode {
		crd := rayv1.RayClusterKind
		if createdByRayService(rc) {
			crd = rayv1.RayServiceKind
		}
		addEnv(c, corev1.EnvVar{Name: EnvUsageStatsExtraTags, Value: fmt.Sprintf("kuberay_version=%s;kuberay_crd=%s", raygateversion.Version, crd)}, true)
		if rayspec.AutoscalingEnabled(&rc.Spec) {
			if v := rc.Spec.AutoscalerOptions; v != nil && v.Version != nil {
				addEnv(c, corev1.EnvVar{Name: EnvAutoscalerV2, Value: strconv.FormatBool(*v.Version == rayv1.AutoscalerVersionV2)}, true)
			}
		}
	}
	addEnv(c, corev1.EnvVar{Name: EnvDashboardDiskUsage, Value: "1"}, false)
}

// autoscalerV2 reports whether autoscalerOptions.version asks for autoscaler v2. Unset leaves
// the choice to Ray (v2 by default from Ray 2.47.0).
func autoscalerV2(spec *rayv1.RayClusterSpec) bool {
	o := spec.AutoscalerOptions
	return o != nil && o.Version != nil && *o.Version == rayv1.AutoscalerVersionV2
}

func metricsPort(params map[string]string) int32 {
	return rayspec.PortParam(params, "metrics-export-port", rayspec.DefaultMetricsPort)
}

// addHeadPorts declares every port the head listens on, so the head Service exposes them.
func addHeadPorts(c *corev1.Container, params map[string]string) {
	addPortIfMissing(c, rayspec.GCSPortName, rayspec.PortParam(params, "port", rayspec.DefaultGCSPort))
	addPortIfMissing(c, rayspec.DashboardPortName, rayspec.PortParam(params, "dashboard-port", rayspec.DefaultDashboardPort))
	addPortIfMissing(c, rayspec.ClientPortName, rayspec.PortParam(params, "ray-client-server-port", rayspec.DefaultClientPort))
	addPortIfMissing(c, rayspec.ServePortName, rayspec.DefaultServePort)
	addPortIfMissing(c, rayspec.MetricsPortName, metricsPort(params))
}

// addPortIfMissing adds a TCP port unless the container already has one by that name or
// number (the user's declaration wins).
func addPortIfMissing(c *corev1.Container, name string, port int32) {
	for _, p := range c.Ports {
		if p.Name == name || p.ContainerPort == port {
			return
		}
	}
	c.Ports = append(c.Ports, corev1.ContainerPort{Name: name, ContainerPort: port, Protocol: corev1.ProtocolTCP})
}

// waitGCSContainer delays a worker's Ray container until the head's GCS answers, so workers
// do not crash-loop while the head starts.
func waitGCSContainer(addr string, ray corev1.Container, s Settings) corev1.Container {
	script := fmt.Sprintf(`SECONDS=0
while true; do
  if ray health-check --address %[1]s > /dev/null 2>&1; then
    echo "GCS is ready."
    break
  fi
  echo "$SECONDS seconds elapsed: waiting for the GCS at %[1]s."
  sleep 5
done`, addr)
	c := helperContainer(WaitGCSInitContainer, ray, script, resource.MustParse("200m"), resource.MustParse("256Mi"), s)
	// TLS and auth settings of the Ray container may live in its env and mounts.
	c.Env = append([]corev1.EnvVar(nil), ray.Env...)
	c.VolumeMounts = append([]corev1.VolumeMount(nil), ray.VolumeMounts...)
	return c
}

// helperContainer is an init container that runs a bash script in the Ray image, as the Ray
// container's user. Fixed, small resources: a ResourceQuota needs them, and GPU nodes must not
// be asked for accelerators by an init container.
func helperContainer(name string, ray corev1.Container, script string, cpu, memory resource.Quantity, s Settings) corev1.Container {
	fixed := corev1.ResourceList{corev1.ResourceCPU: cpu, corev1.ResourceMemory: memory}
	return corev1.Container{
		Name:            name,
		Image:           ray.Image,
		ImagePullPolicy: ray.ImagePullPolicy,
		Command:         s.Shell(),
		Args:            []string{script},
		SecurityContext: ray.SecurityContext.DeepCopy(),
		Resources:       corev1.ResourceRequirements{Limits: fixed, Requests: fixed.DeepCopy()},
	}
}

// Probe settings (KubeRay's): the head checks the raylet and the GCS, workers the raylet;
// RayService workers also the Serve proxy, so traffic only reaches workers that can serve.
const (
	readinessInitialDelay = 10
	readinessTimeout      = 2
	headReadinessTimeout  = 5
	readinessPeriod       = 5
	readinessFailures     = 10
	serveReadinessFails   = 1
	livenessInitialDelay  = 30
	livenessTimeout       = 2
	headLivenessTimeout   = 5
	livenessPeriod        = 5
	livenessFailures      = 120
)

// unifiedHealthVersion is the first Ray with the /api/healthz endpoint on the dashboard agent.
var unifiedHealthVersion = version.MustParseGeneric("2.53.0")

func wgetCheck(timeout, port int32, path string) string {
	return fmt.Sprintf("wget --tries 1 -T %d -q -O- http://localhost:%d/%s | grep success", timeout, port, path)
}

func setProbes(rc *rayv1.RayCluster, c *corev1.Container, node rayv1.RayNodeType, params map[string]string) {
	agent := rayspec.PortParam(params, "dashboard-agent-listen-port", rayspec.DefaultDashboardAgentPort)
	checks := []string{wgetCheck(readinessTimeout, agent, "api/local_raylet_healthz")}
	if node == rayv1.HeadNode {
		checks = append(checks, wgetCheck(readinessTimeout, rayspec.PortParam(params, "dashboard-port", rayspec.DefaultDashboardPort), "api/gcs_healthz"))
	}
	handler := corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"bash", "-c", strings.Join(checks, " && ")}}}
	if v, err := version.ParseGeneric(rc.Spec.RayVersion); err == nil && v.AtLeast(unifiedHealthVersion) {
		handler = corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/api/healthz", Port: intstr.FromInt32(agent)}}
	}
	liveTimeout, readyTimeout := int32(livenessTimeout), int32(readinessTimeout)
	if node == rayv1.HeadNode {
		liveTimeout, readyTimeout = headLivenessTimeout, headReadinessTimeout
	}
	if c.LivenessProbe == nil {
		c.LivenessProbe = &corev1.Probe{ProbeHandler: *handler.DeepCopy(), InitialDelaySeconds: livenessInitialDelay, TimeoutSeconds: liveTimeout,
			PeriodSeconds: livenessPeriod, SuccessThreshold: 1, FailureThreshold: livenessFailures}
	}
	if c.ReadinessProbe == nil {
		c.ReadinessProbe = &corev1.Probe{ProbeHandler: handler, InitialDelaySeconds: readinessInitialDelay, TimeoutSeconds: readyTimeout,
			PeriodSeconds: readinessPeriod, SuccessThreshold: 1, FailureThreshold: readinessFailures}
		if createdByRayService(rc) && node == rayv1.WorkerNode {
			serve := rayspec.ContainerServePort(c)
			checks = append(checks, fmt.Sprintf("wget --tries 1 -T %d -q -O- http://localhost:%d/-/healthz | grep success", readinessInitialDelay, serve))
			c.ReadinessProbe.ProbeHandler = corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"bash", "-c", strings.Join(checks, " && ")}}}
			c.ReadinessProbe.FailureThreshold = serveReadinessFails
		}
	}
}
