// Package gateway tests the Traefik harness (internal/testenv/traefik): the real Traefik,
// built from its module by `make tools`, runs against the envtest API server with the
// Gateway API CRDs, programs a Gateway and an HTTPRoute, writes their status itself and
// routes requests by the route's weights to the addresses of EndpointSlices — HTTP servers
// this suite starts on loopback, and the simulated Serve proxies on the pod IPs of the
// RayClusters a raygate manager runs here (the fake kubelet gives pods loopback IPs), so
// load flows through Traefik during raygate's upgrades. The real Prometheus scrapes Traefik
// and the simulated Ray pods' Serve metrics, and evaluates raygate's metric gates.
package gateway

import (
	"context"
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/localmode"
	"github.com/raygate/raygate/internal/testenv/controlplane"
	"github.com/raygate/raygate/internal/testenv/framework"
	"github.com/raygate/raygate/internal/testenv/framework/suite"
	"github.com/raygate/raygate/internal/testenv/prometheus"
	"github.com/raygate/raygate/internal/testenv/raysim"
	"github.com/raygate/raygate/internal/testenv/traefik"
)

const className = "traefik"

// deployDelay is how long a simulated Serve application stays DEPLOYING.
const deployDelay = 300 * time.Millisecond

var (
	env        *controlplane.Env
	k8s        client.Client
	tr         *traefik.Traefik
	dashboards *framework.Dashboards
	// prom is the real Prometheus, scraping Traefik; the operator's --prometheus-url
	// (gates_test.go, gates_faults_test.go).
	prom *prometheus.Prometheus
)

func TestGateway(t *testing.T) {
	RegisterFailHandler(Fail)
	SetDefaultEventuallyTimeout(60 * time.Second) // generous: two cores are shared with other suites
	SetDefaultEventuallyPollingInterval(100 * time.Millisecond)
	RunSpecs(t, "Traefik as the Gateway API implementation")
}

var _ = BeforeSuite(func(ctx context.Context) {
	harness := suite.Start(suite.Options{ControlPlane: controlplane.Options{GatewayAPI: true}, Kubelet: &framework.KubeletOptions{}})
	env, k8s = harness.Env, harness.Client
	var err error
	tr, err = traefik.Start(ctx, k8s, traefik.Options{Kubeconfig: env.Kubeconfig, ClassName: className, Log: GinkgoWriter, Metrics: true})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(tr.Stop)
	traefikTarget := prometheus.Target{Job: localmode.JobTraefik, URL: tr.MetricsURL()}
	prom, err = prometheus.Start(ctx, prometheus.Options{
		Targets:  []prometheus.Target{traefikTarget},
		QueryLog: true, // what the gates asked, and when (gates_helpers_test.go)
		Log:      GinkgoWriter,
	})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func() { Expect(prom.Stop()).To(Succeed()) })
	DeferCleanup(followRayPods(traefikTarget))
	lb, err := traefik.StartLoopbackEndpoints(env.Config)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(lb.Stop)

	// raygate with simulated Ray on pod IPs, reached with its production resolver.
	// Pods a spec makes by hand (not a RayCluster's) keep the status the spec writes.
	Expect(harness.Kubelet.SetBehavior(ctx, func(p *corev1.Pod) bool { return p.Labels[rayv1.ClusterLabelKey] == "" }, framework.Ignore)).To(Succeed())
	dashboards = framework.StartDashboardsWith(raysim.Options{DeployDelay: deployDelay})
	DeferCleanup(dashboards.Close)
	Expect(dashboards.ListenOnPods(env.Config)).To(Succeed())
	opts := dashboards.Wire(framework.ManagerOptions())
	opts.AllowedSharedGateways = []string{sharedGatewayNamespace + "/*"} // sharedgateway_test.go
	opts.PrometheusURL = prom.URL()                                      // gates_test.go
	mgr := harness.StartManager(opts)
	DeferCleanup(func() { Expect(mgr.Stop()).To(Succeed()) })
})

// followRayPods keeps Prometheus scraping every Ray pod's metrics port with the labels the
// chart's PodMonitor gives (namespace, pod, ...), as the local mode does, besides fixed;
// the returned function stops it.
func followRayPods(fixed prometheus.Target) func() {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		var applied string
		tick := time.NewTicker(500 * time.Millisecond)
		defer tick.Stop()
		for {
			var pods corev1.PodList
			if err := k8s.List(ctx, &pods, client.MatchingLabels{rayv1.IsRayNodeLabelKey: "yes"}); err == nil {
				targets := append([]prometheus.Target{fixed}, localmode.RayTargets(pods.Items)...)
				// A failed reload (Prometheus killed by a fault spec) is tried again; its
				// configuration file is written anyway, so a restart reads it.
				if key := fmt.Sprint(targets); key != applied && prom.SetTargets(ctx, targets) == nil {
					applied = key
				}
			}
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	return func() { cancel(); <-done }
}
