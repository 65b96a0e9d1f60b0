package podsecurity

import (
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/raypod"
)

// The API server names fields of the pod raygate builds; each maps to the field of the
// RayCluster a user would change.
func TestFieldPathMapsPodFieldsToTheTemplate(t *testing.T) {
	rc := cluster(func(rc *rayv1.RayCluster) {
		rc.Spec.EnableInTreeAutoscaling = ptr.To(true)
		head := &rc.Spec.HeadGroupSpec.Template
		head.Labels = map[string]string{"team": "ml"}
		head.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "1BAD="}, {Name: raypod.EnvClusterName, Value: "mine"}}
		head.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}
		head.Spec.Containers = append(head.Spec.Containers, corev1.Container{Name: "logger", Image: "busybox"})
		w := &rc.Spec.WorkerGroupSpecs[0].Template.Spec
		w.Containers[0].Env = []corev1.EnvVar{{Name: "A", Value: "1"}, {Name: "2BAD="}}
		w.Containers[0].Resources = corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")},
			Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")},
		}
		w.InitContainers = []corev1.Container{{Name: "setup", Image: "busybox"}}
		w.Volumes = []corev1.Volume{{Name: "scratch"}}
	})
	headPod := raypod.HeadPod(rc, "", raypod.Settings{})
	workerPod := raypod.WorkerPod(rc, &rc.Spec.WorkerGroupSpecs[0], nil, raypod.Settings{})
	spec := field.NewPath("spec")
	head := Origin{Template: &rc.Spec.HeadGroupSpec.Template, TemplatePath: spec.Child("headGroupSpec", "template"), SpecPath: spec}
	worker := Origin{Template: &rc.Spec.WorkerGroupSpecs[0].Template, TemplatePath: spec.Child("workerGroupSpecs").Index(0).Child("template"), SpecPath: spec}
	index := func(pod *corev1.Pod, container, env string) int {
		for _, c := range pod.Spec.Containers {
			if c.Name == container {
				for i, e := range c.Env {
					if e.Name == env {
						return i
					}
				}
			}
		}
		t.Fatalf("%s has no %s", container, env)
		return -1
	}
	mounts := len(headPod.Spec.Containers[0].VolumeMounts)
	if mounts < 2 {
		t.Fatalf("raygate adds the shared memory mount after the template's; got %d mounts", mounts)
	}
	tests := []struct {
		name   string
		origin Origin
		pod    *corev1.Pod
		field  string
		want   string
	}{
		{"a template's env item", head, headPod, "spec.containers[0].env[0].name", "spec.headGroupSpec.template.spec.containers[0].env[0].name"},
		{"an env item raygate replaced, by name", head, headPod, "spec.containers[0].env[" + strconv.Itoa(index(headPod, "ray-head", raypod.EnvClusterName)) + "].valueFrom",
			"spec.headGroupSpec.template.spec.containers[0].env[1].valueFrom"},
		{"an env item raygate added: the list", head, headPod, "spec.containers[0].env[" + strconv.Itoa(index(headPod, "ray-head", raypod.EnvRayPort)) + "].value",
			"spec.headGroupSpec.template.spec.containers[0].env"},
		{"a mount raygate added: the list", head, headPod, "spec.containers[0].volumeMounts[" + strconv.Itoa(mounts-1) + "].name", "spec.headGroupSpec.template.spec.containers[0].volumeMounts"},
		{"the template's mount", head, headPod, "spec.containers[0].volumeMounts[0].name", "spec.headGroupSpec.template.spec.containers[0].volumeMounts[0].name"},
		{"a second user container, by name", head, headPod, "spec.containers[1].image", "spec.headGroupSpec.template.spec.containers[1].image"},
		{"the autoscaler sidecar: autoscalerOptions", head, headPod, "spec.containers[2].resources.limits[cpu]", "spec.autoscalerOptions.resources.limits[cpu]"},
		{"the autoscaler sidecar's own field: autoscalerOptions", head, headPod, "spec.containers[2].ports", "spec.autoscalerOptions"},
		{"the autoscaler sidecar's env: the list", head, headPod, "spec.containers[2].env[0].name", "spec.autoscalerOptions.env"},
		{"a template label", head, headPod, "metadata.labels[team]", "spec.headGroupSpec.template.metadata.labels[team]"},
		{"a worker's resources", worker, workerPod, "spec.containers[0].resources.requests", "spec.workerGroupSpecs[0].template.spec.containers[0].resources.requests"},
		{"a worker's second env item", worker, workerPod, "spec.containers[0].env[1].name", "spec.workerGroupSpecs[0].template.spec.containers[0].env[1].name"},
		{"the user's init container", worker, workerPod, "spec.initContainers[0].image", "spec.workerGroupSpecs[0].template.spec.initContainers[0].image"},
		{"wait-gcs-ready's env comes from the Ray container", worker, workerPod, "spec.initContainers[1].env[1].name", "spec.workerGroupSpecs[0].template.spec.containers[0].env[1].name"},
		{"wait-gcs-ready's own command: the Ray container", worker, workerPod, "spec.initContainers[1].command", "spec.workerGroupSpecs[0].template.spec.containers[0]"},
		{"a pod-level field", worker, workerPod, "spec.volumes[0].emptyDir", "spec.workerGroupSpecs[0].template.spec.volumes[0].emptyDir"},
		{"a field the template does not set is named", worker, workerPod, "spec.containers[0].image", "spec.workerGroupSpecs[0].template.spec.containers[0].image"},
		{"a field below one the template does not set", worker, workerPod, "spec.securityContext.sysctls[0].name", "spec.workerGroupSpecs[0].template.spec.securityContext"},
		{"no path: the template", worker, workerPod, "", "spec.workerGroupSpecs[0].template"},
		{"an unreadable path: the template", worker, workerPod, "spec.containers[0", "spec.workerGroupSpecs[0].template"},
		{"no template: where it would go", Origin{TemplatePath: spec.Child("submitterPodTemplate")}, workerPod, "spec.containers[0].image", "spec.submitterPodTemplate"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.origin.FieldPath(tt.pod, tt.field).String(); got != tt.want {
				t.Errorf("FieldPath(%q) = %s; want %s", tt.field, got, tt.want)
			}
		})
	}
}

