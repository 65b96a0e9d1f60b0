package validation

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/resource"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/defaulting"
	"github.com/raygate/raygate/internal/validation/fuzzer"
)

// Admission shares the objects under review with the views it builds (ClusterOf, the
// defaulted stored object, the effective strategy) instead of deep-copying them, so it must
// never write to them: the webhook reuses the decoded objects for the checks that follow.
func FuzzAdmitRayServiceLeavesObjectsAlone(f *testing.F) {
	f.Add([]byte("seed"))
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15})
	f.Add([]byte("a longer seed that fills more of the object's fields with values"))
	f.Fuzz(func(t *testing.T, data []byte) {
		var old, svc rayv1.RayService
		fill := fuzzer.New(data)
		fill.Fill(&svc)
		fill.Fill(&old)
		defaulting.RayService(&svc) // as the webhook sees it
		oldBefore, svcBefore := old.DeepCopy(), svc.DeepCopy()
		v := Validator{Gates: randomGates(data), Policy: strictPolicy}
		_, _ = v.AdmitRayService(fuzzNamespace(), nil, &svc)
		_, _ = v.AdmitRayService(fuzzNamespace(), &old, &svc)
		// A quantity caches its printed form when read; that is not a change.
		same := cmp.Comparer(func(a, b resource.Quantity) bool { return a.Cmp(b) == 0 && a.Format == b.Format })
		if d := cmp.Diff(svcBefore, &svc, same); d != "" {
			t.Fatalf("admission changed the object under review (-before +after):\n%s", d)
		}
		if d := cmp.Diff(oldBefore, &old, same); d != "" {
			t.Fatalf("admission changed the stored object (-before +after):\n%s", d)
		}
	})
}
