package rsenv

import (
	"context"
	"strings"
	"time"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/types"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/rayspec"
	"github.com/raygate/raygate/internal/testenv/framework"
	"github.com/raygate/raygate/internal/testenv/invariants"
	"github.com/raygate/raygate/test/builders"
	"github.com/raygate/raygate/test/integration/internal/rstest"
)

// NewNamespace creates a namespace for one spec.
func (w *World) NewNamespace(ctx context.Context) string {
	return rstest.NewNamespace(ctx, w.Client, "rs-")
}

// RayService reads a RayService.
func (w *World) RayService(ctx context.Context, ns, name string) *rayv1.RayService {
	return rstest.Get(ctx, w.Client, ns, name)
}

// Update changes a RayService's spec, retrying on conflicts.
func (w *World) Update(ctx context.Context, ns, name string, change func(*rayv1.RayService)) {
	rstest.Update(ctx, w.Client, ns, name, change)
}

// SetAction sets raygate.ray.io/upgrade-action (and its target) as kubectl raygate does.
func (w *World) SetAction(ctx context.Context, ns, name, action, target string) {
	rstest.SetAction(ctx, w.Client, ns, name, action, target)
}

// MidShift creates an incremental RayService, upgrades it and waits until the pending
// cluster has at least atLeast% of the traffic; it returns the active and pending clusters.
func (w *World) MidShift(ctx context.Context, ns, name string, surge, step, interval, atLeast int32) (string, string) {
	ginkgo.GinkgoHelper()
	gomega.Expect(w.Client.Create(ctx, builders.RayService(name, ns).Incremental(surge, step, interval, GatewayClass).DeletionDelay(1).Obj())).To(gomega.Succeed())
	blue := w.WaitServing(ctx, ns, name)
	w.Update(ctx, ns, name, func(s *rayv1.RayService) { rstest.SetImage(s, "rayproject/ray:2.53.0") })
	gomega.Eventually(w.PendingTraffic(ctx, ns, name)).Should(gomega.BeNumerically(">=", atLeast))
	return blue, w.PendingName(ctx, ns, name)()
}

// ActiveName is the RayService's active cluster, to poll.
func (w *World) ActiveName(ctx context.Context, ns, name string) func() string {
	return rstest.ActiveName(ctx, w.Client, ns, name)
}

// PendingName is the RayService's pending cluster, to poll.
func (w *World) PendingName(ctx context.Context, ns, name string) func() string {
	return rstest.PendingName(ctx, w.Client, ns, name)
}

// PendingTraffic is the pending cluster's traffic share in the status (-1: no pending), to
// poll.
func (w *World) PendingTraffic(ctx context.Context, ns, name string) func() int32 {
	return rstest.PendingTraffic(ctx, w.Client, ns, name)
}

// Condition is "Status/Reason" of a RayService condition, to poll.
func (w *World) Condition(ctx context.Context, ns, name string, t rayv1.RayServiceConditionType) func() string {
	return rstest.Condition(ctx, w.Client, ns, name, t)
}

// ConditionMessage is the message of a RayService condition ("" without it).
func (w *World) ConditionMessage(ctx context.Context, ns, name string, t rayv1.RayServiceConditionType) string {
	return rstest.ConditionMessage(ctx, w.Client, ns, name, t)
}

// WaitServing waits until the RayService is Ready on an active cluster and returns its name.
func (w *World) WaitServing(ctx context.Context, ns, name string) string {
	return rstest.WaitServing(ctx, w.Client, ns, name)
}

// Events lists an object's events, one "Type Reason: note" per line, to poll.
func (w *World) Events(ctx context.Context, ns, name string) func() string {
	return rstest.Events(ctx, w.Client, ns, name)
}

// ClusterNames are a namespace's RayClusters not being deleted, sorted, to poll.
func (w *World) ClusterNames(ctx context.Context, ns string) func() []string {
	return rstest.ClusterNames(ctx, w.Client, ns)
}

// RayCluster reads a RayCluster.
func (w *World) RayCluster(ctx context.Context, ns, name string) *rayv1.RayCluster {
	rc := &rayv1.RayCluster{}
	gomega.Expect(w.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, rc)).To(gomega.Succeed())
	return rc
}

// DeleteAfterOf reads the deletion time recorded on a cluster, to poll. The controller
// records it in the pass after the status that demotes the cluster is stored.
func (w *World) DeleteAfterOf(ctx context.Context, ns, cluster string) func() string {
	return func() string { return w.RayCluster(ctx, ns, cluster).Annotations[rayv1.DeleteAfterKey] }
}

// SelectorOf is the cluster a Service selects ("" while it does not exist), to poll.
func (w *World) SelectorOf(ctx context.Context, ns, svcName string) func() string {
	return func() string { return rstest.Selector(ctx, w.Client, ns, svcName) }
}

// Route reads a RayService's HTTPRoute.
func (w *World) Route(ctx context.Context, ns, svc string) *gwv1.HTTPRoute {
	rt := &gwv1.HTTPRoute{}
	gomega.Expect(w.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: svc + "-httproute"}, rt)).To(gomega.Succeed())
	return rt
}

// RouteWeightsOf polls a RayService's HTTPRoute weights per cluster; a route not created yet
// is an error Eventually retries (Route fails the spec at once).
func (w *World) RouteWeightsOf(ctx context.Context, ns, svc string) func() (map[string]int32, error) {
	return func() (map[string]int32, error) {
		rt := &gwv1.HTTPRoute{}
		if err := w.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: svc + "-httproute"}, rt); err != nil {
			return nil, err
		}
		return rayspec.RouteWeights(rt), nil
	}
}

// RouteWeight is a cluster's weight on the RayService's HTTPRoute (-1: not a backend), to
// poll.
func (w *World) RouteWeight(ctx context.Context, ns, name, cluster string) func() int32 {
	return rstest.RouteWeight(ctx, w.Client, ns, name, cluster)
}

// TrafficSteps are the pending cluster's successive weights on the route, as observed.
func TrafficSteps(c *invariants.Checker, pending string) []int32 {
	var out []int32
	for _, w := range c.RouteWeights() {
		if v, ok := w[pending]; ok && (len(out) == 0 || out[len(out)-1] != v) {
			out = append(out, v)
		}
	}
	return out
}

// RouteTimes are when the route's weights changed while both clusters were on it.
func RouteTimes(c *invariants.Checker) []time.Time {
	var out []time.Time
	for _, e := range c.Events() {
		if strings.HasPrefix(e.What, "route ") && strings.Count(e.What, "=") == 2 {
			out = append(out, e.At)
		}
	}
	return out
}

// Metric returns one RayService's series of a metric as "label=value" of the labels that
// vary (condition, role) mapped to the series' value, to poll.
func Metric(name, ns, svc string) func() map[string]float64 {
	return func() map[string]float64 {
		labels, values, err := framework.MetricSeries(name, ns, svc)
		gomega.Expect(err).NotTo(gomega.HaveOccurred())
		out := map[string]float64{}
		for i, l := range labels {
			key := ""
			for _, k := range []string{"condition", "role"} {
				if v, ok := l[k]; ok {
					key = k + "=" + v
				}
			}
			out[key] = values[i]
		}
		return out
	}
}

// Upgrades is how many finished upgrades raygate_service_upgrade_duration_seconds holds, to
// poll.
func Upgrades(labels map[string]string) func() uint64 {
	return func() uint64 {
		n, err := framework.HistogramCount("raygate_service_upgrade_duration_seconds", labels)
		gomega.Expect(err).NotTo(gomega.HaveOccurred())
		return n
	}
}
