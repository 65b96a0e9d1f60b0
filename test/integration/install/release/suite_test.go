// Package release runs `make release` as a platform team's pipeline does and installs the
// chart it pushed. It is the install suite's slowest spec (ko builds the manager image), so
// it has its own package and API server: `go test -p` runs it beside the install package.
package release

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/raygate/raygate/internal/testenv/controlplane"
	"github.com/raygate/raygate/internal/testenv/framework"
	"github.com/raygate/raygate/internal/testenv/framework/suite"
	"github.com/raygate/raygate/internal/testenv/tools"
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
	var err error
	helm, err = tools.Path("helm")
	Expect(err).NotTo(HaveOccurred())
	helm3, err = tools.Path("helm3")
	Expect(err).NotTo(HaveOccurred())

	// No manager runs here: the harness's grants go to a ServiceAccount of its own.
	harness := suite.Start(suite.Options{
		ServiceAccount: framework.ServiceAccount{Namespace: "raygate-system", Name: "raygate-harness"},
	})
	env = harness.Env
	// The chart's certificates are cert-manager's kinds.
	dir, err := tools.Path("cert-manager-crds")
	Expect(err).NotTo(HaveOccurred())
	crds, err := envtest.InstallCRDs(env.Config, envtest.CRDInstallOptions{Paths: []string{dir}, ErrorIfPathMissing: true})
	Expect(err).NotTo(HaveOccurred())
	Expect(crds).NotTo(BeEmpty())
	// The watched namespace of the installed release.
	_, stderr, err := env.Kubectl(ctx, "apiVersion: v1\nkind: Namespace\nmetadata: {name: team-a}\n", "apply", "-f", "-")
	Expect(err).NotTo(HaveOccurred(), stderr)
}, NodeTimeout(20*time.Minute)) // a first run builds Helm 4 and Helm 3 from source (about 3 minutes each)

// runHelmBin runs the given helm binary (Helm 3 or 4) and returns stdout; stderr is folded
// into the error.
func runHelmBin(bin string, args ...string) (string, error) {
	var out, errb bytes.Buffer
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("%s %s: %w\n%s", filepath.Base(bin), strings.Join(args, " "), err, errb.String())
	}
	return out.String(), nil
}

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

// readFileOrEmpty is the file's content, "" if it does not exist (the assertions on it
// then say what is missing).
func readFileOrEmpty(path string) string {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return ""
	}
	Expect(err).NotTo(HaveOccurred())
	return string(b)
}
