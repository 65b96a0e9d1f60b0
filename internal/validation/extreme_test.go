package validation

import (
	"math"
	"runtime"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/utils/ptr"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/test/builders"
)

// TestExtremeObjectsAreBounded validates objects at every extreme at once (int32 extremes
// in every count, a thousand worker groups, the largest and the densest serve configs,
// aliases that expand to billions of values) on create, update and as stored objects: no
// panic, and what one validation allocates stays far below what the counts ask for.
func TestExtremeObjectsAreBounded(t *testing.T) {
	configs := map[string]string{
		"largest":        builders.ServeConfigOfSize(MaxServeConfigBytes),
		"densest":        "applications: [" + strings.Repeat("0,", MaxServeConfigBytes/2-20) + "0]\n",
		"billion laughs": billionLaughs(),
		"over the size":  strings.Repeat("a", MaxServeConfigBytes+1),
	}
	for name, config := range configs {
		for _, count := range []int32{math.MinInt32, -1, 0, math.MaxInt32} {
			svc := service(func(s *rayv1.RayService) {
				s.Spec.ServeConfigV2 = config
				g := s.Spec.RayClusterSpec.WorkerGroupSpecs[0]
				g.Replicas, g.MinReplicas, g.MaxReplicas, g.NumOfHosts = ptr.To(count), ptr.To(count), ptr.To(count), count
				s.Spec.RayClusterSpec.WorkerGroupSpecs = nil
				for range 1000 {
					s.Spec.RayClusterSpec.WorkerGroupSpecs = append(s.Spec.RayClusterSpec.WorkerGroupSpecs, *g.DeepCopy())
				}
			})
			old := svc.DeepCopy()
			old.Spec.ServeConfigV2 = ""
			old.Spec.RayClusterSpec.WorkerGroupSpecs = old.Spec.RayClusterSpec.WorkerGroupSpecs[:1]

			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			_, _ = RayService(svc, gateOn)
			_, _ = RayServiceUpdate(old, svc, gateOn)
			_ = Validator{Gates: gateOn}.StoredRayService(svc)
			runtime.ReadMemStats(&after)
			// The densest config costs about 30 MB to parse, three times here; 1000 invalid
			// groups about 10 MB of errors and ratchet comparisons.
			if grew := after.TotalAlloc - before.TotalAlloc; grew > 160<<20 {
				t.Errorf("%s serve config, counts %d: three validations allocated %d MB", name, count, grew>>20)
			}
		}
	}
}

// TestErrorsAreCapped: a spec with tens of thousands of mistakes gets the first MaxErrors
// and a count of the rest, quickly, and so does the 422 response built from them.
func TestErrorsAreCapped(t *testing.T) {
	rc := cluster(func(rc *rayv1.RayCluster) {
		for range 20000 {
			rc.Spec.WorkerGroupSpecs = append(rc.Spec.WorkerGroupSpecs, rayv1.WorkerGroupSpec{Replicas: ptr.To[int32](20), MaxReplicas: ptr.To[int32](10)})
		}
	})
	start := time.Now()
	errs, warnings := RayCluster(rc, gateOff)
	// Each group: no name, no container; and 400,000 pods in all.
	if len(errs) != MaxErrors+1 || errs[MaxErrors].Error() != "spec: Too many: and 39901 more problems not listed; fix the ones above first" {
		t.Errorf("got %d errors, the last %v", len(errs), errs[len(errs)-1])
	}
	if len(warnings) != MaxWarnings+1 || warnings[MaxWarnings] != "and 19980 more warnings not listed" {
		t.Errorf("got %d warnings, the last %q", len(warnings), warnings[len(warnings)-1])
	}
	_ = apierrors.NewInvalid(rayv1.Kind(rayv1.RayClusterKind), rc.Name, errs).Error()
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("validating and rejecting 20,000 empty worker groups took %v", took)
	}
	if errs := (Validator{}).StoredRayCluster(rc); len(errs) != MaxErrors+1 {
		t.Errorf("stored: got %d errors", len(errs))
	}
	if errs, _ := RayClusterUpdate(cluster(nil), rc, gateOff); len(errs) != MaxErrors+1 {
		t.Errorf("update: got %d errors", len(errs))
	}
}
