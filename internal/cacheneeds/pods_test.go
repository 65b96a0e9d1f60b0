package cacheneeds

import (
	"reflect"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
)

// fullPod sets every field a kubelet and a Ray pod template commonly set, and more.
func fullPod() *corev1.Pod {
	start := metav1.NewTime(time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC))
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: "demo-head-x", Namespace: "team-a", UID: "u1", ResourceVersion: "7", GenerateName: "demo-head-",
			Labels:          map[string]string{rayv1.ClusterLabelKey: "demo", rayv1.NodeTypeLabelKey: "head"},
			Annotations:     map[string]string{"a": "b"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "ray.io/v1", Kind: "RayCluster", Name: "demo", UID: "c1", Controller: ptr.To(true)}},
			ManagedFields:   []metav1.ManagedFieldsEntry{{Manager: "kubelet"}},
		},
		Spec: corev1.PodSpec{
			HostNetwork: true,
			Containers: []corev1.Container{
				{Name: "ray-head", Image: "rayproject/ray:2.52.0", Command: []string{"/bin/bash"}, Env: []corev1.EnvVar{{Name: "X", Value: "y"}},
					Ports:     []corev1.ContainerPort{{Name: "gcs-server", ContainerPort: 6379}, {Name: "serve", ContainerPort: 8001}},
					Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}}},
				{Name: "sidecar", Image: "busybox", Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}}},
			},
			InitContainers:     []corev1.Container{{Name: "init", Image: "busybox"}},
			RestartPolicy:      corev1.RestartPolicyNever,
			NodeName:           "node-1",
			SchedulerName:      "volcano",
			ServiceAccountName: "sa",
			Volumes:            []corev1.Volume{{Name: "shm"}},
		},
		Status: corev1.PodStatus{
			ObservedGeneration: 3, Phase: corev1.PodRunning, Reason: "R", Message: "M", QOSClass: corev1.PodQOSBurstable,
			HostIP: "127.0.0.1", PodIP: "127.0.0.2", PodIPs: []corev1.PodIP{{IP: "127.0.0.2"}}, StartTime: &start,
			Conditions: []corev1.PodCondition{
				{Type: corev1.PodScheduled, Status: corev1.ConditionTrue},
				{Type: corev1.PodReady, Status: corev1.ConditionFalse, Reason: "ContainersNotReady", Message: "not yet"},
				{Type: corev1.ContainersReady, Status: corev1.ConditionFalse},
			},
			ContainerStatuses: []corev1.ContainerStatus{
				{Name: "sidecar", Ready: true, Started: ptr.To(true), RestartCount: 1, Image: "busybox", ImageID: "sha", ContainerID: "c",
					State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: start}}},
				{Name: "ray-head", RestartCount: 4, Image: "rayproject/ray", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff", Message: "back-off"}},
					LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error"}}},
			},
			InitContainerStatuses: []corev1.ContainerStatus{{Name: "init", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{}}}},
		},
	}
}

// project reads a field the way a controller would: the oracle SlimPod is checked against.
var project = map[PodFields]func(p *corev1.Pod) any{
	ContainerNames: func(p *corev1.Pod) any {
		var names []string
		for _, c := range p.Spec.Containers {
			names = append(names, c.Name)
		}
		return names
	},
	ServePort: func(p *corev1.Pod) any {
		var ports []int32
		for i := range p.Spec.Containers {
			var port int32
			for _, cp := range p.Spec.Containers[i].Ports {
				if cp.Name == "serve" {
					port = cp.ContainerPort
				}
			}
			ports = append(ports, port)
		}
		return ports
	},
	RestartPolicy: func(p *corev1.Pod) any { return p.Spec.RestartPolicy },
	HostNetwork:   func(p *corev1.Pod) any { return p.Spec.HostNetwork },
	Phase:         func(p *corev1.Pod) any { return p.Status.Phase },
	ReadyCondition: func(p *corev1.Pod) any {
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodReady {
				return c
			}
		}
		return nil
	},
	PodIP:     func(p *corev1.Pod) any { return p.Status.PodIP },
	StartTime: func(p *corev1.Pod) any { return p.Status.StartTime },
	ContainerStates: func(p *corev1.Pod) any {
		out := map[string]corev1.ContainerState{}
		for _, c := range p.Status.ContainerStatuses {
			out[c.Name] = c.State
		}
		return out
	},
	ContainerRestarts: func(p *corev1.Pod) any {
		out := map[string]int32{}
		for _, c := range p.Status.ContainerStatuses {
			out[c.Name] = c.RestartCount
		}
		return out
	},
	ContainerLastStates: func(p *corev1.Pod) any {
		out := map[string]corev1.ContainerState{}
		for _, c := range p.Status.ContainerStatuses {
			out[c.Name] = c.LastTerminationState
		}
		return out
	},
}

