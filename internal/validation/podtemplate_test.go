package validation

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/defaulting"
	"github.com/raygate/raygate/internal/features"
	"github.com/raygate/raygate/test/builders"
)

// padTemplate adds an environment variable to the Ray container so that the template
// encodes to exactly size bytes.
func padTemplate(t *testing.T, tmpl *corev1.PodTemplateSpec, size int) {
	t.Helper()
	c := &tmpl.Spec.Containers[rayv1.RayContainerIndex]
	c.Env = append(c.Env, corev1.EnvVar{Name: "PAD", Value: "x"})
	pad := &c.Env[len(c.Env)-1].Value
	// Length prefixes grow with the value, so converge on the size in a few steps.
	for range 10 {
		got := encodedSize(t, tmpl)
		if got == size {
			return
		}
		n := len(*pad) + size - got
		if n < 1 {
			t.Fatalf("the template already encodes to %d bytes, more than %d", got, size)
		}
		*pad = strings.Repeat("x", n)
	}
	t.Fatalf("padded template encodes to %d bytes, want %d", encodedSize(t, tmpl), size)
}

func encodedSize(t *testing.T, tmpl *corev1.PodTemplateSpec) int {
	t.Helper()
	b, err := tmpl.Marshal() // what Size computes without encoding
	if err != nil {
		t.Fatal(err)
	}
	return len(b)
}

func TestPodTemplateSizeBound(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(t *testing.T, rc *rayv1.RayCluster)
		want   field.ErrorList
	}{
		{name: "a sample's template", mutate: func(*testing.T, *rayv1.RayCluster) {}},
		{name: "a head template at the bound", mutate: func(t *testing.T, rc *rayv1.RayCluster) {
			padTemplate(t, &rc.Spec.HeadGroupSpec.Template, MaxPodTemplateBytes)
		}},
		{name: "a head template one byte over", mutate: func(t *testing.T, rc *rayv1.RayCluster) {
			padTemplate(t, &rc.Spec.HeadGroupSpec.Template, MaxPodTemplateBytes+1)
		}, want: field.ErrorList{field.TooLong(p("spec.headGroupSpec.template"), omit, MaxPodTemplateBytes)}},
		{name: "the second worker group's template far over", mutate: func(t *testing.T, rc *rayv1.RayCluster) {
			padTemplate(t, &rc.Spec.WorkerGroupSpecs[1].Template, 4*MaxPodTemplateBytes)
		}, want: field.ErrorList{field.TooLong(p("spec.workerGroupSpecs[1].template"), omit, MaxPodTemplateBytes)}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rc := builders.RayCluster("rc", "ns").WorkerGroups(builders.WorkerGroup("a", 1), builders.WorkerGroup("b", 1)).Obj()
			defaulting.RayCluster(rc)
			tc.mutate(t, rc)
			errs, _ := Validator{Gates: features.Static{}}.RayCluster(rc)
			diffErrors(t, tc.want, errs)
			if len(tc.want) > 0 && !strings.Contains(errs[0].Detail, "131072 bytes (128 KiB)") {
				t.Errorf("detail %q does not state the bound", errs[0].Detail)
			}
		})
	}
}

// A RayService's cluster and a RayJob's cluster are bounded the same way, at their own
// paths.
func TestPodTemplateSizeBoundInEmbeddedClusters(t *testing.T) {
	svc := service(func(s *rayv1.RayService) {
		padTemplate(t, &s.Spec.RayClusterSpec.WorkerGroupSpecs[0].Template, MaxPodTemplateBytes+10)
	})
	errs, _ := Validator{Gates: gateOn}.RayService(svc)
	diffErrors(t, field.ErrorList{field.TooLong(p("spec.rayClusterConfig.workerGroupSpecs[0].template"), omit, MaxPodTemplateBytes)}, errs)
}

// Ratcheting: a stored cluster whose template is over the bound (stored before the rule)
// can still be scaled; changing the template counts.
func TestPodTemplateSizeBoundRatchets(t *testing.T) {
	old := cluster(func(rc *rayv1.RayCluster) {
		padTemplate(t, &rc.Spec.WorkerGroupSpecs[0].Template, MaxPodTemplateBytes+1)
	})
	scaled := old.DeepCopy()
	scaled.Spec.WorkerGroupSpecs[0].Replicas = ptr.To[int32](2)
	v := Validator{Gates: features.Static{}}
	errs, _ := v.RayClusterUpdate(old, scaled)
	diffErrors(t, nil, errs)
	if st := v.StoredRayCluster(old); len(st) > 0 {
		t.Errorf("a stored cluster over the bound is not frozen: %v", st)
	}
	edited := old.DeepCopy()
	edited.Spec.WorkerGroupSpecs[0].Template.Spec.Containers[0].Image = "rayproject/ray:2.53.0"
	errs, _ = v.RayClusterUpdate(old, edited)
	diffErrors(t, field.ErrorList{field.TooLong(p("spec.workerGroupSpecs[0].template"), omit, MaxPodTemplateBytes)}, errs)
}
