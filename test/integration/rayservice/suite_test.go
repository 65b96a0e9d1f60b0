// Package rayservice tests the RayService controller against a real API server with the
// Gateway API CRDs, the RayCluster controller, the fake kubelet, simulated Ray dashboards
// and a stand-in gateway controller. Every upgrade runs under the invariant checker, which
// fails the test on any breach observed at any step. Webhooks are not installed, so invalid
// objects reach the controller.
package rayservice

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/app"
	"github.com/raygate/raygate/internal/features"
	"github.com/raygate/raygate/internal/rayspec"
	"github.com/raygate/raygate/internal/testenv/controlplane"
	"github.com/raygate/raygate/internal/testenv/framework"
	"github.com/raygate/raygate/internal/testenv/framework/suite"
	"github.com/raygate/raygate/internal/testenv/invariants"
	"github.com/raygate/raygate/internal/testenv/raysim"
	"github.com/raygate/raygate/test/integration/internal/rstest"
)

const (
	gatewayClass = "fake-gw"
	// brokenImport is an import path whose applications the simulators report UNHEALTHY.
	brokenImport = "broken.deployment_graph"
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

func TestRayService(t *testing.T) {
	RegisterFailHandler(Fail)
	SetDefaultEventuallyTimeout(30 * time.Second)
	SetDefaultEventuallyPollingInterval(100 * time.Millisecond)
	RunSpecs(t, "RayService controller")
}

var _ = BeforeSuite(func() {
	// The suite runs the incremental strategy, whose gate is on by default.
	Expect(features.Enabled(features.RayServiceIncrementalUpgrade)).To(BeTrue())
	harness = suite.Start(suite.Options{ControlPlane: controlplane.Options{GatewayAPI: true}, Kubelet: &framework.KubeletOptions{}})
	env, k8s, kubelet = harness.Env, harness.Client, harness.Kubelet
	var err error
	gw, err = framework.StartGateway(env.Config, framework.GatewayOptions{ClassName: gatewayClass, Delay: 50 * time.Millisecond})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(gw.Stop)
	dashboards = framework.StartDashboardsWith(raysim.Options{
		DeployDelay: deployDelay,
		Outcome: func(_ types.NamespacedName, app raysim.App) (string, string) {
			if app.ImportPath == brokenImport {
				return rayv1.ApplicationStatusUnhealthy, "The deployment failed to start 3 times in a row: ModuleNotFoundError: No module named 'broken'"
			}
			return "", ""
		},
	})
	DeferCleanup(dashboards.Close)
	// The simulators listen on pod IPs and raygate reaches them with its production resolver.
	Expect(dashboards.ListenOnPods(env.Config)).To(Succeed())
	startManager()
	DeferCleanup(func() { Expect(mgr.Stop()).To(Succeed()) })
})

func startManager(edits ...func(*app.Options)) {
	opts := dashboards.Wire(framework.ManagerOptions())
	// sharedgateway_test.go attaches routes to Gateways in this namespace.
	opts.AllowedSharedGateways = []string{sharedGatewayNamespace + "/*"}
	opts.PrometheusURL = prom.URL() // the scripted Prometheus of gates_test.go
	for _, edit := range edits {
		edit(&opts)
	}
	mgr = harness.StartManager(opts)
}

// idle: the manager has handled every event it has seen (nothing queued, nothing running).
func idle() bool {
	ok, err := mgr.Idle("rayservice", "raycluster")
	Expect(err).NotTo(HaveOccurred())
	return ok
}

// reconcileCount is how many RayService reconciles have finished.
func reconcileCount() float64 {
	n, err := framework.ReconcileCount("rayservice")
	Expect(err).NotTo(HaveOccurred())
	return n
}

// restartManager stops the operator and starts a new one with empty memory.
func restartManager(pause time.Duration, edits ...func(*app.Options)) {
	By("restarting the operator")
	Expect(mgr.Stop()).To(Succeed())
	time.Sleep(pause)
	startManager(edits...)
}

func newNamespace(ctx context.Context) string { return rstest.NewNamespace(ctx, k8s, "rs-") }

// watchInvariants checks every invariant for the rest of the test and fails it on any
// violation.
func watchInvariants(ctx context.Context, ns string) *invariants.Checker {
	c, err := invariants.Start(ctx, env.Config, invariants.Options{Namespace: ns, Dashboards: dashboards.Registry})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func(ctx context.Context) {
		// Leave nothing pending: clusters waiting for their deletion time are deleted (and
		// checked) before the test ends, so later tests see a quiet operator.
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
		for _, e := range c.Events() {
			GinkgoWriter.Printf("%s %s\n", e.At.Format("15:04:05.000"), e.What)
		}
		Expect(c.Err()).NotTo(HaveOccurred())
	})
	return c
}

