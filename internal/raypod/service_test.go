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
