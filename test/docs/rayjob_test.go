// Package docs checks the manifests the user documentation shows: each is admitted by
// raygate's defaulting and validation as written, without a warning.
package docs

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/defaulting"
	"github.com/raygate/raygate/internal/testenv/tools"
	"github.com/raygate/raygate/internal/validation"
)

// yamlBlocks are the ```yaml fenced blocks of a Markdown file.
var yamlBlocks = regexp.MustCompile("(?s)```yaml\n(.*?)```")

func TestRayJobExamplesAreAdmitted(t *testing.T) {
	path := filepath.Join(tools.RepoRoot(), "docs", "rayjob.md")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var modes []rayv1.JobSubmissionMode
	for _, m := range yamlBlocks.FindAllSubmatch(b, -1) {
		var tm metav1.TypeMeta
		if yaml.Unmarshal(m[1], &tm) != nil || tm.Kind != rayv1.RayJobKind {
			continue
		}
		var job rayv1.RayJob
		if err := yaml.UnmarshalStrict(m[1], &job); err != nil {
			t.Errorf("a RayJob of %s does not read strictly: %v\n%s", path, err, m[1])
			continue
		}
		job.Namespace = metav1.NamespaceDefault
		defaulting.RayJob(&job)
		errs, warnings := validation.Validator{}.RayJob(&job)
		if len(errs) > 0 || len(warnings) > 0 {
			t.Errorf("RayJob %s of %s is not admitted cleanly:\nerrors: %v\nwarnings: %q", job.Name, path, errs, warnings)
		}
		modes = append(modes, job.Spec.SubmissionMode)
	}
	slices.Sort(modes)
	want := []rayv1.JobSubmissionMode{rayv1.HTTPMode, rayv1.InteractiveMode, rayv1.K8sJobMode, rayv1.SidecarMode}
	if !slices.Equal(modes, want) {
		t.Errorf("%s shows RayJobs in modes %v; want one worked example per mode %v", path, modes, want)
	}
}
