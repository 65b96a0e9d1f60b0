package validation

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
)

func TestServiceOverrides(t *testing.T) {
	external := &corev1.Service{Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "dashboard.attacker.example"}}
	withIPs := &corev1.Service{Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, ExternalIPs: []string{"10.0.0.1"}}}
	// Everything else an override can say stays legal.
	legal := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{"service.beta.kubernetes.io/aws-load-balancer-internal": "true"}, Labels: map[string]string{"team": "ml"}},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, LoadBalancerSourceRanges: []string{"10.0.0.0/8"},
			Ports: []corev1.ServicePort{{Name: "serve", Port: 8000, TargetPort: intstr.FromInt32(8000)}}},
	}
	headless := &corev1.Service{Spec: corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone}}

	clusterCases := map[string]struct {
		mutate func(*rayv1.RayCluster)
		want   field.ErrorList
	}{
		"legal override": {mutate: func(rc *rayv1.RayCluster) { rc.Spec.HeadGroupSpec.HeadService = legal }},
		"headless":       {mutate: func(rc *rayv1.RayCluster) { rc.Spec.HeadGroupSpec.HeadService = headless }},
		"NodePort type":  {mutate: func(rc *rayv1.RayCluster) { rc.Spec.HeadGroupSpec.ServiceType = corev1.ServiceTypeNodePort }},
		"ExternalName": {
			mutate: func(rc *rayv1.RayCluster) { rc.Spec.HeadGroupSpec.HeadService = external },
			want: field.ErrorList{
				field.Forbidden(p("spec.headGroupSpec.headService.spec.type"), ""),
				field.Forbidden(p("spec.headGroupSpec.headService.spec.externalName"), ""),
			},
		},
		"externalIPs": {
			mutate: func(rc *rayv1.RayCluster) { rc.Spec.HeadGroupSpec.HeadService = withIPs },
			want:   field.ErrorList{field.Forbidden(p("spec.headGroupSpec.headService.spec.externalIPs"), "")},
		},
		"serviceType ExternalName": {
			mutate: func(rc *rayv1.RayCluster) { rc.Spec.HeadGroupSpec.ServiceType = corev1.ServiceTypeExternalName },
			want:   field.ErrorList{field.Forbidden(p("spec.headGroupSpec.serviceType"), "")},
		},
	}
	for name, tc := range clusterCases {
		t.Run("RayCluster "+name, func(t *testing.T) {
			errs, _ := RayCluster(cluster(tc.mutate), gateOff)
			diffErrors(t, tc.want, errs)
			diffErrors(t, tc.want, Validator{}.StoredRayCluster(cluster(tc.mutate)))
		})
	}

	serviceCases := map[string]struct {
		mutate func(*rayv1.RayService)
		want   field.ErrorList
	}{
		"legal serve Service": {mutate: func(s *rayv1.RayService) { s.Spec.ServeService = legal }},
		"ExternalName serve Service": {
			mutate: func(s *rayv1.RayService) { s.Spec.ServeService = external },
			want: field.ErrorList{
				field.Forbidden(p("spec.serveService.spec.type"), ""),
				field.Forbidden(p("spec.serveService.spec.externalName"), ""),
			},
		},
		"externalIPs on both": {
			mutate: func(s *rayv1.RayService) {
				s.Spec.ServeService = withIPs
				s.Spec.RayClusterSpec.HeadGroupSpec.HeadService = withIPs
			},
			want: field.ErrorList{
				field.Forbidden(p("spec.rayClusterConfig.headGroupSpec.headService.spec.externalIPs"), ""),
				field.Forbidden(p("spec.serveService.spec.externalIPs"), ""),
			},
		},
	}
	for name, tc := range serviceCases {
		t.Run("RayService "+name, func(t *testing.T) {
			errs, _ := RayService(service(tc.mutate), gateOff)
			diffErrors(t, tc.want, errs)
			diffErrors(t, tc.want, Validator{}.StoredRayService(service(tc.mutate)))
		})
	}
}

func TestServiceOverrideMessagesSayWhy(t *testing.T) {
	errs, _ := RayService(service(func(s *rayv1.RayService) {
		s.Spec.RayClusterSpec.HeadGroupSpec.HeadService = &corev1.Service{Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName}}
		s.Spec.ServeService = &corev1.Service{Spec: corev1.ServiceSpec{ExternalIPs: []string{"192.0.2.1"}}}
	}), gateOff)
	want := []string{
		"spec.rayClusterConfig.headGroupSpec.headService.spec.type: Forbidden: ExternalName is not allowed: " +
			"raygate calls the Ray dashboard through the head Service, so it would call an address the cluster's author chooses",
		"spec.serveService.spec.externalIPs: Forbidden: not allowed: every node sends traffic for a Service's external IPs to the Service (CVE-2020-8554), " +
			"so it would intercept traffic meant for those addresses",
	}
	if len(errs) != len(want) {
		t.Fatalf("got %v", errs)
	}
	for i := range want {
		if errs[i].Error() != want[i] {
			t.Errorf("got  %s\nwant %s", errs[i].Error(), want[i])
		}
	}
}