func TestEveryPodFieldHasAProjectionAndAName(t *testing.T) {
	all := PodFields(1<<32 - 1)
	for _, f := range all.Each() {
		if project[f] == nil || podFieldNames[f] == "" {
			t.Errorf("pod field %b has no projection in this test or no name", f)
		}
	}
}

// A slim pod keeps each declared field as it was, and its metadata but managedFields.
func TestSlimPodKeepsWhatIsDeclared(t *testing.T) {
	all := PodFields(1<<32 - 1)
	for _, f := range all.Each() {
		full := fullPod()
		slim := SlimPod(fullPod(), f)
		if got, want := project[f](slim), project[f](full); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: kept %v, want %v", f, got, want)
		}
		full.ManagedFields = nil
		if !reflect.DeepEqual(slim.ObjectMeta, full.ObjectMeta) {
			t.Errorf("%s: metadata %+v, want %+v", f, slim.ObjectMeta, full.ObjectMeta)
		}
	}
}

// A slim pod keeps nothing undeclared: with the declared fields taken back out it is empty
// but for its metadata. So a new field a controller starts reading must be declared, or it
// reads a zero value (the controllers' read tests catch that).
func TestSlimPodKeepsNothingElse(t *testing.T) {
	all := PodFields(1<<32 - 1)
	fields := []PodFields{0, all}
	for _, f := range all.Each() {
		fields = append(fields, f, all&^f)
	}
	for _, fields := range fields {
		slim := SlimPod(fullPod(), fields)
		clearDeclared(slim, fields)
		slim.ObjectMeta = metav1.ObjectMeta{}
		if !reflect.DeepEqual(slim, &corev1.Pod{}) {
			t.Errorf("%s: kept more than declared: spec %+v, status %+v", fields, slim.Spec, slim.Status)
		}
	}
}

// clearDeclared zeroes the fields in f, and then drops lists left holding only zero values
// (the shape a declared field needs).
func clearDeclared(p *corev1.Pod, f PodFields) {
	for i := range p.Spec.Containers {
		c := &p.Spec.Containers[i]
		if f.Has(ContainerNames) {
			c.Name = ""
		}
		if f.Has(ServePort) {
			c.Ports = nil
		}
	}
	if reflect.DeepEqual(p.Spec.Containers, make([]corev1.Container, len(p.Spec.Containers))) {
		p.Spec.Containers = nil
	}
	if f.Has(RestartPolicy) {
		p.Spec.RestartPolicy = ""
	}
	if f.Has(HostNetwork) {
		p.Spec.HostNetwork = false
	}
	if f.Has(Phase) {
		p.Status.Phase = ""
	}
	if f.Has(PodIP) {
		p.Status.PodIP = ""
	}
	if f.Has(StartTime) {
		p.Status.StartTime = nil
	}
	if f.Has(ReadyCondition) && len(p.Status.Conditions) == 1 && p.Status.Conditions[0].Type == corev1.PodReady {
		p.Status.Conditions = nil
	}
	for i := range p.Status.ContainerStatuses {
		c := &p.Status.ContainerStatuses[i]
		c.Name = "" // kept with either container field
		if f.Has(ContainerStates) {
			c.State = corev1.ContainerState{}
		}
		if f.Has(ContainerRestarts) {
			c.RestartCount = 0
		}
		if f.Has(ContainerLastStates) {
			c.LastTerminationState = corev1.ContainerState{}
		}
	}
	if reflect.DeepEqual(p.Status.ContainerStatuses, make([]corev1.ContainerStatus, len(p.Status.ContainerStatuses))) {
		p.Status.ContainerStatuses = nil
	}
}

// The slices a slim pod holds are its own: a slim pod shares no list with the decoded object
// beyond what it keeps whole, so dropping the rest frees it.
func TestSlimPodDoesNotAliasDroppedLists(t *testing.T) {
	full := fullPod()
	ports := full.Spec.Containers[0].Ports
	slim := SlimPod(full, ServePort|ReadyCondition)
	if &slim.Spec.Containers[0].Ports[0] == &ports[1] {
		t.Error("the serve port shares the decoded ports list")
	}
	if len(slim.Status.Conditions) != 1 || cap(slim.Status.Conditions) != 1 {
		t.Errorf("conditions %v (cap %d): want the Ready condition alone", slim.Status.Conditions, cap(slim.Status.Conditions))
	}
}
