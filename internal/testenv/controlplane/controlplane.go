// Package controlplane starts a real control plane (etcd + kube-apiserver built by
// hack/tools.sh) for integration tests, the local mode and benchmarks, installs raygate's CRDs and, when asked, the Gateway
// API CRDs and raygate's webhook configuration, and runs the real kubectl against it.
package controlplane

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	rayscheme "github.com/raygate/raygate/apis/scheme"
	"github.com/raygate/raygate/internal/testenv/proc"
	"github.com/raygate/raygate/internal/testenv/tools"
)

// Options choose what the control plane gets besides raygate's CRDs.
type Options struct {
	// GatewayAPI installs the standard-channel Gateway API CRDs from the gateway-api module.
	GatewayAPI bool
	// Webhooks installs raygate's webhook configuration (config/webhook), pointed at a local
	// TLS server whose certificate envtest generates.
	Webhooks bool
	// APIServerArgs are extra kube-apiserver flags (key → value).
	APIServerArgs map[string]string
	// AdmissionConfiguration, when set, is the API server's admission configuration (an
	// apiserver.config.k8s.io/v1 AdmissionConfiguration, e.g. Pod Security defaults and
	// exemptions), written to a file for --admission-control-config-file.
	AdmissionConfiguration string
}

// Env is a running control plane.
type Env struct {
	Env        *envtest.Environment
	Config     *rest.Config
	Client     client.Client
	Kubeconfig string // path of an admin kubeconfig for kubectl
	AssetsDir  string
	// Minor is the Kubernetes minor of kube-apiserver and kubectl in AssetsDir (36 by
	// default, 30 under `make test-compat`); see wording.go.
	Minor int

	// FromSnapshot: etcd started from a copy of the CRDs-installed snapshot (snapshot.go).
	FromSnapshot bool

	admissionDir string // the admission configuration's directory, if any
	etcdDir      string // etcd's data directory when it is a snapshot's copy
}

// AssetsDir finds the control-plane binaries: $KUBEBUILDER_ASSETS (set by the Makefile), or
// else the cache `make tools` fills. It never builds them.
func AssetsDir() (string, error) { return tools.ControlPlaneDir(false) }

// GatewayAPICRDDir is the standard-channel CRD directory of the gateway-api module in use.
func GatewayAPICRDDir() (string, error) {
	cmd := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "sigs.k8s.io/gateway-api")
	cmd.Dir = tools.RepoRoot()
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("locating sigs.k8s.io/gateway-api: %w", err)
	}
	return filepath.Join(strings.TrimSpace(string(out)), "config", "crd", "standard"), nil
}

// gatewayAPICRDsFor lists the standard-channel Gateway API CRD files the kube-apiserver in
// assets (of that minor) accepts. It says on stderr which it leaves out (GatewayAPICRDMinMinor): only an
// older minor than the default control plane's, under `make test-compat`, leaves any out.
func gatewayAPICRDsFor(minor int) ([]string, error) {
	dir, err := GatewayAPICRDDir()
	if err != nil {
		return nil, err
	}
	files, skipped, err := gatewayAPICRDFiles(dir, minor)
	if err != nil {
		return nil, err
	}
	for _, f := range skipped {
		fmt.Fprintf(os.Stderr, "controlplane: Kubernetes 1.%d: not installing Gateway API's %s (needs 1.%d; raygate does not use it)\n", minor, f, GatewayAPICRDMinMinor(f))
	}
	return files, nil
}

// serviceClusterIPRange is every control plane's Service range; a snapshot's stored
// state depends on it (the kubernetes Service's ClusterIP is allocated from it).
const serviceClusterIPRange = "10.96.0.0/16"

// Start brings up a control plane. Call Stop when done.
//
// Its etcd starts from a snapshot in which the CRDs are already installed (snapshot.go),
// built on first use; with RAYGATE_CONTROLPLANE_SNAPSHOT=0, or extra API server flags that
// could change what is stored, it installs them on an empty etcd instead.
func Start(o Options) (*Env, error) {
	assets, err := AssetsDir()
	if err != nil {
		return nil, err
	}
	minor, err := apiServerMinor(assets)
	if err != nil {
		return nil, err
	}
	paths := []string{filepath.Join(tools.RepoRoot(), "config", "crd", "bases")}
	if o.GatewayAPI {
		files, err := gatewayAPICRDsFor(minor)
		if err != nil {
			return nil, err
		}
		paths = append(paths, files...)
	}
	files, err := crdFiles(paths)
	if err != nil {
		return nil, err
	}
	// The CRD files (megabytes of YAML) are parsed, when they must be installed, while etcd
	// and the API server start; a start from a snapshot never parses them.
	crds := sync.OnceValues(func() ([]*apiextensionsv1.CustomResourceDefinition, error) { return readCRDs(files) })
	snap, ok := snapshotFor(assets, files, o)
	if !ok || !snap.ready() {
		go func() { _, _ = crds() }()
	}
	if ok {
		e, err := start(assets, minor, o, crds, &snap)
		if err == nil {
			return e, nil
		}
		fmt.Fprintf(os.Stderr, "controlplane: starting from the etcd snapshot %s failed, installing the CRDs on an empty etcd instead: %v\n", snap.dir, err)
		snap.remove()
	}
	return start(assets, minor, o, crds, nil)
}

