package gateway

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/testenv/load"
	"github.com/raygate/raygate/internal/testenv/raysim"
	"github.com/raygate/raygate/test/builders"
	"github.com/raygate/raygate/test/integration/internal/rstest"
)

// Every upgrade path under the same two loads (through Traefik and in-cluster through
// `<svc>-serve-svc`, ~40 req/s each, bounded), each ending with 0 failed requests and, where
// raygate's HTTPRoute splits traffic by weight, a per-second split within
// upgradeSplitTolerance of the weights in effect. A window is judged against every weight
// the route held during it and scenarioLag before it: Traefik applies a route change up to
// its 2 s providersThrottleDuration late.

// scenarioLag is how long before a window a weight may still be in effect at Traefik.
const scenarioLag = 2500 * time.Millisecond

// userRoute names the Gateway and HTTPRoute a user makes for a RayService that raygate
// gives no route of its own (None, NewCluster): one backend, the serve Service.
const userGateway, userRoute = "user-gw", "user-route"

var _ = Describe("load through Traefik on every upgrade path", func() {
	const name = "fruit"

	It("None: an in-place serve config change drops no request", func(ctx context.Context) {
		ns := rstest.NewNamespace(ctx, k8s, "gwnone-")
		blue := createServing(ctx, ns, name, builders.RayService(name, ns).Strategy(rayv1.None).DeletionDelay(2).Obj())
		s := startScenario(ctx, ns, name, blue, false)
		sim := dashboards.Server(types.NamespacedName{Namespace: ns, Name: blue})
		Expect(sim).NotTo(BeNil())
		before := len(sim.Submissions())
		rstest.Update(ctx, k8s, ns, name, func(svc *rayv1.RayService) {
			svc.Spec.ServeConfigV2 = strings.Replace(builders.DefaultServeConfig, "num_replicas: 2", "num_replicas: 3", 1)
		})
		Eventually(func() int { return len(sim.Submissions()) }).Should(BeNumerically(">", before), "the changed config reaches the running cluster")
		Eventually(sim.AllRunning).Should(BeTrue())
		Expect(rstest.ClusterNames(ctx, k8s, ns)()).To(ConsistOf(blue), "None never replaces the cluster")
		s.finish("None: serve config changed in place on "+blue, nil)
	})

	It("NewCluster: the serve Service switches clusters and no request is dropped", func(ctx context.Context) {
		ns := rstest.NewNamespace(ctx, k8s, "gwnc-")
		// The old cluster serves for the deletion delay after the switch: longer than the
		// gateway's propagation delay, so no request reaches a deleted cluster.
		blue := createServing(ctx, ns, name, builders.RayService(name, ns).DeletionDelay(5).Obj())
		s := startScenario(ctx, ns, name, blue, false)
		rstest.Update(ctx, k8s, ns, name, func(svc *rayv1.RayService) { rstest.SetImage(svc, "rayproject/ray:2.53.0") })
		green := waitReplaced(ctx, ns, name, blue)
		s.finish(fmt.Sprintf("NewCluster %s -> %s", blue, green), nil, green)
	})

	It("incremental with fast pacing (25% every 1 s): 0 failed requests, split as the weights", func(ctx context.Context) {
		ns := rstest.NewNamespace(ctx, k8s, "gwfast-")
		blue := createServing(ctx, ns, name, builders.RayService(name, ns).Incremental(100, 25, 1, className).DeletionDelay(2).Obj())
		s := startScenario(ctx, ns, name, blue, true)
		rstest.Update(ctx, k8s, ns, name, func(svc *rayv1.RayService) { rstest.SetImage(svc, "rayproject/ray:2.53.0") })
		green := waitReplaced(ctx, ns, name, blue)
		samples := s.finish(fmt.Sprintf("incremental 25%%/1s %s -> %s", blue, green), []string{green}, green)
		Expect(distinctShares(samples, green)).To(BeNumerically(">=", 3), "the weights moved in steps")
	})

	It("a third spec at 50%: back to the active cluster, then a fresh upgrade, 0 failed requests", func(ctx context.Context) {
		ns := rstest.NewNamespace(ctx, k8s, "gwthird-")
		blue := createServing(ctx, ns, name, builders.RayService(name, ns).Incremental(100, 25, 2, className).DeletionDelay(2).Obj())
		s := startScenario(ctx, ns, name, blue, true)
		rstest.Update(ctx, k8s, ns, name, func(svc *rayv1.RayService) { rstest.SetImage(svc, "rayproject/ray:2.53.0") })
		Eventually(func() int32 {
			return ptr.Deref(rstest.Get(ctx, k8s, ns, name).Status.PendingServiceStatus.TrafficRoutedPercent, 0)
		}, time.Minute).Should(BeNumerically(">=", 50))
		green := rstest.PendingName(ctx, k8s, ns, name)()
		By("a third spec with half of the traffic on " + green)
		rstest.Update(ctx, k8s, ns, name, func(svc *rayv1.RayService) { rstest.SetImage(svc, "rayproject/ray:2.54.0") })
		var third string
		Eventually(func() string {
			third = rstest.ActiveName(ctx, k8s, ns, name)()
			if third == blue || third == green || rstest.PendingName(ctx, k8s, ns, name)() != "" {
				return ""
			}
			return third
		}, 2*time.Minute).ShouldNot(BeEmpty(), "a fresh pending cluster for the third spec is promoted")
		Eventually(rstest.ClusterNames(ctx, k8s, ns), time.Minute).Should(ConsistOf(third))
		samples := s.finish(fmt.Sprintf("third spec at 50%% (incremental 25%%/2s) %s -> %s, back, -> %s", blue, green, third), []string{green, third}, green, third)
		Expect(distinctShares(samples, green)).To(BeNumerically(">=", 3), "traffic moved to %s and back in steps", green)
	})

	It("pending applications that turn UNHEALTHY get no traffic; going back drops no request", func(ctx context.Context) {
		ns := rstest.NewNamespace(ctx, k8s, "gwunh-")
		var failing atomic.Bool
		failing.Store(true)
		blue := createServing(ctx, ns, name, builders.RayService(name, ns).Incremental(100, 25, 1, className).DeletionDelay(2).Obj())
		// Every config the new cluster is given turns its applications UNHEALTHY before
		// raygate hears the dashboard's answer.
		dashboards.OnSubmit(func(c types.NamespacedName, sub raysim.Submission) {
			if c.Namespace != ns || c.Name == blue || !failing.Load() {
				return
			}
			if sim := dashboards.Server(c); sim != nil {
				for _, app := range sub.Applications {
					_ = sim.SetApplicationStatus(app, rayv1.ApplicationStatusUnhealthy, "replica crashed")
				}
			}
		})
		DeferCleanup(func() { failing.Store(false) })
		s := startScenario(ctx, ns, name, blue, true)
		rstest.Update(ctx, k8s, ns, name, func(svc *rayv1.RayService) { rstest.SetImage(svc, "rayproject/ray:2.53.0") })
		Eventually(rstest.PendingName(ctx, k8s, ns, name)).ShouldNot(BeEmpty())
		green := rstest.PendingName(ctx, k8s, ns, name)()
		Eventually(func() string {
			c := meta.FindStatusCondition(rstest.Get(ctx, k8s, ns, name).Status.Conditions, string(rayv1.UpgradeInProgress))
			if c == nil {
				return ""
			}
			return c.Reason
		}, time.Minute).Should(Equal(rayv1.PendingApplicationsUnhealthy))
		By("holding for several intervals: no traffic moves to " + green)
		Consistently(func() int32 {
			return ptr.Deref(rstest.Get(ctx, k8s, ns, name).Status.PendingServiceStatus.TrafficRoutedPercent, 0)
		}, 5*time.Second, 200*time.Millisecond).Should(BeZero())
		By("going back to the first spec")
		rstest.Update(ctx, k8s, ns, name, func(svc *rayv1.RayService) { rstest.SetImage(svc, builders.DefaultImage) })
		Eventually(rstest.PendingName(ctx, k8s, ns, name), time.Minute).Should(BeEmpty())
		Eventually(rstest.ClusterNames(ctx, k8s, ns), time.Minute).Should(ConsistOf(blue))
		samples := s.finish(fmt.Sprintf("pending %s UNHEALTHY (incremental 25%%/1s), then back to %s", green, blue), nil)
		for _, smp := range samples {
			Expect(smp.Shares[green]).To(BeZero(), "the HTTPRoute gave the UNHEALTHY cluster weight: %v", samples)
		}
	})
})

