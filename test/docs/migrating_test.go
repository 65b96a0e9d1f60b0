package docs

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/pflag"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/app"
	"github.com/raygate/raygate/internal/defaulting"
	"github.com/raygate/raygate/internal/testenv/tools"
	"github.com/raygate/raygate/internal/validation"
)

// refusedSampleRow is a row of the table of refused KubeRay samples in
// docs/migrating-from-kuberay.md: | `file` | Kind `name` | ... |
var refusedSampleRow = regexp.MustCompile("(?m)^\\| `([^`]+\\.yaml)` \\| (RayCluster|RayService) `([^`]+)` \\|")

// serviceTypeRefusals validates every RayCluster and RayService of KubeRay's samples with the
// manager's policy after parsing args, and returns "file Kind/name" of those refused for a
// Service type.
func serviceTypeRefusals(t *testing.T, samples string, args ...string) []string {
	t.Helper()
	opts := app.DefaultOptions()
	flags := pflag.NewFlagSet("raygate", pflag.ContinueOnError)
	opts.BindFlags(flags)
	if err := flags.Parse(args); err != nil {
		t.Fatal(err)
	}
	v := validation.Validator{Policy: opts.Policy(), Limits: opts.Limits()}
	var files []string
	if err := filepath.WalkDir(samples, func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(path, ".yaml") {
			files = append(files, path)
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	var refused []string
	for _, path := range files {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(samples, path)
		for _, doc := range regexp.MustCompile(`(?m)^---\s*$`).Split(string(b), -1) {
			if r, ok := refusedForServiceType(v, doc); ok {
				refused = append(refused, rel+" "+r)
			}
		}
	}
	slices.Sort(refused)
	return refused
}

// TestKubeRaySamplesAndServiceTypes: the KubeRay samples docs/migrating-from-kuberay.md says
// the ClusterIP-only default refuses are exactly those it refuses, and the value it gives
// (policy.allowedServiceTypes=null, which the chart renders as --allowed-service-types=)
// admits them all.
func TestKubeRaySamplesAndServiceTypes(t *testing.T) {
	samples, err := tools.Path("kuberay-samples")
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile(filepath.Join(tools.RepoRoot(), "docs", "migrating-from-kuberay.md"))
	if err != nil {
		t.Fatal(err)
	}
	var documented []string
	for _, m := range refusedSampleRow.FindAllStringSubmatch(string(doc), -1) {
		documented = append(documented, m[1]+" "+m[2]+"/"+m[3])
	}
	slices.Sort(documented)

	refused := serviceTypeRefusals(t, samples)
	if len(refused) == 0 || !slices.Equal(refused, documented) {
		t.Errorf("with the default --allowed-service-types, KubeRay's samples refused for their Service type are\n  %q\ndocs/migrating-from-kuberay.md's table names\n  %q", refused, documented)
	}
	if any := serviceTypeRefusals(t, samples, "--allowed-service-types="); len(any) > 0 {
		t.Errorf("with --allowed-service-types= (any type), still refused: %q", any)
	}
}

// refusedForServiceType validates one manifest if it is a RayCluster or a RayService and
// returns "Kind/name" when a Service type it asks for is refused.
func refusedForServiceType(v validation.Validator, doc string) (string, bool) {
	var tm metav1.TypeMeta
	if yaml.Unmarshal([]byte(doc), &tm) != nil {
		return "", false
	}
	var errs field.ErrorList
	var name string
	switch tm.Kind {
	case rayv1.RayClusterKind:
		var rc rayv1.RayCluster
		if yaml.Unmarshal([]byte(doc), &rc) != nil {
			return "", false
		}
		rc.Namespace, name = metav1.NamespaceDefault, rc.Name
		defaulting.RayCluster(&rc)
		errs, _ = v.RayCluster(&rc)
	case rayv1.RayServiceKind:
		var svc rayv1.RayService
		if yaml.Unmarshal([]byte(doc), &svc) != nil {
			return "", false
		}
		svc.Namespace, name = metav1.NamespaceDefault, svc.Name
		defaulting.RayService(&svc)
		errs, _ = v.RayService(&svc)
	default:
		return "", false
	}
	refused := slices.ContainsFunc(errs, func(e *field.Error) bool { return strings.Contains(e.Detail, "--allowed-service-types") })
	return tm.Kind + "/" + name, refused
}