// newEnvironment is an envtest environment with the flags every control plane here shares
// (a snapshot's builder included).
func newEnvironment(assets string) *envtest.Environment {
	te := &envtest.Environment{BinaryAssetsDirectory: assets}
	// envtest allows etcd and the API server 20 s each to become healthy; `make test` starts
	// four packages' control planes at once on two cores, where a start can take longer. A
	// KUBEBUILDER_CONTROLPLANE_START_TIMEOUT the caller set still wins.
	if os.Getenv("KUBEBUILDER_CONTROLPLANE_START_TIMEOUT") == "" {
		te.ControlPlaneStartTimeout = 2 * time.Minute
	}
	api := te.ControlPlane.GetAPIServer()
	api.Configure().Set("service-cluster-ip-range", serviceClusterIPRange)
	// The suites run the manager as a ServiceAccount whose requests the RBAC authorizer
	// decides (envtest's default too; said here so that no change of default lets everything
	// through).
	api.Configure().Set("authorization-mode", "RBAC")
	return te
}

// start brings up one control plane: from a copy of snap when it is not nil, else on an
// empty etcd where it installs the CRDs.
func start(assets string, minor int, o Options, crds func() ([]*apiextensionsv1.CustomResourceDefinition, error), snap *snapshot) (_ *Env, err error) {
	e := &Env{AssetsDir: assets, Minor: minor, FromSnapshot: snap != nil}
	defer func() {
		if err != nil {
			e.removeDirs()
		}
	}()
	te := newEnvironment(assets)
	if snap != nil {
		if e.etcdDir, err = snap.dataDir(func(dir string) error { return buildSnapshot(assets, dir, crds) }); err != nil {
			return nil, err
		}
		te.ControlPlane.Etcd = &envtest.Etcd{DataDir: e.etcdDir}
	}
	if o.Webhooks {
		// envtest would pick a port that is free now; the manager listens on it only once
		// the control plane (and, in some suites, Kueue) has started, and meanwhile another
		// suite's listener could take it. A reserved port cannot be taken (proc.FreePort).
		port, err := proc.FreePort()
		if err != nil {
			return nil, err
		}
		te.WebhookInstallOptions = envtest.WebhookInstallOptions{
			Paths:            []string{filepath.Join(tools.RepoRoot(), "config", "webhook")},
			LocalServingHost: "127.0.0.1",
			LocalServingPort: port,
		}
	}
	api := te.ControlPlane.GetAPIServer()
	for k, v := range o.APIServerArgs {
		api.Configure().Set(k, v)
	}
	if o.AdmissionConfiguration != "" {
		if e.admissionDir, err = os.MkdirTemp("", "raygate-admission-config-"); err != nil {
			return nil, err
		}
		path := filepath.Join(e.admissionDir, "admission.yaml")
		if err := os.WriteFile(path, []byte(o.AdmissionConfiguration), 0o600); err != nil {
			return nil, err
		}
		api.Configure().Set("admission-control-config-file", path)
	}
	cfg, err := te.Start()
	var list []*apiextensionsv1.CustomResourceDefinition
	if err == nil {
		if snap != nil {
			if list, err = snap.served(); err == nil {
				err = waitForCRDs(cfg, list)
			}
		} else if list, err = crds(); err == nil {
			err = installCRDs(cfg, list)
		}
	}
	if err != nil {
		_ = te.Stop()
		return nil, fmt.Errorf("starting control plane: %w", err)
	}
	te.CRDs = list // from a snapshot: only what discovery is checked for
	e.Env, e.Config = te, cfg
	if e.Client, err = client.New(cfg, client.Options{Scheme: rayscheme.New()}); err != nil {
		_ = te.Stop()
		return nil, err
	}
	if e.Kubeconfig, err = writeKubeconfig(cfg); err != nil {
		_ = te.Stop()
		return nil, err
	}
	return e, nil
}

