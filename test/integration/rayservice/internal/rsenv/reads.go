package rsenv

import (
	"context"
	"strings"
	"time"

	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/rayspec"
	"github.com/raygate/raygate/internal/testenv/framework"
	"github.com/raygate/raygate/internal/testenv/invariants"
)

// GetCluster reads a RayCluster.
func GetCluster(ctx context.Context, c client.Client, ns, name string) *rayv1.RayCluster {
	rc := &rayv1.RayCluster{}
	gomega.Expect(c.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, rc)).To(gomega.Succeed())
	return rc
}

// DeleteAfterOf reads the deletion time recorded on a cluster, to poll. The controller
// records it in the pass after the status that demotes the cluster is stored.
func DeleteAfterOf(ctx context.Context, c client.Client, ns, cluster string) func() string {
	return func() string { return GetCluster(ctx, c, ns, cluster).Annotations[rayv1.DeleteAfterKey] }
}

// SelectorOf is the cluster a Service selects ("" while it does not exist), to poll.
func SelectorOf(ctx context.Context, c client.Client, ns, svcName string) func() string {
	return func() string {
		s := &corev1.Service{}
		if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: svcName}, s); err != nil {
			return ""
		}
		return s.Spec.Selector[rayv1.ClusterLabelKey]
	}
}

// RouteWeightsOf polls a RayService's HTTPRoute weights per cluster; a route not created yet
// is an error Eventually retries (Route fails the spec at once).
func RouteWeightsOf(ctx context.Context, c client.Client, ns, svc string) func() (map[string]int32, error) {
	return func() (map[string]int32, error) {
		rt := &gwv1.HTTPRoute{}
		if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: svc + "-httproute"}, rt); err != nil {
			return nil, err
		}
		return rayspec.RouteWeights(rt), nil
	}
}

// Route reads a RayService's HTTPRoute.
func Route(ctx context.Context, c client.Client, ns, svc string) *gwv1.HTTPRoute {
	rt := &gwv1.HTTPRoute{}
	gomega.Expect(c.Get(ctx, types.NamespacedName{Namespace: ns, Name: svc + "-httproute"}, rt)).To(gomega.Succeed())
	return rt
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
