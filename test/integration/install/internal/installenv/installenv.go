// Package installenv is what the install suites (install, install/release) share: the Helm
// binaries, the suite's control plane with the CRDs the chart's objects need, and the file
// and Helm helpers both use.
package installenv

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/raygate/raygate/internal/testenv/controlplane"
	"github.com/raygate/raygate/internal/testenv/framework"
	"github.com/raygate/raygate/internal/testenv/framework/suite"
	"github.com/raygate/raygate/internal/testenv/tools"
)

// Helms are Helm 4, the CLI the docs use, and Helm 3, to check the chart for Helm 3's users
// (a first run builds each from source, about three minutes).
func Helms() (helm4, helm3 string) {
	var err error
	helm4, err = tools.Path("helm")
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	helm3, err = tools.Path("helm3")
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	return helm4, helm3
}

// Start starts the suite's control plane, installs the CRDs of the named tools
// (hack/tools.sh) and applies namespaces (YAML). The harness's grants go to a ServiceAccount
// of its own: the release's is what the RBAC specs check.
func Start(ctx context.Context, cp controlplane.Options, crdTools []string, namespaces string) *suite.Suite {
	harness := suite.Start(suite.Options{
		ControlPlane:   cp,
		ServiceAccount: framework.ServiceAccount{Namespace: "raygate-system", Name: "raygate-harness"},
	})
	for _, tool := range crdTools {
		dir, err := tools.Path(tool)
		gomega.Expect(err).NotTo(gomega.HaveOccurred())
		crds, err := envtest.InstallCRDs(harness.Env.Config, envtest.CRDInstallOptions{Paths: []string{dir}, ErrorIfPathMissing: true})
		gomega.Expect(err).NotTo(gomega.HaveOccurred())
		gomega.Expect(crds).NotTo(gomega.BeEmpty(), tool)
	}
	_, stderr, err := harness.Env.Kubectl(ctx, namespaces, "apply", "-f", "-")
	gomega.Expect(err).NotTo(gomega.HaveOccurred(), stderr)
	return harness
}

// ExecHelm runs a helm binary (Helm 3 or 4) and returns stdout; stderr is folded into the
// error.
func ExecHelm(bin string, args ...string) (string, error) {
	var out, errb bytes.Buffer
	cmd := exec.Command(bin, args...)
	for i, a := range args {
		// Against a control plane, Helm's discovery cache goes beside its kubeconfig.
		if kc, ok := strings.CutPrefix(a, "--kubeconfig="); ok {
			cmd.Env = controlplane.EnvCachingBeside(kc)
		} else if a == "--kubeconfig" && i+1 < len(args) {
			cmd.Env = controlplane.EnvCachingBeside(args[i+1])
		}
	}
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("%s %s: %w\n%s", filepath.Base(bin), strings.Join(args, " "), err, errb.String())
	}
	return out.String(), nil
}

// ReadFileOrEmpty is the file's content, "" if it does not exist (the assertions on it then
// say what is missing).
func ReadFileOrEmpty(path string) string {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return ""
	}
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	return string(b)
}