// createServing creates the RayService in ns (its Gateway and route retired when the spec
// ends) and returns its first cluster once it serves.
func createServing(ctx context.Context, ns, name string, svc *rayv1.RayService) string {
	return world.CreateServing(ctx, ns, name, svc)
}

// waitReplaced waits until a new cluster is active and the old one is deleted.
func waitReplaced(ctx context.Context, ns, name, blue string) string {
	var green string
	Eventually(func() string {
		green = rstest.ActiveName(ctx, k8s, ns, name)()
		if green == blue {
			return ""
		}
		return green
	}, 2*time.Minute).ShouldNot(BeEmpty(), "a new cluster is active")
	Eventually(rstest.ClusterNames(ctx, k8s, ns), time.Minute).Should(ConsistOf(green), "the old cluster is deleted after the deletion delay")
	return green
}

// scenario is a RayService under the two loads.
type scenario struct {
	ns, name, blue string
	gwRun, svcRun  *load.Run
	weights        *weightWatch // nil: the route is the user's, with one backend
}

// startScenario starts the loads once both clients get answers from the first cluster:
// through raygate's Gateway and HTTPRoute (raygateRoute), or through a Gateway and an
// HTTPRoute made here with the serve Service as the one backend.
func startScenario(ctx context.Context, ns, name, blue string, raygateRoute bool) *scenario {
	var url string
	if raygateRoute {
		url = rstest.GatewayURL(ctx, k8s, ns, name)
	} else {
		url = userGatewayURL(ctx, ns, name+"-serve-svc")
	}
	viaGateway := load.Options{Target: load.URL(url), Path: "/fruit", Rate: 40, Workers: 4, MaxRequests: 4000, MaxDuration: 90 * time.Second, Timeout: 2 * time.Second}
	inCluster := viaGateway
	inCluster.Target = load.ServicePods(k8s, ns, name+"-serve-svc", "serve", 100*time.Millisecond)
	for _, o := range []load.Options{viaGateway, inCluster} {
		Eventually(func(g Gomega) {
			rep, err := load.Once(ctx, load.Options{Target: o.Target, Path: o.Path, MaxRequests: 1})
			g.Expect(err).NotTo(HaveOccurred())
			sum := rep.Summary()
			g.Expect(sum.Failed).To(BeZero(), "%v", sum.Errors)
			g.Expect(sum.ByCluster).To(HaveKey(ns + "/" + blue))
		}).Should(Succeed())
	}
	By("sending steady load through Traefik and in-cluster")
	s := &scenario{ns: ns, name: name, blue: blue}
	if raygateRoute {
		s.weights = watchWeights(ctx, ns, name)
	}
	var err error
	s.gwRun, err = load.Start(ctx, viaGateway)
	Expect(err).NotTo(HaveOccurred())
	s.svcRun, err = load.Start(ctx, inCluster)
	Expect(err).NotTo(HaveOccurred())
	return s
}

