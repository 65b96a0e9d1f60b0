// Package admission checks admission as users meet it: the real kube-apiserver calls
// raygate's webhooks over TLS, and the real kubectl prints what it gets back.
package admission

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/raygate/raygate/internal/app"
	"github.com/raygate/raygate/internal/defaulting"
	"github.com/raygate/raygate/internal/testenv/controlplane"
	"github.com/raygate/raygate/test/builders"
)

var env *controlplane.Env

func TestAdmission(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Admission webhooks")
}

var _ = BeforeSuite(func() {
	ctrl.SetLogger(zap.New(zap.WriteTo(GinkgoWriter), zap.UseDevMode(true)))
	// Generous: `make test` runs suites side by side on two cores, and a controller's first
	// pods took longer than Gomega's default second there.
	SetDefaultEventuallyTimeout(30 * time.Second)
	SetDefaultEventuallyPollingInterval(100 * time.Millisecond)
	var err error
	env, err = controlplane.Start(controlplane.Options{Webhooks: true, GatewayAPI: true})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(env.Stop)

	opts := app.DefaultOptions()
	opts.WebhookHost, opts.WebhookPort, opts.WebhookCertDir = env.WebhookServing()
	opts.MetricsAddr, opts.ProbeAddr = "0", "0"
	// Specs here check token authentication's own rules; refusing it when the option is off
	// is unit-tested (internal/validation).
	opts.TokenAuthentication = true
	// The controllers cache only a namespace no test uses: this suite is about admission,
	// and the objects it stores must stay exactly as admission left them.
	opts.WatchNamespaces = []string{"raygate-admission-unused"}
	mgr, err := app.NewManager(env.Config, opts)
	Expect(err).NotTo(HaveOccurred())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	DeferCleanup(func() {
		cancel()
		Eventually(done, 20*time.Second).Should(Receive(BeNil()))
	})

	// Ready once the API server gets an answer from the webhooks over TLS.
	probe := builders.RayService("probe", "default").Obj()
	defaulting.RayService(probe)
	Eventually(func() error {
		return env.Client.Create(context.Background(), probe.DeepCopy(), client.DryRunAll)
	}, 30*time.Second, 200*time.Millisecond).Should(Succeed())
})
