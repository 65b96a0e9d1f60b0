// Package upgradematrix runs every upgrade action (pause then resume, abort, promote, pause
// then promote) at every phase of an upgrade against a real API server, straight and with
// an operator restart between recording the actions and carrying them out. It is the
// envtest counterpart of controllers/rayservice/phases_test.go, whose simulated world is
// the specification of the phases and their end states. Every RayService runs in its own
// namespace under the invariant checker. Webhooks are not installed, so actions admission
// would refuse (promote during a rollback) reach the controller, which ignores them.
//
// The matrix runs in two test packages, each with its own control plane: straight/ and
// restart/ (go test ./test/integration/upgradematrix/...). Their specs wait on upgrade
// intervals far more than they compute, so `go test -p` runs the two halves side by side.
package upgradematrix

import (
	"context"
	"testing"
	"time"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
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
	deployPoll   = 150 * time.Millisecond
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

// Run runs the matrix's specs registered in the calling test package.
func Run(t *testing.T, description string) {
	gomega.RegisterFailHandler(ginkgo.Fail)
	gomega.SetDefaultEventuallyTimeout(45 * time.Second) // a loaded 2-core machine runs four upgrades at once
	gomega.SetDefaultEventuallyPollingInterval(100 * time.Millisecond)
	ginkgo.RunSpecs(t, description)
}

// Start starts the world the matrix runs in; call it from the test package's BeforeSuite.
func Start() {
	gomega.Expect(features.Enabled(features.RayServiceIncrementalUpgrade)).To(gomega.BeTrue())
	harness = suite.Start(suite.Options{ControlPlane: controlplane.Options{GatewayAPI: true}, Kubelet: &framework.KubeletOptions{}})
	env, k8s, kubelet = harness.Env, harness.Client, harness.Kubelet
	var err error
	gw, err = framework.StartGateway(env.Config, framework.GatewayOptions{ClassName: gatewayClass, Delay: 50 * time.Millisecond})
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	ginkgo.DeferCleanup(gw.Stop)
	dashboards = framework.StartDashboardsWith(raysim.Options{DeployDelay: deployDelay})
	ginkgo.DeferCleanup(dashboards.Close)
	gomega.Expect(dashboards.ListenOnPods(env.Config)).To(gomega.Succeed())
	startManager()
	ginkgo.DeferCleanup(func() { gomega.Expect(mgr.Stop()).To(gomega.Succeed()) })
}

func startManager() {
	opts := dashboards.Wire(framework.ManagerOptions())
	// The simulated applications deploy in deployDelay: the controller looks again at that
	// pace instead of waiting for its default second.
	opts.RayServiceDeployingPoll = deployPoll
	mgr = harness.StartManager(opts)
}

// restartManager stops the operator and starts a new one with empty memory.
func restartManager() {
	ginkgo.By("restarting the operator")
	gomega.Expect(mgr.Stop()).To(gomega.Succeed())
	startManager()
}

// watchInvariants checks every invariant in ns for the rest of the spec and fails it on
// any violation.
func watchInvariants(ctx context.Context, ns string) *invariants.Checker {
	c, err := invariants.Start(ctx, env.Config, invariants.Options{Namespace: ns, Dashboards: dashboards.Registry})
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	ginkgo.DeferCleanup(func(ctx context.Context) {
		// Clusters waiting for their deletion time are deleted (and checked) before the
		// spec ends, so the next phase starts on a quiet operator.
		gomega.Eventually(func() []string {
			var list rayv1.RayClusterList
			gomega.Expect(k8s.List(ctx, &list, client.InNamespace(ns))).To(gomega.Succeed())
			var waiting []string
			for _, rc := range list.Items {
				if rc.Annotations[rayv1.DeleteAfterKey] != "" {
					waiting = append(waiting, rc.Name)
				}
			}
			return waiting
		}).Should(gomega.BeEmpty())
		c.Stop()
		if c.Err() != nil {
			for _, e := range c.Events() {
				ginkgo.GinkgoWriter.Printf("%s %s %s\n", ns, e.At.Format("15:04:05.000"), e.What)
			}
		}
		gomega.Expect(c.Err()).NotTo(gomega.HaveOccurred(), "invariants in %s", ns)
	})
	return c
}

func getService(ctx context.Context, ns, name string) *rayv1.RayService {
	return rstest.Get(ctx, k8s, ns, name)
}

func getCluster(ctx context.Context, ns, name string) *rayv1.RayCluster {
	rc := &rayv1.RayCluster{}
	gomega.Expect(k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, rc)).To(gomega.Succeed())
	return rc
}

func simulatorOf(ns, cluster string) *raysim.Server {
	return dashboards.Server(types.NamespacedName{Namespace: ns, Name: cluster})
}
