package validation

import (
	"testing"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/defaulting"
	"github.com/raygate/raygate/internal/features"
	"github.com/raygate/raygate/internal/validation/fuzzer"
)

// FuzzValidateRayJob checks that RayJob validation never panics, whatever the object, the
// stored object, the gates, the limits, the policy and the namespace; that it never blames a
// value defaulting filled in; and that an update changing nothing is never refused.
func FuzzValidateRayJob(f *testing.F) {
	f.Add([]byte("seed"))
	f.Add([]byte{7, 7, 7, 7, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13})
	f.Add([]byte("a RayJob in SidecarMode with deletion rules and a clusterSelector"))
	f.Fuzz(func(t *testing.T, data []byte) {
		var old, job rayv1.RayJob
		fill := fuzzer.New(data)
		fill.Fill(&job)
		fill.Fill(&old)
		last := byte(0)
		if len(data) > 0 {
			last = data[len(data)-1]
		}
		gates := features.Static{features.RayJobDeletionPolicy: last&1 == 1, features.SidecarSubmitterRestart: last&2 == 2,
			features.RayClusterHistoryServer: last&4 == 4, features.RayClusterMTLS: last&8 == 8}

		errs, _ := RayJob(&job, gates)
		_ = errs.ToAggregate()
		errs, _ = RayJobUpdate(&old, &job, gates)
		_ = errs.ToAggregate()
		tight := Validator{Gates: gates, Limits: Limits{MaxPodsPerGroup: 1, MaxPodsPerCluster: 2}}
		errs, _ = tight.RayJobUpdate(&old, &job)
		_ = append(errs, tight.StoredRayJob(&job)...).ToAggregate()
		strict := Validator{Gates: gates, Policy: strictPolicy}
		errs, _ = strict.AdmitRayJob(fuzzNamespace(), &old, &job)
		_ = errs.ToAggregate()
		_, _ = TLSClusterPath(&job)

		defaulted := job.DeepCopy()
		defaulting.RayJob(defaulted)
		errs, _ = RayJob(defaulted, gates)
		assertNotBlamedForDefaults(t, &job, defaulted, errs)
		if errs, _ := RayJobUpdate(defaulted, defaulted.DeepCopy(), gates); len(errs) > 0 {
			t.Fatalf("an update that changes nothing was refused: %v", errs)
		}
		if errs, _ := strict.AdmitRayJob(fuzzNamespace(), defaulted, defaulted.DeepCopy()); len(errs) > 0 {
			t.Fatalf("an update that changes nothing was refused in a restricted namespace: %v", errs)
		}
	})
}
