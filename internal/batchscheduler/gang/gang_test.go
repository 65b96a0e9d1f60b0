package gang

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
)

func podSpec(requests, limits corev1.ResourceList) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{
		Name: "ray", Resources: corev1.ResourceRequirements{Requests: requests, Limits: limits},
	}}}}
}

func cpuMem(cpu, mem string) corev1.ResourceList {
	return corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem)}
}

func group(name string, replicas, minR, maxR, hosts int32, tmpl corev1.PodTemplateSpec) rayv1.WorkerGroupSpec {
	return rayv1.WorkerGroupSpec{
		GroupName: name, Replicas: ptr.To(replicas), MinReplicas: ptr.To(minR), MaxReplicas: ptr.To(maxR),
		NumOfHosts: hosts, Template: tmpl,
	}
}

func TestSizes(t *testing.T) {
	head := podSpec(cpuMem("1", "2Gi"), cpuMem("1", "2Gi"))
	worker := podSpec(cpuMem("1", "1Gi"), nil)
	tests := []struct {
		name              string
		spec              rayv1.RayClusterSpec
		wantDesired       int32
		wantDesiredCPU    string
		wantDesiredMemory string
		wantMin           int32
		wantMinCPU        string
	}{
		{
			name:        "head only",
			spec:        rayv1.RayClusterSpec{HeadGroupSpec: rayv1.HeadGroupSpec{Template: head}},
			wantDesired: 1, wantDesiredCPU: "1", wantDesiredMemory: "2Gi", wantMin: 1, wantMinCPU: "1",
		},
		{
			name: "replicas times hosts",
			spec: rayv1.RayClusterSpec{HeadGroupSpec: rayv1.HeadGroupSpec{Template: head},
				WorkerGroupSpecs: []rayv1.WorkerGroupSpec{group("a", 2, 1, 5, 2, worker), group("b", 3, 0, 3, 1, worker)}},
			wantDesired: 1 + 4 + 3, wantDesiredCPU: "8", wantDesiredMemory: "9Gi", wantMin: 1 + 2, wantMinCPU: "3",
		},
		{
			name: "replicas clamped to maxReplicas",
			spec: rayv1.RayClusterSpec{HeadGroupSpec: rayv1.HeadGroupSpec{Template: head},
				WorkerGroupSpecs: []rayv1.WorkerGroupSpec{group("a", 9, 1, 2, 1, worker)}},
			wantDesired: 3, wantDesiredCPU: "3", wantDesiredMemory: "4Gi", wantMin: 2, wantMinCPU: "2",
		},
		{
			name: "suspended group counts nothing",
			spec: rayv1.RayClusterSpec{HeadGroupSpec: rayv1.HeadGroupSpec{Template: head},
				WorkerGroupSpecs: []rayv1.WorkerGroupSpec{func() rayv1.WorkerGroupSpec {
					g := group("a", 2, 2, 2, 1, worker)
					g.Suspend = ptr.To(true)
					return g
				}()}},
			wantDesired: 1, wantDesiredCPU: "1", wantDesiredMemory: "2Gi", wantMin: 1, wantMinCPU: "1",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := Desired(&tt.spec)
			if d.Members != tt.wantDesired {
				t.Errorf("Desired members = %d, want %d", d.Members, tt.wantDesired)
			}
			if got := d.Resources[corev1.ResourceCPU]; got.Cmp(resource.MustParse(tt.wantDesiredCPU)) != 0 {
				t.Errorf("Desired cpu = %s, want %s", got.String(), tt.wantDesiredCPU)
			}
			if got := d.Resources[corev1.ResourceMemory]; got.Cmp(resource.MustParse(tt.wantDesiredMemory)) != 0 {
				t.Errorf("Desired memory = %s, want %s", got.String(), tt.wantDesiredMemory)
			}
			m := Minimum(&tt.spec)
			if m.Members != tt.wantMin {
				t.Errorf("Minimum members = %d, want %d", m.Members, tt.wantMin)
			}
			if got := m.Resources[corev1.ResourceCPU]; got.Cmp(resource.MustParse(tt.wantMinCPU)) != 0 {
				t.Errorf("Minimum cpu = %s, want %s", got.String(), tt.wantMinCPU)
			}
		})
	}
}

func TestForSchedulingFollowsTheAutoscaler(t *testing.T) {
	spec := rayv1.RayClusterSpec{
		HeadGroupSpec:    rayv1.HeadGroupSpec{Template: podSpec(cpuMem("1", "1Gi"), nil)},
		WorkerGroupSpecs: []rayv1.WorkerGroupSpec{group("a", 4, 1, 10, 1, podSpec(cpuMem("1", "1Gi"), nil))},
	}
	if got := ForScheduling(&spec).Members; got != 5 {
		t.Errorf("without the autoscaler: %d members, want 5 (desired)", got)
	}
	spec.EnableInTreeAutoscaling = ptr.To(true)
	if got := ForScheduling(&spec).Members; got != 2 {
		t.Errorf("with the autoscaler: %d members, want 2 (minimum)", got)
	}
}

func TestPodResourcesLimitsStandInForMissingRequests(t *testing.T) {
	spec := corev1.PodSpec{Containers: []corev1.Container{
		{Name: "a", Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m")},
			Limits:   cpuMem("2", "1Gi"),
		}},
		{Name: "b", Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("1")}}},
	}}
	before := spec.DeepCopy()
	got := PodResources(&spec)
	want := corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("1Gi"),
		"nvidia.com/gpu": resource.MustParse("1"),
	}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for k, v := range want {
		if g := got[k]; g.Cmp(v) != 0 {
			t.Errorf("%s = %s, want %s", k, g.String(), v.String())
		}
	}
	if spec.Containers[0].Resources.Requests.Cpu().Cmp(*before.Containers[0].Resources.Requests.Cpu()) != 0 || len(spec.Containers[0].Resources.Requests) != 1 {
		t.Errorf("the pod spec was modified: %v", spec.Containers[0].Resources.Requests)
	}
}
