package localmode

import (
	"context"
	"fmt"
	"path/filepath"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rayscheme "github.com/raygate/raygate/apis/scheme"
	"github.com/raygate/raygate/internal/testenv/controlplane"
)

// Session is what a user of the environment needs: a kubeconfig, the kubectl built for the
// control plane, and a client. Start returns one inside Env; Attach opens one on an
// environment another process runs.
type Session struct {
	// Dir is the state directory (kubeconfig, operator log).
	Dir string
	// Kubeconfig is the admin kubeconfig, at a stable path in Dir.
	Kubeconfig string
	// KubectlPath is the kubectl built from the same Kubernetes version as the API server.
	KubectlPath string
	// Config and Client reach the API server as admin.
	Config *rest.Config
	Client client.WithWatch
}

// OperatorLog is the raygate manager's log file.
func (s *Session) OperatorLog() string { return filepath.Join(s.Dir, operatorLog) }

// Attach opens a session on the environment running in dir (make run in another terminal).
func Attach(dir string) (*Session, error) {
	if !Running(dir) {
		return nil, fmt.Errorf("no local environment is running in %s (start one with make run)", dir)
	}
	kubeconfig := KubeconfigPath(dir)
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", kubeconfig, err)
	}
	assets, err := controlplane.AssetsDir()
	if err != nil {
		return nil, err
	}
	return newSession(dir, kubeconfig, filepath.Join(assets, "kubectl"), cfg)
}

func newSession(dir, kubeconfig, kubectl string, cfg *rest.Config) (*Session, error) {
	c, err := client.NewWithWatch(cfg, client.Options{Scheme: rayscheme.New()})
	if err != nil {
		return nil, err
	}
	return &Session{Dir: dir, Kubeconfig: kubeconfig, KubectlPath: kubectl, Config: cfg, Client: c}, nil
}

// Kubectl runs the real kubectl against the environment; stdin may be empty.
func (s *Session) Kubectl(ctx context.Context, stdin string, args ...string) (stdout, stderr string, err error) {
	return controlplane.RunKubectl(ctx, s.KubectlPath, s.Kubeconfig, stdin, args...)
}

// writeKubeconfig writes an admin kubeconfig for cfg to path (mode 0600: it holds the
// admin's client key), with a context named raygate-local.
func writeKubeconfig(cfg *rest.Config, path string) error {
	return controlplane.WriteKubeconfig(cfg, path, "raygate-local")
}