// finish lets the loads run past the gateway's propagation delay, stops them and judges
// both: 0 failed requests, answers from the first cluster and from each of answered, and
// (with raygate's route) the split per window. It returns the weight samples.
func (s *scenario) finish(label string, rising []string, answered ...string) []weightSample {
	before := len(s.gwRun.Report().Results)
	Eventually(func() int { return len(s.gwRun.Report().Results) }).Should(BeNumerically(">", before+int(40*(scenarioLag+time.Second).Seconds())))
	gw, in := s.gwRun.Stop(), s.svcRun.Stop()
	var samples []weightSample
	if s.weights != nil {
		samples = s.weights.stop()
		GinkgoWriter.Printf("HTTPRoute weights (from the start of the load):\n%s", timeline(samples))
		for _, c := range rising {
			first, last := routeLags(gw, samples, s.ns, c, c)
			entry := fmt.Sprintf("%s: Traefik routing lag for %s: first answer %s after its weight rose above 0", label, c, first)
			if samples[len(samples)-1].Shares[c] == 0 {
				// It lost its weight again (a rollback): when did Traefik stop routing to it?
				entry += fmt.Sprintf(", last answer %s after it fell to 0", last)
			}
			AddReportEntry(entry)
		}
	}
	scenarioVerdict(label+", through Traefik", gw, samples, s.ns, append([]string{s.blue}, answered...))
	scenarioVerdict(label+", in-cluster via "+s.name+"-serve-svc", in, nil, s.ns, []string{s.blue})
	return samples
}

