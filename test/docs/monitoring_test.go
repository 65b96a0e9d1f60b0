package docs

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/defaulting"
	"github.com/raygate/raygate/internal/testenv/tools"
	"github.com/raygate/raygate/internal/validation"
)

// TestMonitoringExamplesAreAdmitted: the RayCluster docs/monitoring.md shows with a log
// shipper sidecar is admitted as written, without a warning.
func TestMonitoringExamplesAreAdmitted(t *testing.T) {
	path := filepath.Join(tools.RepoRoot(), "docs", "monitoring.md")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	clusters := 0
	for _, block := range yamlBlocks.FindAllSubmatch(b, -1) {
		for _, doc := range regexp.MustCompile(`(?m)^---\s*$`).Split(string(block[1]), -1) {
			var tm metav1.TypeMeta
			if yaml.Unmarshal([]byte(doc), &tm) != nil || tm.Kind != rayv1.RayClusterKind {
				continue
			}
			var rc rayv1.RayCluster
			if err := yaml.UnmarshalStrict([]byte(doc), &rc); err != nil {
				t.Errorf("a RayCluster of %s does not read strictly: %v\n%s", path, err, doc)
				continue
			}
			rc.Namespace = metav1.NamespaceDefault
			defaulting.RayCluster(&rc)
			errs, warnings := validation.Validator{}.RayCluster(&rc)
			if len(errs) > 0 || len(warnings) > 0 {
				t.Errorf("RayCluster %s of %s is not admitted cleanly:\nerrors: %v\nwarnings: %q", rc.Name, path, errs, warnings)
			}
			clusters++
		}
	}
	if clusters == 0 {
		t.Errorf("%s shows no RayCluster", path)
	}
}
