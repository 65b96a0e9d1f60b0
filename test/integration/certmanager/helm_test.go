package certmanager

import (
	"bytes"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/raygate/raygate/internal/testenv/controlplane"
)

// runHelm runs Helm 4 against the control plane and returns stdout; stderr is folded into
// the error.
func runHelm(args ...string) (string, error) {
	var out, errb bytes.Buffer
	cmd := exec.Command(helm, append(args, "--kubeconfig", env.Kubeconfig)...)
	cmd.Env = controlplane.EnvCachingBeside(env.Kubeconfig)
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("%s %s: %w\n%s", filepath.Base(helm), strings.Join(args, " "), err, errb.String())
	}
	return out.String(), nil
}
