package schedulerplugins

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
)

func cluster(labels map[string]string) *rayv1.RayCluster {
	tmpl := func(cpu, mem string) corev1.PodTemplateSpec {
		rl := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem)}
		return corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "ray", Resources: corev1.ResourceRequirements{Requests: rl, Limits: rl}}}}}
	}
	// KubeRay's ray-cluster.scheduler-plugins.yaml sample.
	return &rayv1.RayCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "test-podgroup-0", Namespace: "ns", Labels: labels},
		Spec: rayv1.RayClusterSpec{
			EnableInTreeAutoscaling: ptr.To(true), // ignored: the gang is always the desired pods
			HeadGroupSpec:           rayv1.HeadGroupSpec{Template: tmpl("1", "2Gi")},
			WorkerGroupSpecs: []rayv1.WorkerGroupSpec{{
				GroupName: "worker", Replicas: ptr.To[int32](2), MinReplicas: ptr.To[int32](0), MaxReplicas: ptr.To[int32](2),
				NumOfHosts: 1, Template: tmpl("1", "1Gi"),
			}},
		},
	}
}

func TestDesiredPodGroup(t *testing.T) {
	pg, err := Scheduler{}.DesiredPodGroup(cluster(nil))
	if err != nil || pg != nil {
		t.Fatalf("without the gang label: got %v, %v; want no PodGroup", pg, err)
	}
	pg, err = Scheduler{}.DesiredPodGroup(cluster(map[string]string{GangLabelKey: "true"}))
	if err != nil {
		t.Fatal(err)
	}
	if pg.GroupVersionKind() != PodGroupKind || pg.GetName() != "test-podgroup-0" || pg.GetNamespace() != "ns" {
		t.Errorf("got %s %s/%s", pg.GroupVersionKind(), pg.GetNamespace(), pg.GetName())
	}
	if m, _, _ := unstructured.NestedInt64(pg.Object, "spec", "minMember"); m != 3 {
		t.Errorf("minMember = %d, want 3", m)
	}
	want := map[string]string{"cpu": "3", "memory": "4Gi"}
	for k, v := range want {
		got, _, _ := unstructured.NestedString(pg.Object, "spec", "minResources", k)
		if q := resource.MustParse(got); q.Cmp(resource.MustParse(v)) != 0 {
			t.Errorf("minResources.%s = %s, want %s", k, got, v)
		}
	}
	rc := cluster(map[string]string{GangLabelKey: ""})
	rc.Spec.WorkerGroupSpecs[0].Replicas = ptr.To[int32](1)
	if (Scheduler{}).UpdatePodGroup(pg, rc) {
		t.Error("the PodGroup was updated; KubeRay keeps it as created")
	}
}

func TestDecoratePod(t *testing.T) {
	pod := &corev1.Pod{}
	Scheduler{}.DecoratePod(cluster(nil), pod)
	if pod.Spec.SchedulerName != "scheduler-plugins-scheduler" || pod.Labels[PodGroupLabelKey] != "" {
		t.Errorf("without the gang label: schedulerName %q, labels %v", pod.Spec.SchedulerName, pod.Labels)
	}
	pod = &corev1.Pod{}
	Scheduler{}.DecoratePod(cluster(map[string]string{GangLabelKey: "true"}), pod)
	if pod.Spec.SchedulerName != "scheduler-plugins-scheduler" || pod.Labels[PodGroupLabelKey] != "test-podgroup-0" {
		t.Errorf("with the gang label: schedulerName %q, labels %v", pod.Spec.SchedulerName, pod.Labels)
	}
}
