package validation

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
)

func TestStoredRayCluster(t *testing.T) {
	cases := map[string]struct {
		mutate func(*rayv1.RayCluster)
		want   field.ErrorList
	}{
		"create/update-only rules are skipped": {mutate: func(rc *rayv1.RayCluster) {
			rc.Spec.HeadGroupSpec.RayStartParams = map[string]string{"num-cpus": "0", "labels": "a=b"}
			rc.Spec.HeadGroupSpec.Resources = map[string]string{"CPU": "0"}
			rc.Spec.EnableInTreeAutoscaling = ptr.To(true)
			rc.Spec.AutoscalerOptions = &rayv1.AutoscalerOptions{Version: ptr.To(rayv1.AutoscalerVersionV2)}
			rc.Spec.HeadGroupSpec.Template.Spec.RestartPolicy = corev1.RestartPolicyAlways
			rc.Spec.WorkerGroupSpecs[0].Suspend = ptr.To(true)
		}},
		"rules a controller depends on remain": {
			mutate: func(rc *rayv1.RayCluster) {
				rc.Spec.TLSOptions = &rayv1.TLSOptions{}
				rc.Spec.WorkerGroupSpecs[0].GroupName = ""
				rc.Spec.WorkerGroupSpecs[0].Template.Spec.Containers = nil
				rc.Spec.WorkerGroupSpecs[0].MaxReplicas = ptr.To[int32](-1)
				rc.Spec.WorkerGroupSpecs[0].MinReplicas = ptr.To[int32](0)
				rc.Spec.WorkerGroupSpecs[0].Replicas = ptr.To[int32](20000)
				rc.Spec.WorkerGroupSpecs[0].Labels = map[string]string{"bad key!": "v"}
			},
			want: field.ErrorList{
				field.Forbidden(p("spec.tlsOptions"), ""),
				field.Required(p("spec.workerGroupSpecs[0].groupName"), ""),
				field.Required(p("spec.workerGroupSpecs[0].template.spec.containers"), ""),
				field.Invalid(p("spec.workerGroupSpecs[0].labels"), nil, ""),
				field.Invalid(p("spec.workerGroupSpecs[0].maxReplicas"), nil, ""),
				field.Invalid(p("spec.workerGroupSpecs[0].replicas"), nil, ""),
				{Type: field.ErrorTypeTooMany, Field: "spec.workerGroupSpecs"},
			},
		},
		"a RayService's cluster with its own strategy": {
			mutate: func(rc *rayv1.RayCluster) {
				rc.Labels = map[string]string{rayv1.OriginatedFromCRDLabelKey: rayv1.RayServiceKind}
				rc.Spec.UpgradeStrategy = &rayv1.RayClusterUpgradeStrategy{Type: ptr.To(rayv1.RayClusterRecreate)}
			},
			want: field.ErrorList{field.Forbidden(p("spec.upgradeStrategy.type"), "")},
		},
		"being deleted": {mutate: func(rc *rayv1.RayCluster) {
			rc.DeletionTimestamp = &metav1.Time{}
			rc.Spec.TLSOptions = &rayv1.TLSOptions{}
		}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			diffErrors(t, tc.want, Validator{}.StoredRayCluster(cluster(tc.mutate)))
		})
	}
}

func TestStoredRayService(t *testing.T) {
	cases := map[string]struct {
		svc  *rayv1.RayService
		want field.ErrorList
	}{
		// The controller runs it as NewCluster and says so; it is not frozen.
		"incremental with its gate off": {svc: incremental(nil)},
		"rayClusterConfig.upgradeStrategy is create/update-only": {svc: service(func(s *rayv1.RayService) {
			s.Spec.RayClusterSpec.UpgradeStrategy = &rayv1.RayClusterUpgradeStrategy{}
		})},
		"an incremental upgrade that could not make progress": {
			svc: incremental(func(s *rayv1.RayService) {
				opts(s).StepSizePercent = ptr.To[int32](0)
				s.Spec.RayClusterSpec.EnableInTreeAutoscaling = nil
			}),
			want: field.ErrorList{
				field.Required(p("spec.rayClusterConfig.enableInTreeAutoscaling"), ""),
				field.Invalid(p("spec.upgradeStrategy.clusterUpgradeOptions.stepSizePercent"), nil, ""),
			},
		},
		"serve config, head Service name and serve Service": {
			svc: service(func(s *rayv1.RayService) {
				s.Spec.ServeConfigV2 = "applications:\n  - {name: a}\n"
				s.Spec.RayClusterSpec.HeadGroupSpec.HeadService = &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "fixed"}}
				s.Spec.ServeService = &corev1.Service{Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName}}
			}),
			want: field.ErrorList{
				field.Forbidden(p("spec.rayClusterConfig.headGroupSpec.headService.metadata.name"), ""),
				field.Forbidden(p("spec.serveService.spec.type"), ""),
				field.Required(p("spec.serveConfigV2.applications[0].import_path"), ""),
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			diffErrors(t, tc.want, Validator{Gates: gateOff}.StoredRayService(tc.svc))
		})
	}
}
