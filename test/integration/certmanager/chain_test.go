package certmanager

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net/http"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/types"

	"github.com/raygate/raygate/internal/testenv/certmanager"
	"github.com/raygate/raygate/internal/testenv/tools"
)

// The specs share one install and run in order: issuance, then admission, then rotations.
var _ = Describe("the chart in cert-manager mode", Ordered, func() {
	var (
		sync   *certmanager.SecretSync
		op     *operatorProc
		certs  string
		cancel context.CancelFunc
	)

	BeforeAll(func(ctx context.Context) {
		_, err := runHelm("install", release, filepath.Join(tools.RepoRoot(), "charts", "raygate"),
			"--namespace", releaseNS, "--set", "webhook.certManager.enabled=true")
		Expect(err).NotTo(HaveOccurred())
		certs = filepath.Join(workDir, "webhook-certs")
	})

	AfterAll(func() {
		if op != nil {
			op.stop()
		}
		if cancel != nil {
			cancel()
		}
	})

	It("issues the webhook certificate from the CA chain", func(ctx context.Context) {
		for _, name := range []string{caCert, webhookCrt} {
			Eventually(func(g Gomega) {
				g.Expect(condition(certificate(ctx, name), "Ready")).To(Equal("True"))
			}).WithContext(ctx).WithTimeout(time.Minute).Should(Succeed(), name)
		}
		ca := parsePEM(secret(ctx, caCert).Data["tls.crt"])
		Expect(ca.IsCA).To(BeTrue())
		Expect(ca.Subject.CommonName).To(Equal("raygate-webhook-ca"))
		Expect(ca.Issuer.CommonName).To(Equal(ca.Subject.CommonName), "self-signed")

		tlsSecret := secret(ctx, webhookTLS)
		leaf := parsePEM(tlsSecret.Data["tls.crt"])
		Expect(leaf.IsCA).To(BeFalse())
		Expect(leaf.DNSNames).To(ConsistOf(
			"raygate-webhook-service.raygate-system.svc", "raygate-webhook-service.raygate-system.svc.cluster.local",
			"raygate-metrics.raygate-system.svc", "raygate-metrics.raygate-system.svc.cluster.local"))
		Expect(leaf.ExtKeyUsage).To(ConsistOf(x509.ExtKeyUsageServerAuth))
		Expect(leaf.Issuer.CommonName).To(Equal(ca.Subject.CommonName))
		Expect(verifies(secret(ctx, caCert).Data["tls.crt"], leaf)).To(Succeed())
		AddReportEntry("issued", map[string]string{
			"ca":      ca.Subject.String() + " valid until " + ca.NotAfter.UTC().Format(time.RFC3339),
			"serving": strings.Join(leaf.DNSNames, ",") + " issued by " + leaf.Issuer.String() + " valid until " + leaf.NotAfter.UTC().Format(time.RFC3339),
		})
	})

	It("injects the CA bundle into both webhook configurations", func(ctx context.Context) {
		leaf := parsePEM(secret(ctx, webhookTLS).Data["tls.crt"])
		Eventually(func(g Gomega) {
			for _, b := range injected(ctx) {
				g.Expect(verifies(b, leaf)).To(Succeed())
			}
		}).WithContext(ctx).WithTimeout(time.Minute).Should(Succeed())
	})

	It("turns ready only once the issued certificate is served", func(ctx context.Context) {
		// The Secret is not projected yet: the webhook server has nothing to serve and the
		// operator never turns ready.
		early := startOperator("operator-no-cert", certs)
		Consistently(func() int { return status(early.readyz) }).WithTimeout(3 * time.Second).ShouldNot(Equal(http.StatusOK))
		Eventually(func() string { return logOf("operator-no-cert") }).WithTimeout(30 * time.Second).Should(ContainSubstring("tls.crt"))
		_ = early.p.Stop(10 * time.Second) // it exits on its own, failing to load the certificate

		var sctx context.Context
		sctx, cancel = context.WithCancel(context.WithoutCancel(ctx))
		sync = &certmanager.SecretSync{Client: env.Client, Secret: types.NamespacedName{Namespace: releaseNS, Name: webhookTLS}, Dir: certs, Period: 8 * time.Second}
		go sync.Run(sctx)
		Eventually(sync.History).WithTimeout(10 * time.Second).ShouldNot(BeEmpty())

		op = startOperator("operator", certs)
		Eventually(func() int { return status(op.readyz) }).WithContext(ctx).WithTimeout(time.Minute).Should(Equal(http.StatusOK))
		served, err := servedCert(op.webhook)
		Expect(err).NotTo(HaveOccurred())
		Expect(sameCert(served, secret(ctx, webhookTLS).Data["tls.crt"])).To(BeTrue(), "serves the issued certificate")

		By("the metrics endpoint serves it too, and verifies as the chart's ServiceMonitor checks it: the CA of the Secret, the metrics Service's name")
		roots := x509.NewCertPool()
		Expect(roots.AppendCertsFromPEM(secret(ctx, webhookTLS).Data["ca.crt"])).To(BeTrue(), "the Secret's ca.crt")
		Eventually(func() error {
			d := &tls.Dialer{Config: &tls.Config{RootCAs: roots, ServerName: "raygate-metrics." + releaseNS + ".svc", MinVersion: tls.VersionTLS12}}
			c, err := d.DialContext(ctx, "tcp", op.metrics)
			if err == nil {
				_ = c.Close()
			}
			return err
		}).WithContext(ctx).WithTimeout(30 * time.Second).Should(Succeed())
		tunnel.SetBackends(op.webhook) // ready: the Service gets its endpoint
	})

	It("rejects an invalid RayService at kubectl apply with the webhook's message", func(ctx context.Context) {
		before, _ := tunnel.Counts()
		_, stderr, err := env.Kubectl(ctx, "", "apply", "-n", "default", "-f", filepath.Join(tools.RepoRoot(), "config", "samples", "rayservice_invalid.yaml"))
		Expect(err).To(HaveOccurred())
		// The webhook's answer: its warning, then every problem by field path.
		Expect(stderr).To(ContainSubstring(`GatewayClass "raygate-local" does not exist yet`))
		Expect(stderr).To(ContainSubstring(`The RayService "rayservice-invalid" is invalid`))
		Expect(stderr).To(ContainSubstring("spec.upgradeStrategy.clusterUpgradeOptions.stepSizePercent: Invalid value: 0"))
		Expect(stderr).To(ContainSubstring(`spec.serveConfigV2.applications[1].route_prefix: Duplicate value: "/fruit"`))
		after, _ := tunnel.Counts()
		Expect(after).To(BeNumerically(">", before), "the API server reached the webhook through its Service")
	})

	It("keeps admitting with zero refused writes while the serving certificate, then the CA, is renewed", func(ctx context.Context) {
		rotate(ctx, op, sync)
	})

	It("keeps admitting with zero refused writes through a helm upgrade to a new image and a helm rollback, 2 replicas, PDB, maxUnavailable 0", func(ctx context.Context) {
		upgradeAndRollback(ctx, op)
	}, NodeTimeout(20*time.Minute))

	It("runs every operator process with the chart's ServiceAccount, never refused by RBAC", func() {
		expectNoForbidden()
	})
})

func status(url string) int {
	resp, err := http.Get(url) //nolint:noctx // loopback probe
	if err != nil {
		return 0
	}
	_ = resp.Body.Close()
	return resp.StatusCode
}
