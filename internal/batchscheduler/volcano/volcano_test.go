package volcano

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
)

func cluster(labels map[string]string, autoscaling bool) *rayv1.RayCluster {
	tmpl := func(cpu string) corev1.PodTemplateSpec {
		return corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "ray", Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse("1Gi")},
		}}}}}
	}
	return &rayv1.RayCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "test-cluster-0", Namespace: "ns", Labels: labels},
		Spec: rayv1.RayClusterSpec{
			EnableInTreeAutoscaling: ptr.To(autoscaling),
			HeadGroupSpec:           rayv1.HeadGroupSpec{Template: tmpl("1")},
			WorkerGroupSpecs: []rayv1.WorkerGroupSpec{{
				GroupName: "worker", Replicas: ptr.To[int32](3), MinReplicas: ptr.To[int32](1), MaxReplicas: ptr.To[int32](5),
				NumOfHosts: 2, Template: tmpl("2"),
			}},
		},
	}
}

func TestDesiredPodGroup(t *testing.T) {
	tests := []struct {
		name        string
		labels      map[string]string
		autoscaling bool
		wantMembers int64
		wantCPU     string
		wantSpec    map[string]any // other spec fields expected (nil: absent)
		wantErr     bool
	}{
		{name: "desired pods without the autoscaler", wantMembers: 1 + 3*2, wantCPU: "13",
			wantSpec: map[string]any{"queue": nil, "priorityClassName": nil, "networkTopology": nil}},
		{name: "minimum with the autoscaler", autoscaling: true, wantMembers: 1 + 1*2, wantCPU: "5"},
		{name: "queue and priority class from labels",
			labels:      map[string]string{QueueLabelKey: "kuberay-test-queue", PriorityClassLabelKey: "high", "ray.io/scheduler-name": "volcano"},
			wantMembers: 7, wantCPU: "13",
			wantSpec: map[string]any{"queue": "kuberay-test-queue", "priorityClassName": "high"}},
		{name: "network topology", labels: map[string]string{NetworkTopologyModeLabelKey: "hard", NetworkTopologyHighestTierLabelKey: "2"},
			wantMembers: 7, wantCPU: "13",
			wantSpec: map[string]any{"networkTopology": map[string]any{"mode": "hard", "highestTierAllowed": int64(2)}}},
		{name: "unparsable tier", labels: map[string]string{NetworkTopologyModeLabelKey: "hard", NetworkTopologyHighestTierLabelKey: "two"}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pg, err := Scheduler{}.DesiredPodGroup(cluster(tt.labels, tt.autoscaling))
			if tt.wantErr {
				if err == nil {
					t.Fatal("want an error")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if pg.GetName() != "ray-test-cluster-0-pg" || pg.GetNamespace() != "ns" || pg.GroupVersionKind() != PodGroupKind {
				t.Errorf("got %s %s/%s", pg.GroupVersionKind(), pg.GetNamespace(), pg.GetName())
			}
			if m, _, _ := unstructured.NestedInt64(pg.Object, "spec", "minMember"); m != tt.wantMembers {
				t.Errorf("minMember = %d, want %d", m, tt.wantMembers)
			}
			cpu, _, _ := unstructured.NestedString(pg.Object, "spec", "minResources", "cpu")
			if got := resource.MustParse(cpu); got.Cmp(resource.MustParse(tt.wantCPU)) != 0 {
				t.Errorf("minResources.cpu = %s, want %s", cpu, tt.wantCPU)
			}
			if phase, _, _ := unstructured.NestedString(pg.Object, "status", "phase"); phase != "Pending" {
				t.Errorf("status.phase = %q, want Pending", phase)
			}
			for k, want := range tt.wantSpec {
				got, found, _ := unstructured.NestedFieldNoCopy(pg.Object, "spec", k)
				if want == nil {
					if found {
						t.Errorf("spec.%s = %v, want absent", k, got)
					}
					continue
				}
				if !equal(got, want) {
					t.Errorf("spec.%s = %#v, want %#v", k, got, want)
				}
			}
		})
	}
}

func equal(a, b any) bool {
	am, aok := a.(map[string]any)
	bm, bok := b.(map[string]any)
	if aok && bok {
		if len(am) != len(bm) {
			return false
		}
		for k := range am {
			if !equal(am[k], bm[k]) {
				return false
			}
		}
		return true
	}
	return a == b
}

func TestUpdatePodGroupFollowsScale(t *testing.T) {
	rc := cluster(map[string]string{QueueLabelKey: "q"}, false)
	pg, _ := Scheduler{}.DesiredPodGroup(rc)
	if (Scheduler{}).UpdatePodGroup(pg, rc) {
		t.Fatal("an up-to-date PodGroup was changed")
	}
	// As read back from the API server: a quantity the server kept as written.
	_ = unstructured.SetNestedField(pg.Object, "13000m", "spec", "minResources", "cpu")
	if (Scheduler{}).UpdatePodGroup(pg, rc) {
		t.Fatal("an equal quantity written differently counted as a change")
	}
	rc.Spec.WorkerGroupSpecs[0].Replicas = ptr.To[int32](4)
	rc.Labels[QueueLabelKey] = "other"
	if !(Scheduler{}).UpdatePodGroup(pg, rc) {
		t.Fatal("a scale-up did not change the PodGroup")
	}
	if m, _, _ := unstructured.NestedInt64(pg.Object, "spec", "minMember"); m != 9 {
		t.Errorf("minMember = %d, want 9", m)
	}
	if cpu, _, _ := unstructured.NestedString(pg.Object, "spec", "minResources", "cpu"); cpu != "17" {
		t.Errorf("minResources.cpu = %s, want 17", cpu)
	}
	if q, _, _ := unstructured.NestedString(pg.Object, "spec", "queue"); q != "q" {
		t.Errorf("queue = %q, want it unchanged (q)", q)
	}
}

func TestDecoratePod(t *testing.T) {
	rc := cluster(map[string]string{QueueLabelKey: "q", PriorityClassLabelKey: "high", "other": "x"}, false)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{rayv1.NodeGroupLabelKey: "worker"}}}
	Scheduler{}.DecoratePod(rc, pod)
	if pod.Spec.SchedulerName != "volcano" {
		t.Errorf("schedulerName = %q", pod.Spec.SchedulerName)
	}
	wantAnn := map[string]string{"scheduling.k8s.io/group-name": "ray-test-cluster-0-pg", "volcano.sh/task-spec": "worker"}
	for k, v := range wantAnn {
		if pod.Annotations[k] != v {
			t.Errorf("annotation %s = %q, want %q", k, pod.Annotations[k], v)
		}
	}
	wantLabels := map[string]string{QueueLabelKey: "q", PriorityClassLabelKey: "high", rayv1.NodeGroupLabelKey: "worker"}
	if len(pod.Labels) != len(wantLabels) {
		t.Errorf("labels = %v, want %v", pod.Labels, wantLabels)
	}
	for k, v := range wantLabels {
		if pod.Labels[k] != v {
			t.Errorf("label %s = %q, want %q", k, pod.Labels[k], v)
		}
	}
}
