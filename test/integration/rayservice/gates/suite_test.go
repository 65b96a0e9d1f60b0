// Package gates tests the RayService controller: metric gates against a scripted Prometheus,
// hostile dashboards, size limits and refused pods, metrics, and spec hash stamps. It runs in
// the world package rsenv starts, as the other RayService packages run theirs beside it; every
// upgrade runs under the invariant checker, which fails the spec on any breach observed at any
// step.
package gates

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/app"
	"github.com/raygate/raygate/internal/testenv/framework"
	"github.com/raygate/raygate/internal/testenv/invariants"
	"github.com/raygate/raygate/internal/testenv/raysim"
	"github.com/raygate/raygate/test/integration/internal/rstest"
	"github.com/raygate/raygate/test/integration/rayservice/internal/rsenv"
)

const gatewayClass = rsenv.GatewayClass

var (
	world      *rsenv.World
	k8s        client.Client
	dashboards *framework.Dashboards
	mgr        *framework.Manager
)

func TestRayServiceGates(t *testing.T) {
	RegisterFailHandler(Fail)
	SetDefaultEventuallyTimeout(30 * time.Second)
	SetDefaultEventuallyPollingInterval(100 * time.Millisecond)
	RunSpecs(t, "RayService controller: metric gates and limits")
}

var _ = BeforeSuite(func() {
	world = rsenv.Start(func(o *app.Options) { o.PrometheusURL = prom.URL() })
	k8s, dashboards, mgr = world.Client, world.Dashboards, world.Manager
})

func startManager(edits ...func(*app.Options)) {
	world.StartManager(edits...)
	mgr = world.Manager
}

// restartManager stops the operator and starts a new one with empty memory.
func restartManager(pause time.Duration, edits ...func(*app.Options)) {
	world.RestartManager(pause, edits...)
	mgr = world.Manager
}

func newNamespace(ctx context.Context) string { return rstest.NewNamespace(ctx, k8s, "rs-") }

func watchInvariants(ctx context.Context, ns string) *invariants.Checker {
	return world.WatchInvariants(ctx, ns)
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
	return rsenv.GetCluster(ctx, k8s, ns, name)
}

func simulatorOf(ns, cluster string) *raysim.Server { return world.Simulator(ns, cluster) }

// events lists an object's events, one "Type Reason: note" per line, to poll.
func events(ctx context.Context, ns, name string) func() string {
	return rstest.Events(ctx, k8s, ns, name)
}

// pendingTraffic is the pending cluster's traffic share in the status (-1: no pending).
func pendingTraffic(ctx context.Context, ns, name string) func() int32 {
	return rstest.PendingTraffic(ctx, k8s, ns, name)
}

func trafficSteps(c *invariants.Checker, pending string) []int32 {
	return rsenv.TrafficSteps(c, pending)
}

func routeTimes(c *invariants.Checker) []time.Time { return rsenv.RouteTimes(c) }

func metric(name, ns, svc string) func() map[string]float64 { return rsenv.Metric(name, ns, svc) }

func upgrades(labels map[string]string) func() uint64 { return rsenv.Upgrades(labels) }

// setAction sets raygate.ray.io/upgrade-action (and its target) as kubectl raygate does.
func setAction(ctx context.Context, ns, name, action, target string) {
	rstest.SetAction(ctx, k8s, ns, name, action, target)
}
