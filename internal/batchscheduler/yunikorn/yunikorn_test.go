package yunikorn

import (
	"encoding/json"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
)

func cluster(labels, annotations map[string]string) *rayv1.RayCluster {
	tmpl := func(cpu string, sel map[string]string) corev1.PodTemplateSpec {
		return corev1.PodTemplateSpec{Spec: corev1.PodSpec{NodeSelector: sel, Containers: []corev1.Container{{Name: "ray", Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)},
		}}}}}
	}
	return &rayv1.RayCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "c", Labels: labels, Annotations: annotations},
		Spec: rayv1.RayClusterSpec{
			HeadGroupSpec: rayv1.HeadGroupSpec{Template: tmpl("1", nil)},
			WorkerGroupSpecs: []rayv1.WorkerGroupSpec{{
				GroupName: "gpu", Replicas: ptr.To[int32](3), MinReplicas: ptr.To[int32](1), MaxReplicas: ptr.To[int32](4),
				NumOfHosts: 2, Template: tmpl("4", map[string]string{"pool": "gpu"}),
			}},
		},
	}
}

func worker() *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{rayv1.NodeGroupLabelKey: "gpu"}}}
}

func TestDecoratePod(t *testing.T) {
	pod := worker()
	Scheduler{}.DecoratePod(cluster(map[string]string{AppIDLabelKey: "app-1", QueueLabelKey: "root.ray"}, nil), pod)
	if pod.Spec.SchedulerName != "yunikorn" || pod.Labels["applicationId"] != "app-1" || pod.Labels["queue"] != "root.ray" {
		t.Errorf("schedulerName %q, labels %v", pod.Spec.SchedulerName, pod.Labels)
	}
	if len(pod.Annotations) != 0 {
		t.Errorf("without the gang label: annotations %v", pod.Annotations)
	}

	pod = worker()
	Scheduler{}.DecoratePod(cluster(map[string]string{GangLabelKey: "true"}, nil), pod)
	if pod.Annotations[TaskGroupNameAnnotationKey] != "gpu" {
		t.Errorf("task group name %q", pod.Annotations[TaskGroupNameAnnotationKey])
	}
	var groups []TaskGroup
	if err := json.Unmarshal([]byte(pod.Annotations[TaskGroupsAnnotationKey]), &groups); err != nil {
		t.Fatal(err)
	}
	if len(groups) != 2 || groups[0].Name != "headgroup" || groups[0].MinMember != 1 ||
		groups[1].Name != "gpu" || groups[1].MinMember != 2 || groups[1].NodeSelector["pool"] != "gpu" {
		t.Fatalf("task groups %+v", groups)
	}
	if cpu := groups[1].MinResource[corev1.ResourceCPU]; cpu.Cmp(resource.MustParse("4")) != 0 {
		t.Errorf("gpu group minResource cpu %s, want one pod's 4", cpu.String())
	}

	pod = worker()
	Scheduler{}.DecoratePod(cluster(map[string]string{GangLabelKey: ""}, map[string]string{TaskGroupsAnnotationKey: `[{"name":"own"}]`}), pod)
	if pod.Annotations[TaskGroupsAnnotationKey] != `[{"name":"own"}]` {
		t.Errorf("the cluster's own task groups were not used: %q", pod.Annotations[TaskGroupsAnnotationKey])
	}
}
