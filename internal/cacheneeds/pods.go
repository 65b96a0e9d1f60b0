package cacheneeds

import (
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/raygate/raygate/internal/rayspec"
)

// PodFields is a set of pod fields a controller reads from cached pods. A cached pod always
// keeps its metadata (but managedFields): the controllers find, own, label and delete pods by
// it. Everything else is kept only when some controller declares it.
type PodFields uint32

const (
	// ContainerNames: spec.containers[*].name (container statuses are matched by name, the
	// Ray container being the first).
	ContainerNames PodFields = 1 << iota
	// ServePort: of each container in spec.containers, the port named "serve".
	ServePort
	// RestartPolicy: spec.restartPolicy.
	RestartPolicy
	// Phase: status.phase.
	Phase
	// ReadyCondition: the condition of type Ready in status.conditions, whole. The other
	// conditions the kubelet sets (PodScheduled, Initialized, ContainersReady,
	// PodReadyToStartContainers) are never kept.
	ReadyCondition
	// PodIP: status.podIP.
	PodIP
	// StartTime: status.startTime.
	StartTime
	// ContainerStates: status.containerStatuses[*].name and .state.
	ContainerStates
	// ContainerRestarts: status.containerStatuses[*].name and .restartCount.
	ContainerRestarts
	// ContainerLastStates: status.containerStatuses[*].name and .lastState (a RayJob's
	// SidecarMode submitter that restarted).
	ContainerLastStates
	// HostNetwork: spec.hostNetwork (a head pod in its node's network has the node's IP,
	// which raygate never calls as a dashboard).
	HostNetwork

	lastPodField = HostNetwork
)

var podFieldNames = map[PodFields]string{
	ContainerNames:      "spec.containers[*].name",
	ServePort:           "spec.containers[*].ports[name=serve]",
	RestartPolicy:       "spec.restartPolicy",
	Phase:               "status.phase",
	ReadyCondition:      "status.conditions[type=Ready]",
	PodIP:               "status.podIP",
	StartTime:           "status.startTime",
	ContainerStates:     "status.containerStatuses[*].state",
	ContainerRestarts:   "status.containerStatuses[*].restartCount",
	ContainerLastStates: "status.containerStatuses[*].lastState",
	HostNetwork:         "spec.hostNetwork",
}

// Each lists the single fields of the set, in declaration order.
func (f PodFields) Each() []PodFields {
	var out []PodFields
	for b := PodFields(1); b <= lastPodField; b <<= 1 {
		if f&b != 0 {
			out = append(out, b)
		}
	}
	return out
}

func (f PodFields) String() string {
	var names []string
	for _, b := range f.Each() {
		names = append(names, podFieldNames[b])
	}
	return "{" + strings.Join(names, ", ") + "}"
}

// Has reports whether every field of g is in f.
func (f PodFields) Has(g PodFields) bool { return f&g == g }

// SlimPod keeps of pod its metadata (without managedFields) and the fields in f, and drops
// the rest: it changes pod in place (the cache hands its transform a freshly decoded
// object) and returns it. Pods are only ever patched from the cache, never updated, so a
// slim copy can never overwrite a pod's spec or status.
func SlimPod(pod *corev1.Pod, f PodFields) *corev1.Pod {
	spec, st := pod.Spec, pod.Status
	pod.ManagedFields = nil
	pod.Spec, pod.Status = corev1.PodSpec{}, corev1.PodStatus{}
	if f&(ContainerNames|ServePort) != 0 && len(spec.Containers) > 0 {
		pod.Spec.Containers = make([]corev1.Container, len(spec.Containers))
		for i := range spec.Containers {
			c := &pod.Spec.Containers[i]
			if f.Has(ContainerNames) {
				c.Name = spec.Containers[i].Name
			}
			if f.Has(ServePort) {
				c.Ports = servePort(spec.Containers[i].Ports)
			}
		}
	}
	if f.Has(RestartPolicy) {
		pod.Spec.RestartPolicy = spec.RestartPolicy
	}
	if f.Has(HostNetwork) {
		pod.Spec.HostNetwork = spec.HostNetwork
	}
	if f.Has(Phase) {
		pod.Status.Phase = st.Phase
	}
	if f.Has(ReadyCondition) {
		pod.Status.Conditions = readyCondition(st.Conditions)
	}
	if f.Has(PodIP) {
		pod.Status.PodIP = st.PodIP
	}
	if f.Has(StartTime) {
		pod.Status.StartTime = st.StartTime
	}
	if f&(ContainerStates|ContainerRestarts|ContainerLastStates) != 0 && len(st.ContainerStatuses) > 0 {
		pod.Status.ContainerStatuses = make([]corev1.ContainerStatus, len(st.ContainerStatuses))
		for i, c := range st.ContainerStatuses {
			out := &pod.Status.ContainerStatuses[i]
			out.Name = c.Name
			if f.Has(ContainerStates) {
				out.State = c.State
			}
			if f.Has(ContainerRestarts) {
				out.RestartCount = c.RestartCount
			}
			if f.Has(ContainerLastStates) {
				out.LastTerminationState = c.LastTerminationState
			}
		}
	}
	return pod
}

// servePort is a new slice holding only the port named serve (nil without one).
func servePort(ports []corev1.ContainerPort) []corev1.ContainerPort {
	for _, p := range ports {
		if p.Name == rayspec.ServePortName {
			return []corev1.ContainerPort{p}
		}
	}
	return nil
}

// readyCondition is a new slice holding only the pod's Ready condition (nil without one).
func readyCondition(conds []corev1.PodCondition) []corev1.PodCondition {
	for _, c := range conds {
		if c.Type == corev1.PodReady {
			return []corev1.PodCondition{c}
		}
	}
	return nil
}
