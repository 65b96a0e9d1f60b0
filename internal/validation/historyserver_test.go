package validation

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/features"
	"github.com/raygate/raygate/internal/raypod"
)

func TestHistoryServer(t *testing.T) {
	collector := func(o rayv1.CollectorOptions, more ...func(*rayv1.RayCluster)) func(*rayv1.RayCluster) {
		return func(rc *rayv1.RayCluster) {
			rc.Spec.HistoryServerOptions = &rayv1.HistoryServerOptions{CollectorOptions: &o}
			for _, m := range more {
				m(rc)
			}
		}
	}
	pinned := rayv1.CollectorOptions{Image: ptr.To("quay.io/kuberay/collector:v1.6.0")}
	defaultImage := fmt.Sprintf(WarnCollectorDefaultImage, "spec.historyServerOptions.collectorOptions.image", raypod.DefaultCollectorImage)
	cases := map[string]struct {
		mutate   func(*rayv1.RayCluster)
		want     field.ErrorList
		warnings []string
	}{
		"KubeRay's sample form": {mutate: collector(rayv1.CollectorOptions{
			Image: ptr.To("quay.io/kuberay/collector:v1.6.0"), ImagePullPolicy: ptr.To(corev1.PullIfNotPresent),
			Resources: &corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")},
				Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("200m")},
			},
			Env: []corev1.EnvVar{{Name: "STORAGE_BUCKET", Value: "s3://ray-history"}},
		})},
		"no collectorOptions, as KubeRay": {
			mutate: func(rc *rayv1.RayCluster) { rc.Spec.HistoryServerOptions = &rayv1.HistoryServerOptions{} },
			want:   field.ErrorList{field.Required(p("spec.historyServerOptions.collectorOptions"), "")},
		},
		"no image: a warning about the moving default": {mutate: collector(rayv1.CollectorOptions{}), warnings: []string{defaultImage}},
		"bad pull policy, request over limit, bad and reserved env": {
			mutate: collector(rayv1.CollectorOptions{
				Image:           ptr.To("c:1"),
				ImagePullPolicy: ptr.To(corev1.PullPolicy("Sometimes")),
				Resources: &corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi"), corev1.ResourceCPU: resource.MustParse("1")},
					Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("512Mi")},
				},
				Env: []corev1.EnvVar{
					{Name: "OK", Value: "1"},
					{Name: "1=BAD"},
					{Name: raypod.EnvCollectorPodIP, Value: "1.2.3.4"},
					{Name: ""},
					{Name: "BOTH", Value: "x", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
				},
			}),
			want: field.ErrorList{
				field.NotSupported[string](p("spec.historyServerOptions.collectorOptions.imagePullPolicy"), nil, nil),
				field.Invalid(p("spec.historyServerOptions.collectorOptions.resources.requests[memory]"), nil, ""),
				field.Invalid(p("spec.historyServerOptions.collectorOptions.env[1].name"), nil, ""),
				field.Forbidden(p("spec.historyServerOptions.collectorOptions.env[2].name"), ""),
				field.Required(p("spec.historyServerOptions.collectorOptions.env[3].name"), ""),
				field.Invalid(p("spec.historyServerOptions.collectorOptions.env[4].valueFrom"), nil, ""),
			},
		},
		"a template container named collector": {
			mutate: collector(pinned, func(rc *rayv1.RayCluster) {
				spec := &rc.Spec.WorkerGroupSpecs[0].Template.Spec
				spec.Containers = append(spec.Containers, corev1.Container{Name: raypod.CollectorContainer, Image: "x"})
			}),
			want: field.ErrorList{field.Forbidden(p("spec.workerGroupSpecs[0].template.spec.containers[1].name"), "")},
		},
		"the Ray container's own postStart hook: kept, with a warning": {
			mutate: collector(pinned, func(rc *rayv1.RayCluster) {
				rc.Spec.HeadGroupSpec.Template.Spec.Containers[0].Lifecycle = &corev1.Lifecycle{
					PostStart: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{"true"}}}}
			}),
			warnings: []string{fmt.Sprintf(WarnCollectorPostStart, "spec.headGroupSpec.template.spec.containers[0].lifecycle.postStart")},
		},
		"a container named collector is fine without the collector": {mutate: func(rc *rayv1.RayCluster) {
			spec := &rc.Spec.HeadGroupSpec.Template.Spec
			spec.Containers = append(spec.Containers, corev1.Container{Name: raypod.CollectorContainer, Image: "x"})
		}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			errs, warnings := RayCluster(cluster(tc.mutate), historyGateOn)
			diffErrors(t, tc.want, errs)
			diffWarnings(t, tc.warnings, warnings)
		})
	}
}

var historyGateOn = features.Static{features.RayClusterHistoryServer: true}

// The gate is off by default, as in KubeRay: historyServerOptions are refused on create with
// the gate's name and how to enable it; a cluster stored with them can still be changed
// otherwise.
func TestHistoryServerGate(t *testing.T) {
	rc := cluster(func(rc *rayv1.RayCluster) {
		rc.Spec.HistoryServerOptions = &rayv1.HistoryServerOptions{CollectorOptions: &rayv1.CollectorOptions{Image: ptr.To("c:1")}}
	})
	errs, _ := RayCluster(rc, features.Static{})
	diffErrors(t, field.ErrorList{field.Forbidden(p("spec.historyServerOptions"), "")}, errs)
	want := "spec.historyServerOptions: Forbidden: historyServerOptions needs the RayClusterHistoryServer feature gate, which is disabled; " +
		"enable it with --feature-gates=RayClusterHistoryServer=true on the manager, or the Helm value featureGates.RayClusterHistoryServer=true"
	if len(errs) == 1 && errs[0].Error() != want {
		t.Errorf("message:\n got %s\nwant %s", errs[0].Error(), want)
	}

	scaled := rc.DeepCopy()
	scaled.Spec.WorkerGroupSpecs[0].Replicas = ptr.To(*scaled.Spec.WorkerGroupSpecs[0].Replicas + 1)
	errs, _ = RayClusterUpdate(rc, scaled, features.Static{})
	diffErrors(t, nil, errs)

	changed := rc.DeepCopy()
	changed.Spec.HistoryServerOptions.CollectorOptions.Image = ptr.To("c:2")
	errs, _ = RayClusterUpdate(rc, changed, features.Static{})
	diffErrors(t, field.ErrorList{field.Forbidden(p("spec.historyServerOptions"), "")}, errs)

	if errs := (Validator{Gates: features.Static{}}).StoredRayCluster(rc); len(errs) != 0 {
		t.Errorf("a stored cluster is not frozen by the gate: %v", errs)
	}
}

// Ratcheting: a cluster stored with a collector env that a newer rule refuses can still be
// scaled.
func TestHistoryServerRatchet(t *testing.T) {
	old := cluster(func(rc *rayv1.RayCluster) {
		rc.Spec.HistoryServerOptions = &rayv1.HistoryServerOptions{CollectorOptions: &rayv1.CollectorOptions{
			Image: ptr.To("c:1"), Env: []corev1.EnvVar{{Name: raypod.EnvCollectorEventsPort, Value: "9999"}}}}
	})
	scaled := old.DeepCopy()
	scaled.Spec.WorkerGroupSpecs[0].Replicas = ptr.To(*scaled.Spec.WorkerGroupSpecs[0].Replicas + 1)
	errs, _ := RayClusterUpdate(old, scaled, historyGateOn)
	diffErrors(t, nil, errs)
}
