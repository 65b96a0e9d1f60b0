package validation

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
)

var strict = Policy{
	AllowedGatewayClasses:  []string{"istio"},
	AllowedServiceTypes:    DefaultAllowedServiceTypes,
	AllowedImageRegistries: []string{"docker.io", "registry.example.com"},
}

func TestPolicyRayCluster(t *testing.T) {
	cases := map[string]struct {
		policy Policy
		mutate func(*rayv1.RayCluster)
		want   field.ErrorList
	}{
		"the zero policy allows anything": {mutate: func(rc *rayv1.RayCluster) {
			rc.Spec.HeadGroupSpec.ServiceType = corev1.ServiceTypeLoadBalancer
			rc.Spec.HeadGroupSpec.Template.Spec.Containers[0].Image = "quay.io/ray/ray:2.52.0"
		}},
		"a plain cluster passes the strict policy": {policy: strict},
		"Service types": {policy: strict, mutate: func(rc *rayv1.RayCluster) {
			rc.Spec.HeadGroupSpec.ServiceType = corev1.ServiceTypeNodePort
			rc.Spec.HeadGroupSpec.HeadService = &corev1.Service{Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer}}
		}, want: field.ErrorList{
			field.Forbidden(p("spec.headGroupSpec.serviceType"), ""),
			field.Forbidden(p("spec.headGroupSpec.headService.spec.type"), ""),
		}},
		"ClusterIP and headless stay allowed; ExternalName has its own rule": {policy: strict, mutate: func(rc *rayv1.RayCluster) {
			rc.Spec.HeadGroupSpec.ServiceType = corev1.ServiceTypeClusterIP
			rc.Spec.HeadGroupSpec.HeadService = &corev1.Service{Spec: corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone, Type: corev1.ServiceTypeExternalName}}
		}, want: field.ErrorList{field.Forbidden(p("spec.headGroupSpec.headService.spec.type"), "")}},
		"images of every container, init container and the autoscaler": {policy: strict, mutate: func(rc *rayv1.RayCluster) {
			rc.Spec.HeadGroupSpec.Template.Spec.InitContainers = []corev1.Container{{Name: "setup", Image: "ghcr.io/example/setup:1"}}
			rc.Spec.WorkerGroupSpecs[0].Template.Spec.Containers = append(rc.Spec.WorkerGroupSpecs[0].Template.Spec.Containers,
				corev1.Container{Name: "sidecar", Image: "registry.example.com/sidecar:1"}, corev1.Container{Name: "other", Image: "localhost:5000/x"})
			rc.Spec.AutoscalerOptions = &rayv1.AutoscalerOptions{Image: ptr.To("quay.io/ray/autoscaler:1")}
		}, want: field.ErrorList{
			field.Forbidden(p("spec.headGroupSpec.template.spec.initContainers[0].image"), ""),
			field.Forbidden(p("spec.workerGroupSpecs[0].template.spec.containers[2].image"), ""),
			field.Forbidden(p("spec.autoscalerOptions.image"), ""),
		}},
		"the history server collector's image": {policy: strict, mutate: func(rc *rayv1.RayCluster) {
			rc.Spec.HistoryServerOptions = &rayv1.HistoryServerOptions{CollectorOptions: &rayv1.CollectorOptions{Image: ptr.To("ghcr.io/example/collector:1")}}
		}, want: field.ErrorList{field.Forbidden(p("spec.historyServerOptions.collectorOptions.image"), "")}},
		"the collector's default image is from Docker Hub": {policy: Policy{AllowedImageRegistries: []string{"registry.example.com"}}, mutate: func(rc *rayv1.RayCluster) {
			rc.Spec.HistoryServerOptions = &rayv1.HistoryServerOptions{CollectorOptions: &rayv1.CollectorOptions{}}
			for _, tmpl := range []*corev1.PodTemplateSpec{&rc.Spec.HeadGroupSpec.Template, &rc.Spec.WorkerGroupSpecs[0].Template} {
				tmpl.Spec.Containers[0].Image = "registry.example.com/ray:2.52.0"
			}
		}, want: field.ErrorList{field.Forbidden(p("spec.historyServerOptions.collectorOptions.image"), "")}},
		"an allowed collector image passes": {policy: strict, mutate: func(rc *rayv1.RayCluster) {
			rc.Spec.HistoryServerOptions = &rayv1.HistoryServerOptions{CollectorOptions: &rayv1.CollectorOptions{Image: ptr.To("registry.example.com/collector:1")}}
		}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			errs, _ := Validator{Policy: tc.policy, Gates: historyGateOn}.RayCluster(cluster(tc.mutate))
			diffErrors(t, tc.want, errs)
		})
	}
}

