package defaulting_test

import (
	"reflect"
	"testing"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/defaulting"
	"github.com/raygate/raygate/internal/validation/fuzzer"
)

// FuzzDefaultRayJob: Default(Default(x)) == Default(x) for any RayJob, and the spec hash of
// its defaulted cluster spec survives storage and a second defaulting.
func FuzzDefaultRayJob(f *testing.F) {
	f.Add([]byte("seed"))
	f.Add([]byte{3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8})
	f.Fuzz(func(t *testing.T, data []byte) {
		var job rayv1.RayJob
		fuzzer.New(data).Fill(&job)
		once := job.DeepCopy()
		defaulting.RayJob(once)
		twice := once.DeepCopy()
		defaulting.RayJob(twice)
		if !reflect.DeepEqual(once, twice) {
			t.Fatalf("not idempotent:\nonce:  %+v\ntwice: %+v", once.Spec, twice.Spec)
		}
		if once.Spec.RayClusterSpec != nil {
			assertHashSurvivesStorage(t, once.Spec.RayClusterSpec)
		}
	})
}
