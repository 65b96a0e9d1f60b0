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
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	rayscheme "github.com/raygate/raygate/apis/scheme"
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

	admissionDir string // the admission configuration's directory, if any
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

// Start brings up a control plane. Call Stop when done.
func Start(o Options) (*Env, error) {
	assets, err := AssetsDir()
	if err != nil {
		return nil, err
	}
	minor, err := apiServerMinor(assets)
	if err != nil {
		return nil, err
	}
	crds := []string{filepath.Join(tools.RepoRoot(), "config", "crd", "bases")}
	if o.GatewayAPI {
		files, err := gatewayAPICRDsFor(minor)
		if err != nil {
			return nil, err
		}
		crds = append(crds, files...)
	}
	// The CRD files (megabytes of YAML) are parsed while etcd and the API server start.
	crdsRead := readCRDsAsync(crds)
	// The CRDs are installed once the control plane runs (installCRDs), not by envtest,
	// which creates them one after another.
	te := &envtest.Environment{BinaryAssetsDirectory: assets}
	// envtest allows etcd and the API server 20 s each to become healthy; `make test` starts
	// four packages' control planes at once on two cores, where a start can take longer. A
	// KUBEBUILDER_CONTROLPLANE_START_TIMEOUT the caller set still wins.
	if os.Getenv("KUBEBUILDER_CONTROLPLANE_START_TIMEOUT") == "" {
		te.ControlPlaneStartTimeout = 2 * time.Minute
	}
	if o.Webhooks {
		te.WebhookInstallOptions = envtest.WebhookInstallOptions{
			Paths: []string{filepath.Join(tools.RepoRoot(), "config", "webhook")},
		}
	}
	api := te.ControlPlane.GetAPIServer()
	api.Configure().Set("service-cluster-ip-range", "10.96.0.0/16")
	// The suites run the manager as a ServiceAccount whose requests the RBAC authorizer
	// decides (envtest's default too; said here so that no change of default lets everything
	// through).
	api.Configure().Set("authorization-mode", "RBAC")
	for k, v := range o.APIServerArgs {
		api.Configure().Set(k, v)
	}
	var admissionDir string
	if o.AdmissionConfiguration != "" {
		if admissionDir, err = os.MkdirTemp("", "raygate-admission-config-"); err != nil {
			return nil, err
		}
		path := filepath.Join(admissionDir, "admission.yaml")
		if err := os.WriteFile(path, []byte(o.AdmissionConfiguration), 0o600); err != nil {
			return nil, err
		}
		api.Configure().Set("admission-control-config-file", path)
	}
	cfg, err := te.Start()
	read := <-crdsRead
	if err == nil {
		err = read.err
	}
	if err != nil {
		_ = te.Stop()
		return nil, fmt.Errorf("starting control plane: %w", err)
	}
	if err := installCRDs(cfg, read.crds); err != nil {
		_ = te.Stop()
		return nil, err
	}
	te.CRDs = read.crds
	e := &Env{Env: te, Config: cfg, AssetsDir: assets, Minor: minor, admissionDir: admissionDir}
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

// Stop shuts the control plane down and removes the kubeconfig.
func (e *Env) Stop() error {
	_ = os.RemoveAll(filepath.Dir(e.Kubeconfig))
	if e.admissionDir != "" {
		_ = os.RemoveAll(e.admissionDir)
	}
	return e.Env.Stop()
}

// Kubectl runs the real kubectl against the control plane. stdin may be empty.
func (e *Env) Kubectl(ctx context.Context, stdin string, args ...string) (stdout, stderr string, err error) {
	return RunKubectl(ctx, filepath.Join(e.AssetsDir, "kubectl"), e.Kubeconfig, stdin, args...)
}

// RunKubectl runs a kubectl binary with a kubeconfig and returns what it printed. stdin may
// be empty.
func RunKubectl(ctx context.Context, kubectl, kubeconfig, stdin string, args ...string) (stdout, stderr string, err error) {
	cmd := exec.CommandContext(ctx, kubectl, append([]string{"--kubeconfig", kubeconfig}, args...)...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	err = cmd.Run()
	return out.String(), errb.String(), err
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
