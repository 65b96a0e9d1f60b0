package raypod

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
)

func TestHeadServiceGoldens(t *testing.T) {
	golden(t, "service-default", HeadService(cluster()))
	golden(t, "service-overrides", HeadService(cluster(func(rc *rayv1.RayCluster) {
		rc.Spec.HeadServiceAnnotations = map[string]string{"team": "ml", "shared": "from-headServiceAnnotations"}
		rc.Spec.HeadGroupSpec.ServiceType = corev1.ServiceTypeNodePort
		rc.Spec.HeadGroupSpec.HeadService = &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: "custom-head", Namespace: "elsewhere", Labels: map[string]string{"custom": "yes", rayv1.ClusterLabelKey: "hijack"},
				Annotations: map[string]string{"shared": "from-headService"}},
			Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "other"}, SessionAffinity: corev1.ServiceAffinityClientIP,
				Ports: []corev1.ServicePort{{Name: "dashboard", Port: 80}}},
		}
	})))
}

func TestOptionalServiceGoldens(t *testing.T) {
	golden(t, "service-headless-workers", HeadlessWorkerService(cluster()))
	golden(t, "service-serve-default", ClusterServeService(cluster()))
	golden(t, "service-serve-nodeport-custom-port", ClusterServeService(cluster(func(rc *rayv1.RayCluster) {
		rc.Spec.HeadGroupSpec.ServiceType = corev1.ServiceTypeNodePort
		rc.Spec.HeadGroupSpec.Template.Spec.Containers[0].Ports = []corev1.ContainerPort{
			{Name: "serve", ContainerPort: 9000}, {Name: "serve-grpc", ContainerPort: 9001}, {Name: "dashboard", ContainerPort: 8265},
		}
	})))
}

func TestNeedsHeadlessWorkerService(t *testing.T) {
	cases := map[string]struct {
		hosts []int32
		want  bool
	}{
		"no worker groups":             {nil, false},
		"single-host groups":           {[]int32{1, 1}, false},
		"one multi-host group":         {[]int32{1, 2}, true},
		"zero hosts (before defaults)": {[]int32{0}, false},
	}
	for name, tc := range cases {
		spec := &rayv1.RayClusterSpec{}
		for _, h := range tc.hosts {
			spec.WorkerGroupSpecs = append(spec.WorkerGroupSpecs, rayv1.WorkerGroupSpec{NumOfHosts: h})
		}
		if got := NeedsHeadlessWorkerService(spec); got != tc.want {
			t.Errorf("%s: NeedsHeadlessWorkerService = %v, want %v", name, got, tc.want)
		}
	}
}

func TestWantsServeService(t *testing.T) {
	for value, want := range map[string]bool{"true": true, "True": false, "false": false, "": false} {
		rc := cluster(func(rc *rayv1.RayCluster) {
			rc.Annotations = map[string]string{rayv1.EnableServeServiceKey: value}
		})
		if got := WantsServeService(rc); got != want {
			t.Errorf("annotation %q: WantsServeService = %v, want %v", value, got, want)
		}
	}
	if WantsServeService(cluster()) {
		t.Error("a cluster without the annotation must not get a serve Service")
	}
}
