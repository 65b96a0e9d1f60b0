package rayjob

import (
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/cacheneeds"
)

// PodFields are the fields of cached pods the controller reads, of a job's head pod only:
//   - the container names and restart counts: the Ray container's restarts (a restarted Ray
//     forgets its jobs, so the pool's answers are forgotten with it);
//   - the pod IP and phase: where the Jobs API is, and whether it can answer;
//   - the containers' states and last states: SidecarMode's submitter container, its exit
//     code and its restarts;
//   - hostNetwork: a head in its node's network is never called (its IP is the node's).
const PodFields = cacheneeds.ContainerNames | cacheneeds.PodIP | cacheneeds.Phase |
	cacheneeds.ContainerStates | cacheneeds.ContainerRestarts | cacheneeds.ContainerLastStates | cacheneeds.HostNetwork

// CacheNeeds is what the controller watches and reads from the manager's cache: the kinds
// SetupWithManager registers (a test checks they match), which objects of each, and
// PodFields. Submitter Jobs and Services are cached only when raygate labelled them (it
// labels what it creates); Secrets (auth tokens) are read from the API server by name.
func CacheNeeds(Config) cacheneeds.Needs {
	created := cacheneeds.CreatedByRaygate
	return cacheneeds.Needs{Kinds: []cacheneeds.Kind{
		{Object: &rayv1.RayJob{}, Scope: cacheneeds.Everything},
		{Object: &rayv1.RayCluster{}, Scope: cacheneeds.Everything},
		{Object: &batchv1.Job{}, Scope: created},
		{Object: &corev1.Service{}, Scope: created},
		{Object: &corev1.Pod{}, Scope: cacheneeds.RayPods},
	}, Pods: PodFields}
}
