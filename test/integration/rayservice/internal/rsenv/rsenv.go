// Package rsenv starts the world the RayService suites run in: a real API server with the
// Gateway API CRDs, the RayCluster controller, the fake kubelet, simulated Ray dashboards
// and a stand-in gateway controller, and raygate's manager under the chart's RBAC. Webhooks
// are not installed, so invalid objects reach the controller.
//
// The RayService specs are split into packages (test/integration/rayservice and the ones
// under it) that each start this world once, so `go test -p 2` runs two of them side by side:
// they wait on upgrade intervals and simulated deployments far more than they compute.
// Their specs read and change RayServices through the World's methods (reads.go), which
// are bound to its client, so no package wraps rstest again.
package rsenv

import (
	"context"
	"time"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/app"
	"github.com/raygate/raygate/internal/features"
	"github.com/raygate/raygate/internal/testenv/controlplane"
	"github.com/raygate/raygate/internal/testenv/framework"
	"github.com/raygate/raygate/internal/testenv/framework/suite"
	"github.com/raygate/raygate/internal/testenv/invariants"
	"github.com/raygate/raygate/internal/testenv/raysim"
)

const (
	// GatewayClass is the class the stand-in gateway controller accepts.
	GatewayClass = "fake-gw"
	// BrokenImport is an import path whose applications the simulators report UNHEALTHY.
	BrokenImport = "broken.deployment_graph"
	// deployDelay is how long a simulated Serve application takes to deploy.
	deployDelay = 300 * time.Millisecond
	// deployPoll is how soon the controller reads a deploying application's status again.
	deployPoll = 150 * time.Millisecond
)

// World is what Start started. Manager changes when a spec restarts the operator.
type World struct {
	Suite      *suite.Suite
	Env        *controlplane.Env
	Client     client.Client
	Kubelet    *framework.Kubelet
	Gateway    *framework.Gateway
	Dashboards *framework.Dashboards
	Manager    *framework.Manager
	// edits are the package's own manager options, applied at every (re)start.
	edits []func(*app.Options)
}

// Start starts the world from a BeforeSuite, and its shutdown with DeferCleanup. edits set
// what a package's specs need of every manager it runs (a Prometheus, shared Gateways).
func Start(edits ...func(*app.Options)) *World {
	ginkgo.GinkgoHelper()
	// The suites run the incremental strategy, whose gate is on by default.
	gomega.Expect(features.Enabled(features.RayServiceIncrementalUpgrade)).To(gomega.BeTrue())
	w := &World{edits: edits}
	w.Suite = suite.Start(suite.Options{ControlPlane: controlplane.Options{GatewayAPI: true}, Kubelet: &framework.KubeletOptions{}})
	w.Env, w.Client, w.Kubelet = w.Suite.Env, w.Suite.Client, w.Suite.Kubelet
	var err error
	w.Gateway, err = framework.StartGateway(w.Env.Config, framework.GatewayOptions{ClassName: GatewayClass, Delay: 50 * time.Millisecond})
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	ginkgo.DeferCleanup(w.Gateway.Stop)
	w.Dashboards = framework.StartDashboardsWith(raysim.Options{
		DeployDelay: deployDelay,
		Outcome: func(_ types.NamespacedName, app raysim.App) (string, string) {
			if app.ImportPath == BrokenImport {
				return rayv1.ApplicationStatusUnhealthy, "The deployment failed to start 3 times in a row: ModuleNotFoundError: No module named 'broken'"
			}
			return "", ""
		},
	})
	ginkgo.DeferCleanup(w.Dashboards.Close)
	// The simulators listen on pod IPs and raygate reaches them with its production resolver.
	gomega.Expect(w.Dashboards.ListenOnPods(w.Env.Config)).To(gomega.Succeed())
	w.StartManager()
	ginkgo.DeferCleanup(func() { gomega.Expect(w.Manager.Stop()).To(gomega.Succeed()) })
	return w
}

// StartManager runs a manager wired to the simulators, with the package's edits and then
// these.
func (w *World) StartManager(edits ...func(*app.Options)) {
	ginkgo.GinkgoHelper()
	opts := w.Dashboards.Wire(framework.ManagerOptions())
	// The simulated applications deploy in deployDelay: look again at that pace, not every
	// second, as the controller would see a real deployment finish.
	opts.RayServiceDeployingPoll = deployPoll
	for _, edit := range append(append([]func(*app.Options){}, w.edits...), edits...) {
		edit(&opts)
	}
	w.Manager = w.Suite.StartManager(opts)
}

// RestartManager stops the operator and starts a new one with empty memory.
func (w *World) RestartManager(pause time.Duration, edits ...func(*app.Options)) {
	ginkgo.GinkgoHelper()
	ginkgo.By("restarting the operator")
	gomega.Expect(w.Manager.Stop()).To(gomega.Succeed())
	time.Sleep(pause)
	w.StartManager(edits...)
}

// Idle: the manager has handled every event it has seen (nothing queued, nothing running).
func (w *World) Idle() bool {
	ok, err := w.Manager.Idle("rayservice", "raycluster")
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	return ok
}

// ReconcileCount is how many RayService reconciles have finished.
func ReconcileCount() float64 {
	n, err := framework.ReconcileCount("rayservice")
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	return n
}

// WatchInvariants checks every invariant for the rest of the spec and fails it on any
// violation.
func (w *World) WatchInvariants(ctx context.Context, ns string) *invariants.Checker {
	ginkgo.GinkgoHelper()
	c, err := invariants.Start(ctx, w.Env.Config, invariants.Options{Namespace: ns, Dashboards: w.Dashboards.Registry})
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	ginkgo.DeferCleanup(func(ctx context.Context) {
		// Leave nothing pending: clusters waiting for their deletion time are deleted (and
		// checked) before the spec ends, so later specs see a quiet operator.
		gomega.Eventually(func() []string {
			var list rayv1.RayClusterList
			gomega.Expect(w.Client.List(ctx, &list, client.InNamespace(ns))).To(gomega.Succeed())
			var waiting []string
			for _, rc := range list.Items {
				if rc.Annotations[rayv1.DeleteAfterKey] != "" {
					waiting = append(waiting, rc.Name)
				}
			}
			return waiting
		}).Should(gomega.BeEmpty())
		c.Stop()
		for _, e := range c.Events() {
			ginkgo.GinkgoWriter.Printf("%s %s\n", e.At.Format("15:04:05.000"), e.What)
		}
		gomega.Expect(c.Err()).NotTo(gomega.HaveOccurred())
	})
	return c
}

// Simulator is a cluster's simulated dashboard (nil before its head pod exists).
func (w *World) Simulator(ns, cluster string) *raysim.Server {
	return w.Dashboards.Server(types.NamespacedName{Namespace: ns, Name: cluster})
}
