// Package kuberay runs KubeRay's operator (built by `make tools` from
// github.com/ray-project/kuberay/ray-operator) against a test control plane, to check that
// raygate takes over the objects KubeRay made, and that KubeRay accepts raygate's.
//
// KubeRay calls Ray dashboards at <head Service>.<namespace>.svc.cluster.local:8265 and Serve
// proxies at pod IPs, which do not exist here. Its HTTP clients honour HTTP_PROXY, so the
// process runs with HTTP_PROXY set to a Proxy on loopback that answers those addresses from
// the test's simulators and refuses everything else.
package kuberay

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"

	"github.com/raygate/raygate/internal/testenv/controlplane"
	"github.com/raygate/raygate/internal/testenv/proc"
	"github.com/raygate/raygate/internal/testenv/tools"
)

const (
	readyTimeout    = time.Minute
	stopGracePeriod = 20 * time.Second
)

// Options configure the KubeRay process.
type Options struct {
	// ProxyURL is the HTTP_PROXY the process uses (a Proxy's URL).
	ProxyURL string
	// Args are extra flags, e.g. "--feature-gates=...".
	Args []string
	// Log receives KubeRay's output.
	Log io.Writer
}

// KubeRay is a running KubeRay operator.
type KubeRay struct {
	proc *proc.Process
	// ProbePort is where its health probes listen on 127.0.0.1.
	ProbePort int
}

// InstallCRDs replaces raygate's RayJob CRD with KubeRay v1.5.1's own, for a cluster where
// KubeRay runs alone (the benchmarks' KubeRay runs), so KubeRay is measured on the schema its
// own install has. Never where raygate runs or takes a RayJob over: KubeRay's narrower schema
// prunes status fields raygate writes (the migration suite keeps raygate's CRD).
func InstallCRDs(env *controlplane.Env) error {
	dir, err := tools.Path("kuberay-crds")
	if err != nil {
		return err
	}
	data, err := os.ReadFile(filepath.Join(dir, "ray.io_rayjobs.yaml"))
	if err != nil {
		return err
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.Unmarshal(data, crd); err != nil {
		return fmt.Errorf("KubeRay's RayJob CRD: %w", err)
	}
	_, err = envtest.InstallCRDs(env.Config, envtest.CRDInstallOptions{CRDs: []*apiextensionsv1.CustomResourceDefinition{crd}, MaxTime: controlplane.CRDInstallTimeout})
	return err
}

// Start starts KubeRay (no leader election, metrics and probes on loopback) with env's admin
// kubeconfig and returns once it reports ready. Stop it when done.
func Start(ctx context.Context, env *controlplane.Env, opts Options) (*KubeRay, error) {
	bin, err := tools.Path("kuberay")
	if err != nil {
		return nil, err
	}
	if opts.Log == nil {
		opts.Log = io.Discard
	}
	k := &KubeRay{}
	metricsPort, err := proc.FreePort()
	if err != nil {
		return nil, err
	}
	if k.ProbePort, err = proc.FreePort(); err != nil {
		return nil, err
	}
	args := append([]string{
		"--enable-leader-election=false",
		fmt.Sprintf("--metrics-addr=127.0.0.1:%d", metricsPort),
		fmt.Sprintf("--health-probe-bind-address=127.0.0.1:%d", k.ProbePort),
		"--log-stdout-encoder=console",
	}, opts.Args...)
	cmd := exec.Command(bin, args...)
	env2 := append(os.Environ(), "KUBECONFIG="+env.Kubeconfig)
	if opts.ProxyURL != "" {
		env2 = append(env2, proxyEnv(opts.ProxyURL)...)
	}
	cmd.Env = env2
	cmd.Stdout, cmd.Stderr = opts.Log, opts.Log
	if k.proc, err = proc.Start("kuberay", cmd); err != nil {
		return nil, err
	}
	if err := k.proc.WaitReady(ctx, fmt.Sprintf("http://127.0.0.1:%d/readyz", k.ProbePort), readyTimeout); err != nil {
		_ = k.Stop()
		return nil, err
	}
	return k, nil
}

// Stop ends the process (SIGTERM, then SIGKILL after a grace period) and waits for it.
// Stop is safe to call twice.
func (k *KubeRay) Stop() error {
	return k.proc.Stop(stopGracePeriod)
}
