package raypod

import (
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
)

// Settings are what the operator's configuration and environment change in every pod (and
// head Service) it builds, with the meaning KubeRay's operator gives them. The zero value is
// KubeRay's defaults. The builders take Settings as an argument, so the controller and
// admission (Pod Security, quotas) build exactly the same pods.
type Settings struct {
	// ClusterDomain is the cluster's DNS domain, in which workers find the head's GCS ("":
	// cluster.local). The operator's CLUSTER_DOMAIN.
	ClusterDomain string
	// Defaults are the admin's sidecars, environment, labels and annotations for every Ray
	// pod: KubeRay's Configuration fields of the same meaning (--config).
	Defaults PodDefaults
	// NoWaitGCSInitContainer leaves the wait-gcs-ready init container out of worker pods: the
	// admin's image or init containers wait for the GCS themselves
	// (ENABLE_INIT_CONTAINER_INJECTION=false).
	NoWaitGCSInitContainer bool
	// NoProbes leaves raygate's liveness and readiness probes out of Ray containers; the
	// template's own probes are kept (ENABLE_PROBES_INJECTION=false).
	NoProbes bool
	// LoginShell runs the commands raygate writes with `bash -l`, so the image's profile
	// scripts run first, as KubeRay did before v1.4 (ENABLE_LOGIN_SHELL=true).
	LoginShell bool
	// DeterministicHeadPodName names the head pod <cluster>-head instead of a generated name
	// (ENABLE_DETERMINISTIC_HEAD_POD_NAME=true).
	DeterministicHeadPodName bool
	// HeadClusterIPService gives the head Service a cluster IP instead of making it headless
	// (ENABLE_RAY_HEAD_CLUSTER_IP_SERVICE=true).
	HeadClusterIPService bool
}

// PodDefaults are what every Ray pod gets from the admin, as KubeRay's Configuration gives
// them: sidecars appended after every container raygate adds; environment variables the
// Ray container does not set itself; labels and annotations the pod does not have yet. What
// the tenant's template sets, and what raygate sets, wins.
type PodDefaults struct {
	// HeadSidecars are appended to every head pod's containers, WorkerSidecars to every
	// worker pod's.
	HeadSidecars, WorkerSidecars []corev1.Container
	// Env is added to the Ray container (the first) of every pod, before raygate's own
	// variables, unless the template's container sets the variable.
	Env []corev1.EnvVar
	// Labels and Annotations are added to every Ray pod unless it has the key already.
	Labels, Annotations map[string]string
}

// IsZero reports whether there are no defaults at all.
func (d PodDefaults) IsZero() bool {
	return len(d.HeadSidecars) == 0 && len(d.WorkerSidecars) == 0 && len(d.Env) == 0 && len(d.Labels) == 0 && len(d.Annotations) == 0
}

// Sidecars are the sidecars of a head (head true) or worker pod.
func (d PodDefaults) Sidecars(head bool) []corev1.Container {
	if head {
		return d.HeadSidecars
	}
	return d.WorkerSidecars
}

// ContainerNames are the names of the containers raygate itself adds to Ray pods: a sidecar
// of the admin's must not take one (container and init container names share one namespace
// in a pod).
var ContainerNames = []string{AutoscalerContainer, CollectorContainer, WaitGCSInitContainer, WaitTLSInitContainer}

// Shell is the command raygate's scripts run with: bash -c, or bash -lc with LoginShell
// (KubeRay's option order).
func (s Settings) Shell() []string {
	if s.LoginShell {
		return []string{"/bin/bash", "-cl", "--"}
	}
	return []string{"/bin/bash", "-c", "--"}
}

// maxHeadPodPrefix is how much of the cluster name a deterministic head pod name keeps, as
// KubeRay cuts it.
const maxHeadPodPrefix = 50

// HeadPodName is the head pod's name with DeterministicHeadPodName: <cluster>-head, the
// cluster's name cut to 50 characters and lower-cased as KubeRay does.
func HeadPodName(cluster string) string {
	if len(cluster) > maxHeadPodPrefix {
		cluster = cluster[:maxHeadPodPrefix]
	}
	return strings.ToLower(cluster + "-head")
}

// applyDefaultMeta adds the default labels and annotations a pod does not have yet.
func applyDefaultMeta(pod *corev1.Pod, d PodDefaults) {
	for k, v := range d.Labels {
		if _, ok := pod.Labels[k]; !ok {
			pod.Labels[k] = v
		}
	}
	for k, v := range d.Annotations {
		if _, ok := pod.Annotations[k]; !ok {
			pod.Annotations[k] = v
		}
	}
}

// applyDefaultEnv adds the default variables the Ray container does not set, in order.
func applyDefaultEnv(c *corev1.Container, env []corev1.EnvVar) {
	for _, e := range env {
		if !slices.ContainsFunc(c.Env, func(have corev1.EnvVar) bool { return have.Name == e.Name }) {
			c.Env = append(c.Env, *e.DeepCopy())
		}
	}
}

// appendSidecars appends copies of the sidecars, after every container raygate added.
func appendSidecars(pod *corev1.Pod, sidecars []corev1.Container) {
	for i := range sidecars {
		pod.Spec.Containers = append(pod.Spec.Containers, *sidecars[i].DeepCopy())
	}
}

// HeadService is the head Service with these settings: a cluster IP instead of a headless
// Service with HeadClusterIPService (and then no early publication of the head: the Service
// has endpoints once the head is ready, as KubeRay's).
func (s Settings) HeadService(rc *rayv1.RayCluster) *corev1.Service {
	svc := HeadService(rc)
	if s.HeadClusterIPService && svc.Spec.ClusterIP == corev1.ClusterIPNone && rc.Spec.HeadGroupSpec.HeadService == nil {
		svc.Spec.ClusterIP = ""
		svc.Spec.PublishNotReadyAddresses = false
	}
	return svc
}
