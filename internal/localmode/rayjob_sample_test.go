package localmode

import (
	"os"
	"testing"

	"sigs.k8s.io/yaml"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/defaulting"
	"github.com/raygate/raygate/internal/validation"
)

// The next steps' RayJob sample is admitted without a warning, is the K8sJobMode job they
// describe, and cleans up after itself (test/e2e runs it to SUCCEEDED).
func TestRayJobSample(t *testing.T) {
	b, err := os.ReadFile(SamplePath(RayJobSample))
	if err != nil {
		t.Fatal(err)
	}
	var job rayv1.RayJob
	if err := yaml.UnmarshalStrict(b, &job); err != nil {
		t.Fatal(err)
	}
	if job.Name != RayJobSampleName {
		t.Errorf("the sample is named %q, the next steps say %q", job.Name, RayJobSampleName)
	}
	defaulting.RayJob(&job)
	errs, warnings := validation.Validator{}.RayJob(&job)
	if len(errs) > 0 || len(warnings) > 0 {
		t.Errorf("the RayJob sample is not admitted cleanly: %v %v", errs, warnings)
	}
	if job.Spec.SubmissionMode != rayv1.K8sJobMode || !job.Spec.ShutdownAfterJobFinishes || job.Spec.TTLSecondsAfterFinished <= 0 || job.Spec.RayClusterSpec == nil {
		t.Errorf("the sample is not a K8sJobMode job with its own cluster deleted after a TTL: %+v", job.Spec)
	}
}
