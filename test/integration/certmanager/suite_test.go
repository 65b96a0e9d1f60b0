// Package certmanager installs the chart in cert-manager mode with cert-manager's real
// controllers (hack/tools/cert-manager) issuing and injecting the webhook certificate, and
// the operator as a real process serving the issued certificate: the chain is issued, the
// CA bundle injected, admission works through the webhook Service, and keeps working with
// zero refused writes while the serving certificate and then the CA are renewed.
//
// Without a kubelet or kube-proxy, the test plays both: certmanager.SecretSync projects the
// Secret into the operator's certificate directory as a kubelet would, and the API server
// reaches the webhook Service through certmanager.Tunnel (its "cluster" egress), which
// forwards to the operator's loopback port once the operator is ready.
package certmanager

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/raygate/raygate/internal/testenv/certmanager"
	"github.com/raygate/raygate/internal/testenv/cmdbuild"
	"github.com/raygate/raygate/internal/testenv/controlplane"
	"github.com/raygate/raygate/internal/testenv/framework/suite"
	"github.com/raygate/raygate/internal/testenv/tools"
)

const (
	release    = "raygate"
	releaseNS  = "raygate-system"
	caCert     = "raygate-ca"
	webhookCrt = "raygate-webhook-cert"
	webhookTLS = "raygate-webhook-tls"
	mutating   = "raygate-system-raygate-mutating"
	validating = "raygate-system-raygate-validating"
)

var (
	env      *controlplane.Env
	tunnel   *certmanager.Tunnel
	helm     string
	operator string // the cmd/raygate binary
	workDir  string
	logDir   string
)

func TestCertManager(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "certmanager: the chart with cert-manager's real controllers")
}

var _ = BeforeSuite(func(ctx context.Context) {
	var err error
	helm, err = tools.Path("helm")
	Expect(err).NotTo(HaveOccurred())
	crds, err := tools.Path("cert-manager-crds")
	Expect(err).NotTo(HaveOccurred())
	_, err = tools.Path("cert-manager")
	Expect(err).NotTo(HaveOccurred())

	// A short directory: the tunnel's Unix socket path must fit in 108 bytes.
	workDir, err = os.MkdirTemp("", "rg-cm-")
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(os.RemoveAll, workDir)
	logDir = filepath.Join(workDir, "logs")
	Expect(os.MkdirAll(logDir, 0o700)).To(Succeed())

	tunnel, err = certmanager.StartTunnel(workDir, "443")
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(tunnel.Close)
	egress, err := tunnel.EgressConfig(workDir)
	Expect(err).NotTo(HaveOccurred())

	// The operator runs as a process with the release's ServiceAccount token (helpers_test.go),
	// under the RBAC the chart installs: what the API server refuses it is in its logs, which
	// are checked after every spec.
	harness := suite.Start(suite.Options{ControlPlane: controlplane.Options{GatewayAPI: true, APIServerArgs: map[string]string{"egress-selector-config-file": egress}}})
	env = harness.Env
	harness.WatchLogs(logDir)
	_, err = envtest.InstallCRDs(env.Config, envtest.CRDInstallOptions{Paths: []string{crds}, ErrorIfPathMissing: true})
	Expect(err).NotTo(HaveOccurred())

	operator = filepath.Join(workDir, "raygate")
	var out bytes.Buffer
	Expect(cmdbuild.Build(ctx, "raygate", operator, &out)).To(Succeed(), out.String())

	cmLog, err := os.Create(filepath.Join(logDir, "cert-manager.log"))
	Expect(err).NotTo(HaveOccurred())
	cm, err := certmanager.Start(context.WithoutCancel(ctx), env.Kubeconfig, cmLog)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(cm.Stop)

	_, stderr, err := env.Kubectl(ctx, "", "create", "namespace", releaseNS)
	Expect(err).NotTo(HaveOccurred(), stderr)
}, NodeTimeout(10*time.Minute))

// dumpLogs prints the processes' logs when a spec failed.
var _ = ReportAfterEach(func(r SpecReport) {
	if !r.Failed() {
		return
	}
	entries, _ := os.ReadDir(logDir)
	for _, e := range entries {
		b, _ := os.ReadFile(filepath.Join(logDir, e.Name()))
		if len(b) > 6000 {
			b = b[len(b)-6000:]
		}
		GinkgoWriter.Printf("==== %s (tail)\n%s\n", e.Name(), b)
	}
})