func TestPolicyMessages(t *testing.T) {
	errs, _ := Validator{Policy: strict}.RayCluster(cluster(func(rc *rayv1.RayCluster) {
		rc.Spec.HeadGroupSpec.ServiceType = corev1.ServiceTypeLoadBalancer
		rc.Spec.WorkerGroupSpecs[0].Template.Spec.Containers[0].Image = "quay.io/ray/ray:2.52.0"
	}))
	want := []string{
		`spec.headGroupSpec.serviceType: Forbidden: Service type LoadBalancer is not allowed here; allowed: ClusterIP (the manager's --allowed-service-types, Helm value policy.allowedServiceTypes)`,
		`spec.workerGroupSpecs[0].template.spec.containers[0].image: Forbidden: "quay.io/ray/ray:2.52.0" is from registry quay.io, which is not allowed here; allowed: docker.io, registry.example.com (the manager's --allowed-image-registries, Helm value policy.allowedImageRegistries)`,
	}
	var got []string
	for _, e := range errs {
		got = append(got, e.Error())
	}
	diffWarnings(t, want, got)

	errs, _ = Validator{Gates: gateOn, Policy: strict}.RayService(incremental(func(s *rayv1.RayService) {
		s.Spec.UpgradeStrategy.ClusterUpgradeOptions.GatewayClassName = "envoy"
	}))
	diffWarnings(t, []string{`spec.upgradeStrategy.clusterUpgradeOptions.gatewayClassName: Forbidden: GatewayClass "envoy" is not allowed here; allowed: istio (the manager's --allowed-gateway-classes, Helm value policy.allowedGatewayClasses)`},
		[]string{errs.ToAggregate().Error()})
}

func TestPolicyRayService(t *testing.T) {
	errs, _ := Validator{Gates: gateOn, Policy: strict}.RayService(incremental(func(s *rayv1.RayService) {
		s.Spec.ServeService = &corev1.Service{Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeNodePort}}
		s.Spec.RayClusterSpec.HeadGroupSpec.ServiceType = corev1.ServiceTypeLoadBalancer
	}))
	diffErrors(t, field.ErrorList{
		field.Forbidden(p("spec.rayClusterConfig.headGroupSpec.serviceType"), ""),
		field.Forbidden(p("spec.serveService.spec.type"), ""),
	}, errs)
	errs, _ = Validator{Gates: gateOn, Policy: strict}.RayService(incremental(nil))
	diffErrors(t, nil, errs)
}

// A stored object a newer policy forbids can still be scaled and relabelled; changing the
// forbidden field, or adding another, is refused.
func TestPolicyRatchets(t *testing.T) {
	stored := cluster(func(rc *rayv1.RayCluster) {
		rc.Spec.HeadGroupSpec.ServiceType = corev1.ServiceTypeNodePort
		rc.Spec.WorkerGroupSpecs[0].Template.Spec.Containers[0].Image = "quay.io/ray/ray:2.52.0"
	})
	v := Validator{Policy: strict}
	scaled := stored.DeepCopy()
	scaled.Labels = map[string]string{"team": "ml"}
	scaled.Spec.WorkerGroupSpecs[0].Replicas = ptr.To[int32](3)
	errs, _ := v.RayClusterUpdate(stored, scaled)
	diffErrors(t, nil, errs)

	changed := stored.DeepCopy()
	changed.Spec.WorkerGroupSpecs[0].Template.Spec.Containers[0].Image = "quay.io/ray/ray:2.53.0"
	changed.Spec.WorkerGroupSpecs = append(changed.Spec.WorkerGroupSpecs, changed.Spec.WorkerGroupSpecs[0])
	changed.Spec.WorkerGroupSpecs[1].GroupName = "more"
	errs, _ = v.RayClusterUpdate(stored, changed)
	diffErrors(t, field.ErrorList{
		field.Forbidden(p("spec.workerGroupSpecs[0].template.spec.containers[0].image"), ""),
		field.Forbidden(p("spec.workerGroupSpecs[1].template.spec.containers[0].image"), ""),
	}, errs)
}

func TestPolicyAllows(t *testing.T) {
	if !strict.AllowsServiceType("") || !strict.AllowsServiceType(corev1.ServiceTypeClusterIP) || strict.AllowsServiceType(corev1.ServiceTypeNodePort) ||
		strict.AllowsServiceType(corev1.ServiceTypeExternalName) || (Policy{}).AllowsServiceType(corev1.ServiceTypeExternalName) || !(Policy{}).AllowsServiceType(corev1.ServiceTypeLoadBalancer) {
		t.Error("AllowsServiceType: unset is ClusterIP, ExternalName never, the zero policy any other")
	}
	if !strict.AllowsGatewayClass("istio") || strict.AllowsGatewayClass("envoy") || !(Policy{}).AllowsGatewayClass("envoy") {
		t.Error("AllowsGatewayClass")
	}
}

func TestImageRegistry(t *testing.T) {
	for image, want := range map[string]string{
		"rayproject/ray:2.52.0":               "docker.io",
		"ray":                                 "docker.io",
		"docker.io/rayproject/ray":            "docker.io",
		"registry.example.com/ray/ray:2.52.0": "registry.example.com",
		"localhost:5000/ray":                  "localhost:5000",
		"localhost/ray":                       "localhost",
		"ray@sha256:0123":                     "docker.io",
		"index.docker.io/ray":                 "index.docker.io",
	} {
		if got := ImageRegistry(image); got != want {
			t.Errorf("ImageRegistry(%q) = %q, want %q", image, got, want)
		}
	}
}
