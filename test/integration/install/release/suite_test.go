// Package release runs `make release` as a platform team's pipeline does and installs the
// chart it pushed. It is the install suite's slowest spec (ko builds the manager image), so
// it has its own package and API server: `go test -p` runs it beside the install package.
package release

import (
	"context"
	"errors"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/raygate/raygate/internal/testenv/controlplane"
	"github.com/raygate/raygate/internal/testenv/tools"
	"github.com/raygate/raygate/test/integration/install/internal/installenv"
)

var (
	env *controlplane.Env
	// helm is Helm 4, the CLI the docs use; helm3 checks the chart for Helm 3's users.
	helm, helm3 string
	repoRoot    = tools.RepoRoot()
	chartDir    = filepath.Join(repoRoot, "charts", "raygate")
)

func TestRelease(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "install: a release made by make release")
}

var _ = BeforeSuite(func(ctx context.Context) {
	helm, helm3 = installenv.Helms()
	// No manager runs here. The chart's certificates are cert-manager's kinds; team-a is the
	// installed release's watched namespace.
	env = installenv.Start(ctx, controlplane.Options{}, []string{"cert-manager-crds"},
		"apiVersion: v1\nkind: Namespace\nmetadata: {name: team-a}\n").Env
}, NodeTimeout(20*time.Minute)) // a first run builds Helm 4 and Helm 3 from source (about 3 minutes each)

// runHelmBin runs the given helm binary (Helm 3 or 4).
var runHelmBin = installenv.ExecHelm

// kinds lists the kind of every object of the manifests, in order.
func kinds(manifests string) []string {
	var out []string
	dec := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(manifests), 4096)
	for {
		var m struct{ Kind string }
		err := dec.Decode(&m)
		if errors.Is(err, io.EOF) {
			return out
		}
		Expect(err).NotTo(HaveOccurred())
		if m.Kind != "" {
			out = append(out, m.Kind)
		}
	}
}

var readFileOrEmpty = installenv.ReadFileOrEmpty
