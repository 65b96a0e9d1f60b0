// Package gwenv starts the world the Traefik suites run in: a real API server with the
// Gateway API CRDs, the fake kubelet (pods get loopback IPs), the real Traefik as the Gateway
// API implementation, LoopbackEndpoints, simulated Ray dashboards listening on the pod IPs,
// and raygate's manager under the chart's RBAC, reaching them with its production resolver.
//
// The specs are split into test/integration/gateway (routing and load on every upgrade
// path), test/integration/gateway/gates (metric gates on the real Prometheus) and
// test/integration/gateway/gatefaults (that Prometheus failing), each starting this world
// once, so `go test -p` runs them side by side: they wait on upgrade
// intervals and Traefik's routing far more than they compute.
package gwenv

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/app"
	"github.com/raygate/raygate/internal/rayspec"
	"github.com/raygate/raygate/internal/testenv/controlplane"
	"github.com/raygate/raygate/internal/testenv/framework"
	"github.com/raygate/raygate/internal/testenv/framework/suite"
	"github.com/raygate/raygate/internal/testenv/load"
	"github.com/raygate/raygate/internal/testenv/raysim"
	"github.com/raygate/raygate/internal/testenv/traefik"
	"github.com/raygate/raygate/test/integration/internal/rstest"
)

const (
	// ClassName is the GatewayClass Traefik serves.
	ClassName = "traefik"
	// deployDelay is how long a simulated Serve application stays DEPLOYING.
	deployDelay = 300 * time.Millisecond
	// deployPoll is how soon the controller reads a deploying application's status again.
	deployPoll = 150 * time.Millisecond
)

// World is what Start started.
type World struct {
	Suite  *suite.Suite
	Env    *controlplane.Env
	Client client.Client
	// Watcher is Client's twin that can also watch (WatchWeights).
	Watcher    client.WithWatch
	Traefik    *traefik.Traefik
	Dashboards *framework.Dashboards
	Manager    *framework.Manager
}

// Options shape the world.
type Options struct {
	// TraefikMetrics serves Traefik's Prometheus metrics (Traefik.MetricsURL).
	TraefikMetrics bool
}

// Start starts the world but the manager (StartManager) from a BeforeSuite, and its
// shutdown with DeferCleanup.
func Start(ctx context.Context, o Options) *World {
	ginkgo.GinkgoHelper()
	w := &World{}
	w.Suite = suite.Start(suite.Options{ControlPlane: controlplane.Options{GatewayAPI: true}, Kubelet: &framework.KubeletOptions{}})
	w.Env, w.Client = w.Suite.Env, w.Suite.Client
	var err error
	w.Watcher, err = client.NewWithWatch(w.Env.Config, client.Options{Scheme: w.Client.Scheme(), Mapper: w.Client.RESTMapper()})
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	w.Traefik, err = traefik.Start(ctx, w.Client, traefik.Options{Kubeconfig: w.Env.Kubeconfig, ClassName: ClassName, Log: ginkgo.GinkgoWriter, Metrics: o.TraefikMetrics})
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	ginkgo.DeferCleanup(w.Traefik.Stop)
	lb, err := traefik.StartLoopbackEndpoints(w.Env.Config)
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	ginkgo.DeferCleanup(lb.Stop)

	// Pods a spec makes by hand (not a RayCluster's) keep the status the spec writes.
	gomega.Expect(w.Suite.Kubelet.SetBehavior(ctx, func(p *corev1.Pod) bool { return p.Labels[rayv1.ClusterLabelKey] == "" }, framework.Ignore)).To(gomega.Succeed())
	w.Dashboards = framework.StartDashboardsWith(raysim.Options{DeployDelay: deployDelay})
	ginkgo.DeferCleanup(w.Dashboards.Close)
	gomega.Expect(w.Dashboards.ListenOnPods(w.Env.Config)).To(gomega.Succeed())
	return w
}

// StartManager runs raygate wired to the simulated dashboards, with edit's options, until
// the suite ends.
func (w *World) StartManager(edit func(*app.Options)) {
	ginkgo.GinkgoHelper()
	opts := w.Dashboards.Wire(framework.ManagerOptions())
	// The simulated applications deploy in deployDelay: the controller looks again at that
	// pace instead of waiting for its default second.
	opts.RayServiceDeployingPoll = deployPoll
	if edit != nil {
		edit(&opts)
	}
	w.Manager = w.Suite.StartManager(opts)
	ginkgo.DeferCleanup(func() { gomega.Expect(w.Manager.Stop()).To(gomega.Succeed()) })
}

// CreateServing creates the RayService in ns (its Gateway and route retired when the spec
// ends) and returns its first cluster once it serves.
func (w *World) CreateServing(ctx context.Context, ns, name string, svc *rayv1.RayService) string {
	ginkgo.GinkgoHelper()
	w.RetireGateway(ns, rayspec.GatewayName(name), rayspec.HTTPRouteName(name))
	w.RetireRayService(ns, name)
	gomega.Expect(w.Client.Create(ctx, svc)).To(gomega.Succeed())
	return rstest.WaitServing(ctx, w.Client, ns, name)
}

// RetireGateway deletes a Gateway and an HTTPRoute when the spec ends: every Gateway of
// the suite has a listener on the same Traefik entry point and routes "/", so one left
// behind would compete for the next spec's requests.
func (w *World) RetireGateway(ns, gateway, route string) {
	ginkgo.DeferCleanup(func(ctx context.Context) {
		for _, o := range []client.Object{
			&gwv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: route}},
			&gwv1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: gateway}},
		} {
			gomega.Expect(client.IgnoreNotFound(w.Client.Delete(ctx, o))).To(gomega.Succeed())
		}
	})
}

// RetireRayService deletes a RayService when the spec ends and waits until it is gone, so
// raygate does not recreate its Gateway (there is no garbage collector here).
func (w *World) RetireRayService(ns, name string) {
	ginkgo.DeferCleanup(func(ctx context.Context) {
		svc := &rayv1.RayService{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
		gomega.Expect(client.IgnoreNotFound(w.Client.Delete(ctx, svc))).To(gomega.Succeed())
		gomega.Eventually(func() bool {
			return apierrors.IsNotFound(w.Client.Get(ctx, client.ObjectKeyFromObject(svc), svc))
		}).Should(gomega.BeTrue())
	})
}

// WatchWeights records the RayService HTTPRoute's weights as they change until Stop.
func (w *World) WatchWeights(ctx context.Context, ns, name string) *load.WeightWatch {
	return load.WatchWeights(ctx, w.Watcher, ns, rayspec.HTTPRouteName(name))
}

// DistinctShares counts the different shares the cluster had over the samples.
func DistinctShares(samples []load.WeightSample, cluster string) int {
	seen := map[float64]bool{}
	for _, s := range samples {
		seen[s.Shares[cluster]] = true
	}
	return len(seen)
}

// Failures lists the failed requests: when, which cluster answered, why.
func Failures(rep *load.Report) string {
	var b strings.Builder
	for _, r := range rep.Results {
		if r.Failed {
			fmt.Fprintf(&b, "failed at %6.3fs status=%d cluster=%q: %s\n", r.At.Seconds(), r.Status, r.Cluster, r.Err)
		}
	}
	return b.String()
}

// Timeline renders the weight samples with their time from the first one.
func Timeline(samples []load.WeightSample) string {
	var b strings.Builder
	for _, s := range samples {
		fmt.Fprintf(&b, "%6.3fs %v\n", s.At.Sub(samples[0].At).Seconds(), s.Shares)
	}
	return b.String()
}