func getService(ctx context.Context, ns, name string) *rayv1.RayService {
	return rstest.Get(ctx, k8s, ns, name)
}

func activeName(ctx context.Context, ns, name string) func() string {
	return rstest.ActiveName(ctx, k8s, ns, name)
}

func pendingName(ctx context.Context, ns, name string) func() string {
	return rstest.PendingName(ctx, k8s, ns, name)
}

// condition is "Status/Reason" of a RayService condition.
func condition(ctx context.Context, ns, name string, t rayv1.RayServiceConditionType) func() string {
	return rstest.Condition(ctx, k8s, ns, name, t)
}

func conditionMessage(ctx context.Context, ns, name string, t rayv1.RayServiceConditionType) string {
	return rstest.ConditionMessage(ctx, k8s, ns, name, t)
}

// waitServing waits until the RayService is Ready on an active cluster and returns its name.
func waitServing(ctx context.Context, ns, name string) string {
	return rstest.WaitServing(ctx, k8s, ns, name)
}

// update changes a RayService's spec, retrying on conflicts.
func update(ctx context.Context, ns, name string, change func(*rayv1.RayService)) {
	rstest.Update(ctx, k8s, ns, name, change)
}

func setImage(svc *rayv1.RayService, image string) { rstest.SetImage(svc, image) }

func clusterNames(ctx context.Context, ns string) func() []string {
	return rstest.ClusterNames(ctx, k8s, ns)
}

func getCluster(ctx context.Context, ns, name string) *rayv1.RayCluster {
	rc := &rayv1.RayCluster{}
	Expect(k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, rc)).To(Succeed())
	return rc
}

// deleteAfterOf reads the deletion time recorded on a cluster. The controller records it
// in the pass after the status that demotes the cluster is stored, so tests wait for it.
func deleteAfterOf(ctx context.Context, ns, cluster string) func() string {
	return func() string { return getCluster(ctx, ns, cluster).Annotations[rayv1.DeleteAfterKey] }
}

func simulatorOf(ns, cluster string) *raysim.Server {
	return dashboards.Server(types.NamespacedName{Namespace: ns, Name: cluster})
}

func selectorOf(ctx context.Context, ns, svcName string) func() string {
	return func() string {
		s := &corev1.Service{}
		if err := k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: svcName}, s); err != nil {
			return ""
		}
		return s.Spec.Selector[rayv1.ClusterLabelKey]
	}
}

// routeWeightsOf polls a RayService's HTTPRoute weights per cluster; a route not created yet
// is an error Eventually retries (route fails the spec at once).
func routeWeightsOf(ctx context.Context, ns, svc string) func() (map[string]int32, error) {
	return func() (map[string]int32, error) {
		rt := &gwv1.HTTPRoute{}
		if err := k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: svc + "-httproute"}, rt); err != nil {
			return nil, err
		}
		return rayspec.RouteWeights(rt), nil
	}
}

func route(ctx context.Context, ns, svc string) *gwv1.HTTPRoute {
	rt := &gwv1.HTTPRoute{}
	Expect(k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: svc + "-httproute"}, rt)).To(Succeed())
	return rt
}

// events lists an object's events, one "Type Reason: note" per line, to poll.
func events(ctx context.Context, ns, name string) func() string {
	return rstest.Events(ctx, k8s, ns, name)
}