// Stop shuts the control plane down and removes the kubeconfig and etcd's data.
func (e *Env) Stop() error {
	err := e.Env.Stop()
	e.removeDirs()
	return err
}

func (e *Env) removeDirs() {
	if e.Kubeconfig != "" {
		_ = os.RemoveAll(filepath.Dir(e.Kubeconfig))
	}
	for _, d := range []string{e.admissionDir, e.etcdDir} {
		if d != "" {
			_ = os.RemoveAll(d)
		}
	}
}

// Kubectl runs the real kubectl against the control plane. stdin may be empty.
func (e *Env) Kubectl(ctx context.Context, stdin string, args ...string) (stdout, stderr string, err error) {
	return RunKubectl(ctx, filepath.Join(e.AssetsDir, "kubectl"), e.Kubeconfig, stdin, args...)
}

// RunKubectl runs a kubectl binary with a kubeconfig and returns what it printed. stdin may
// be empty. kubectl's discovery and HTTP caches go next to the kubeconfig (KubectlCacheDir),
// not to ~/.kube/cache: that one is never pruned, and every control plane here has a new
// port, so each one left its discovery and ray.io OpenAPI documents there (1.4 GB after a
// day of test runs).
func RunKubectl(ctx context.Context, kubectl, kubeconfig, stdin string, args ...string) (stdout, stderr string, err error) {
	cmd := exec.CommandContext(ctx, kubectl, append([]string{"--kubeconfig", kubeconfig}, args...)...)
	cmd.Env = EnvCachingBeside(kubeconfig)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	err = cmd.Run()
	return out.String(), errb.String(), err
}

// KubectlCacheDirEnv names the directory kubectl and Helm (cli-runtime's config flags) cache
// discovery and HTTP responses in; unset, ~/.kube/cache. (kubectl-raygate reads through a
// controller-runtime client and caches nothing on disk.)
const KubectlCacheDirEnv = "KUBECACHEDIR"

// KubectlCacheDir is where RunKubectl has kubectl cache what it reads through kubeconfig: a
// directory beside it, removed with it.
func KubectlCacheDir(kubeconfig string) string {
	return filepath.Join(filepath.Dir(kubeconfig), "kubectl-cache")
}

// EnvCachingBeside is this process's environment with KUBECACHEDIR set to
// KubectlCacheDir(kubeconfig): for any cli-runtime program (kubectl, helm) a test runs
// against the control plane of kubeconfig.
func EnvCachingBeside(kubeconfig string) []string {
	return append(os.Environ(), KubectlCacheDirEnv+"="+KubectlCacheDir(kubeconfig))
}

// WebhookServing returns the host, port and certificate directory the webhook server must
// use so the API server can reach it (Options.Webhooks).
func (e *Env) WebhookServing() (host string, port int, certDir string) {
	w := e.Env.WebhookInstallOptions
	return w.LocalServingHost, w.LocalServingPort, w.LocalServingCertDir
}

func writeKubeconfig(cfg *rest.Config) (string, error) {
	dir, err := os.MkdirTemp("", "raygate-kubeconfig-")
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, "kubeconfig")
	return path, WriteKubeconfig(cfg, path, "envtest")
}

// WriteKubeconfig writes an admin kubeconfig for cfg to path with one cluster, user and
// context named after name. The file is private (0600): it holds the admin's client key.
func WriteKubeconfig(cfg *rest.Config, path, name string) error {
	kc := clientcmdapi.NewConfig()
	kc.Clusters[name] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos[name+"-admin"] = &clientcmdapi.AuthInfo{ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData, Token: cfg.BearerToken}
	kc.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: name + "-admin", Namespace: "default"}
	kc.CurrentContext = name
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		return err
	}
	return os.Chmod(path, 0o600)
}

// StartControllers runs kube-controller-manager (built by `make tools` next to the API
// server) with only the named controllers, e.g. "namespace" to finish namespace deletions,
// which envtest alone never does. Its output goes to log. Stop it with the returned
// function (it is also stopped when ctx ends).
func (e *Env) StartControllers(ctx context.Context, log io.Writer, controllers ...string) (stop func(), err error) {
	ctx, cancel := context.WithCancel(ctx)
	cmd := exec.CommandContext(ctx, filepath.Join(e.AssetsDir, "kube-controller-manager"),
		"--kubeconfig="+e.Kubeconfig,
		"--controllers="+strings.Join(controllers, ","),
		"--leader-elect=false",
		"--secure-port=0", // no HTTPS endpoint, so no authentication configuration either
		"--use-service-account-credentials=false",
	)
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		cancel()
		return nil, fmt.Errorf("starting kube-controller-manager: %w", err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	return func() { cancel(); <-done }, nil
}
