// Package admission checks admission as users meet it: the real kube-apiserver calls
// raygate's webhooks over TLS, and the real kubectl prints what it gets back.
package admission

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/raygate/raygate/internal/defaulting"
	"github.com/raygate/raygate/internal/testenv/controlplane"
	"github.com/raygate/raygate/internal/testenv/framework"
	"github.com/raygate/raygate/internal/testenv/framework/suite"
	"github.com/raygate/raygate/test/builders"
)

var env *controlplane.Env

func TestAdmission(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Admission webhooks")
}

var _ = BeforeSuite(func() {
	// Generous: `make test` runs suites side by side on two cores, and a controller's first
	// pods took longer than Gomega's default second there.
	SetDefaultEventuallyTimeout(30 * time.Second)
	SetDefaultEventuallyPollingInterval(100 * time.Millisecond)
	opts := framework.ManagerOptions()
	opts.EnableWebhooks = true
	// Specs here check token authentication's own rules; refusing it when the option is off
	// is unit-tested (internal/validation).
	opts.TokenAuthentication = true
	// The controllers watch only a namespace one spec uses (v1alpha1_test.go): this suite is
	// about admission, and the objects it stores elsewhere must stay exactly as admission
	// left them.
	opts.WatchNamespaces = []string{"raygate-admission-unused"}
	env = suite.Start(suite.Options{ControlPlane: controlplane.Options{Webhooks: true, GatewayAPI: true}, Manager: &opts}).Env

	// Ready once the API server gets an answer from the webhooks over TLS.
	probe := builders.RayService("probe", "default").Obj()
	defaulting.RayService(probe)
	Eventually(func() error {
		return env.Client.Create(context.Background(), probe.DeepCopy(), client.DryRunAll)
	}, 30*time.Second, 200*time.Millisecond).Should(Succeed())
})