// scenarioVerdict prints a load's figures (sent, failed, p50, p99, worst split deviation)
// and requires 0 failed requests, answers from each of the clusters and, with weight
// samples, every window's split within upgradeSplitTolerance of the weights.
func scenarioVerdict(label string, rep *load.Report, samples []weightSample, ns string, clusters []string) {
	sum := rep.Summary()
	worst, table, dev := 0.0, rep.Table(interval), "n/a (one backend)"
	if samples != nil {
		var lines []string
		worst, lines = splitDeviation(rep.Intervals(interval), samples, ns, scenarioLag)
		table = strings.Join(lines, "\n") + "\n" + fmt.Sprintf("total %s\n", sum)
		dev = fmt.Sprintf("%.3f", worst)
	}
	entry := fmt.Sprintf("SCENARIO %s: sent=%d failed=%d p50=%s p99=%s worst split deviation=%s",
		label, sum.Sent, sum.Failed, sum.P50.Round(10*time.Microsecond), sum.P99.Round(10*time.Microsecond), dev)
	AddReportEntry(entry)
	GinkgoWriter.Printf("%s\n%s%s", entry, table, failures(rep))
	Expect(sum.Failed).To(BeZero(), "%s: failed requests: %v", label, sum.Errors)
	Expect(sum.Sent).To(BeNumerically(">=", 100), label)
	for _, c := range clusters {
		Expect(sum.ByCluster).To(HaveKey(ns+"/"+c), "%s: %s answered", label, c)
	}
	Expect(worst).To(BeNumerically("<=", upgradeSplitTolerance), "%s: the measured split strays from the HTTPRoute weights:\n%s", label, table)
}

// userGatewayURL creates a Gateway and an HTTPRoute for "/" with the Service as the one
// backend (as a user exposes a RayService raygate makes no route for), retired when the
// spec ends, and returns the listener's address once Traefik programmed them.
func userGatewayURL(ctx context.Context, ns, service string) string {
	retireGateway(ns, userGateway, userRoute)
	gw := gateway(ns)
	gw.Name = userGateway
	Expect(k8s.Create(ctx, gw)).To(Succeed())
	Expect(k8s.Create(ctx, &gwv1.HTTPRoute{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: userRoute},
		Spec: gwv1.HTTPRouteSpec{
			CommonRouteSpec: gwv1.CommonRouteSpec{ParentRefs: []gwv1.ParentReference{{Name: userGateway}}},
			Rules: []gwv1.HTTPRouteRule{{
				Matches: []gwv1.HTTPRouteMatch{{Path: &gwv1.HTTPPathMatch{Type: ptr.To(gwv1.PathMatchPathPrefix), Value: ptr.To("/")}}},
				BackendRefs: []gwv1.HTTPBackendRef{{BackendRef: gwv1.BackendRef{
					BackendObjectReference: gwv1.BackendObjectReference{Name: gwv1.ObjectName(service), Port: ptr.To(gwv1.PortNumber(servicePort))},
				}}},
			}},
		},
	})).To(Succeed())
	var url string
	Eventually(func(g Gomega) {
		var got gwv1.Gateway
		g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: userGateway}, &got)).To(Succeed())
		g.Expect(meta.IsStatusConditionTrue(got.Status.Conditions, string(gwv1.GatewayConditionProgrammed))).To(BeTrue(), "Gateway Programmed")
		g.Expect(got.Status.Addresses).NotTo(BeEmpty())
		var rt gwv1.HTTPRoute
		g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: userRoute}, &rt)).To(Succeed())
		g.Expect(rt.Status.Parents).To(HaveLen(1))
		g.Expect(meta.IsStatusConditionTrue(rt.Status.Parents[0].Conditions, string(gwv1.RouteConditionResolvedRefs))).To(BeTrue(), "HTTPRoute ResolvedRefs")
		url = "http://" + net.JoinHostPort(got.Status.Addresses[0].Value, strconv.Itoa(int(got.Spec.Listeners[0].Port)))
	}).Should(Succeed())
	return url
}
