// Package upgradematrix runs every upgrade action (pause then resume, abort, promote, pause
// then promote) at every phase of an upgrade against a real API server, straight and with
// an operator restart between recording the actions and carrying them out. It is the
// envtest counterpart of controllers/rayservice/phases_test.go, whose simulated world is
// the specification of the phases and their end states. Every RayService runs in its own
// namespace under the invariant checker. Webhooks are not installed, so actions admission
// would refuse (promote during a rollback) reach the controller, which ignores them.
package upgradematrix

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/features"
	"github.com/raygate/raygate/internal/testenv/controlplane"
	"github.com/raygate/raygate/internal/testenv/framework"
	"github.com/raygate/raygate/internal/testenv/framework/suite"
	"github.com/raygate/raygate/internal/testenv/invariants"
	"github.com/raygate/raygate/internal/testenv/raysim"
	"github.com/raygate/raygate/test/integration/internal/rstest"
)

const (
	gatewayClass = "fake-gw"
	deployDelay  = 300 * time.Millisecond
)

var (
	harness    *suite.Suite
	env        *controlplane.Env
	k8s        client.Client
	kubelet    *framework.Kubelet
	gw         *framework.Gateway
	dashboards *framework.Dashboards
	mgr        *framework.Manager
)

func TestUpgradeMatrix(t *testing.T) {
	RegisterFailHandler(Fail)
	SetDefaultEventuallyTimeout(45 * time.Second) // a loaded 2-core machine runs four upgrades at once
	SetDefaultEventuallyPollingInterval(100 * time.Millisecond)
	RunSpecs(t, "Upgrade actions at every phase")
}

var _ = BeforeSuite(func() {
	Expect(features.Enabled(features.RayServiceIncrementalUpgrade)).To(BeTrue())
	harness = suite.Start(suite.Options{ControlPlane: controlplane.Options{GatewayAPI: true}, Kubelet: &framework.KubeletOptions{}})
	env, k8s, kubelet = harness.Env, harness.Client, harness.Kubelet
	var err error
	gw, err = framework.StartGateway(env.Config, framework.GatewayOptions{ClassName: gatewayClass, Delay: 50 * time.Millisecond})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(gw.Stop)
	dashboards = framework.StartDashboardsWith(raysim.Options{DeployDelay: deployDelay})
	DeferCleanup(dashboards.Close)
	Expect(dashboards.ListenOnPods(env.Config)).To(Succeed())
	startManager()
	DeferCleanup(func() { Expect(mgr.Stop()).To(Succeed()) })
})

func startManager() {
	mgr = harness.StartManager(dashboards.Wire(framework.ManagerOptions()))
}

// restartManager stops the operator and starts a new one with empty memory.
func restartManager() {
	By("restarting the operator")
	Expect(mgr.Stop()).To(Succeed())
	startManager()
}

// watchInvariants checks every invariant in ns for the rest of the spec and fails it on
// any violation.
func watchInvariants(ctx context.Context, ns string) *invariants.Checker {
	c, err := invariants.Start(ctx, env.Config, invariants.Options{Namespace: ns, Dashboards: dashboards.Registry})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func(ctx context.Context) {
		// Clusters waiting for their deletion time are deleted (and checked) before the
		// spec ends, so the next phase starts on a quiet operator.
		Eventually(func() []string {
			var list rayv1.RayClusterList
			Expect(k8s.List(ctx, &list, client.InNamespace(ns))).To(Succeed())
			var waiting []string
			for _, rc := range list.Items {
				if rc.Annotations[rayv1.DeleteAfterKey] != "" {
					waiting = append(waiting, rc.Name)
				}
			}
			return waiting
		}).Should(BeEmpty())
		c.Stop()
		if c.Err() != nil {
			for _, e := range c.Events() {
				GinkgoWriter.Printf("%s %s %s\n", ns, e.At.Format("15:04:05.000"), e.What)
			}
		}
		Expect(c.Err()).NotTo(HaveOccurred(), "invariants in %s", ns)
	})
	return c
}

func getService(ctx context.Context, ns, name string) *rayv1.RayService {
	return rstest.Get(ctx, k8s, ns, name)
}

func getCluster(ctx context.Context, ns, name string) *rayv1.RayCluster {
	rc := &rayv1.RayCluster{}
	Expect(k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, rc)).To(Succeed())
	return rc
}

func simulatorOf(ns, cluster string) *raysim.Server {
	return dashboards.Server(types.NamespacedName{Namespace: ns, Name: cluster})
}