func TestParseFieldPath(t *testing.T) {
	tests := []struct {
		in   string
		want []any
		ok   bool
	}{
		{"spec.containers[0].env[12].name", []any{"spec", "containers", 0, "env", 12, "name"}, true},
		{"metadata.labels[app.kubernetes.io/name]", []any{"metadata", "labels", mapKey("app.kubernetes.io/name")}, true},
		{"spec.containers[1].resources.limits[nvidia.com/gpu]", []any{"spec", "containers", 1, "resources", "limits", mapKey("nvidia.com/gpu")}, true},
		{"spec", []any{"spec"}, true},
		{"spec.containers[0", nil, false},
	}
	for _, tt := range tests {
		got, ok := parseFieldPath(tt.in)
		if ok != tt.ok || !cmp.Equal(got, tt.want) {
			t.Errorf("parseFieldPath(%q) = %v, %v; want %v, %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
}

// A Pod Security violation the API server reports for a built pod is located as for a whole
// cluster; a RayJob's submitter sidecar counts as its Ray container.
func TestPodAt(t *testing.T) {
	rc := cluster(func(rc *rayv1.RayCluster) {
		rc.Spec.WorkerGroupSpecs[0].Template.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{Privileged: ptr.To(true)}
	})
	pod := raypod.WorkerPod(rc, &rc.Spec.WorkerGroupSpecs[0], nil, raypod.Settings{})
	sidecar := pod.Spec.Containers[0]
	sidecar.Name = rayv1.SubmitterContainerName
	pod.Spec.Containers = append(pod.Spec.Containers, sidecar)
	spec := field.NewPath("spec", "rayClusterSpec")
	o := Origin{Template: &rc.Spec.WorkerGroupSpecs[0].Template, TemplatePath: spec.Child("workerGroupSpecs").Index(0).Child("template"), SpecPath: spec}
	got := violations(NewEvaluator().PodAt(baseline, pod, o))
	want := []violation{{"spec.rayClusterSpec.workerGroupSpecs[0].template.spec.containers[0].securityContext.privileged",
		`privileged (containers "wait-gcs-ready", "ray-worker" must not set securityContext.privileged=true)`}}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
}
