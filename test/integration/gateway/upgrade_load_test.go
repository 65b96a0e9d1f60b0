package gateway

import (
	"context"
	"fmt"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/utils/ptr"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/rayspec"
	"github.com/raygate/raygate/internal/testenv/load"
	"github.com/raygate/raygate/test/builders"
	"github.com/raygate/raygate/test/integration/gateway/internal/gwenv"
	"github.com/raygate/raygate/test/integration/internal/rstest"
)

const (
	// interval is the width of the windows the split is measured over.
	interval = time.Second
	// routeLag is how long Traefik may take to route by weights the HTTPRoute already
	// holds: a change after a quiet period is applied at once (~0.3-0.4 s measured here:
	// the watch and the reload); changes closer together than 2 s wait for Traefik's
	// providersThrottleDuration, which upgradeInterval avoids.
	routeLag = 1500 * time.Millisecond
	// upgradeSplitTolerance is how far a window's measured share of a cluster may lie
	// outside the range of that cluster's weight share during the window and the routeLag
	// before it: Traefik's weighted round robin is exact over a cycle, so what remains is a
	// few requests of rounding in a window of ~40.
	upgradeSplitTolerance = 0.10
	// minWindow is the fewest answers a window needs for its split to be judged.
	minWindow = 10
	// upgradeInterval is the incremental upgrade's intervalSeconds: the sample's slower
	// pacing (scenarios_load_test.go runs 1 s). Traefik routes by a new weight up to ~2 s
	// after the HTTPRoute changes; raygate holds the old cluster's last capacity at least
	// 3 s after the last traffic step (minLastShrinkHold), whatever the interval.
	upgradeInterval = 3
)

var _ = Describe("load through Traefik during a RayService upgrade", func() {
	const name = "fruit"

	It("sees 0 failed requests through the Gateway and the serve Service in an incremental upgrade, split as the HTTPRoute weights", func(ctx context.Context) {
		u := startUnderLoad(ctx, name)
		rstest.Update(ctx, k8s, u.ns, name, func(s *rayv1.RayService) { rstest.SetImage(s, "rayproject/ray:2.53.0") })
		Eventually(rstest.PendingName(ctx, k8s, u.ns, name)).ShouldNot(BeEmpty())
		green := rstest.PendingName(ctx, k8s, u.ns, name)()
		Eventually(rstest.ActiveName(ctx, k8s, u.ns, name), time.Minute).Should(Equal(green))
		Eventually(rstest.ClusterNames(ctx, k8s, u.ns), time.Minute).Should(ConsistOf(green), "the old cluster is deleted after the deletion delay")
		gwRep, svcRep, samples := u.stop()

		label := fmt.Sprintf("incremental 25%%/%ds %s -> %s", upgradeInterval, u.blue, green)
		first, last := routeLags(gwRep, samples, u.ns, green, u.blue)
		AddReportEntry(fmt.Sprintf("%s: Traefik routing lag: first answer from the new cluster %s after its weight rose above 0, last answer from the old one %s after its weight fell to 0", label, first, last))
		verdict(label+", load through Traefik", gwRep, samples, u.ns, u.blue, green)
		verdict(label+", load in-cluster via "+name+"-serve-svc", svcRep, nil, u.ns, u.blue, green)
		Expect(distinctShares(samples, green)).To(BeNumerically(">=", 3), "the weights moved in steps: %v", samples)
		Expect(gwRep.Between(gwRep.Results[len(gwRep.Results)-1].At-time.Second, time.Hour).Share(u.ns+"/"+green)).To(Equal(1.0), "at the end only the new cluster answers")
	})

	It("sees 0 failed requests through the Gateway and the serve Service when the spec goes back mid-shift, split as the HTTPRoute weights", func(ctx context.Context) {
		u := startUnderLoad(ctx, name)
		rstest.Update(ctx, k8s, u.ns, name, func(s *rayv1.RayService) { rstest.SetImage(s, "rayproject/ray:2.53.0") })
		Eventually(func() int32 {
			return ptr.Deref(rstest.Get(ctx, k8s, u.ns, name).Status.PendingServiceStatus.TrafficRoutedPercent, 0)
		}, time.Minute).Should(BeNumerically(">=", 50))
		green := rstest.PendingName(ctx, k8s, u.ns, name)()
		By("going back to the first spec with half of the traffic on " + green)
		rstest.Update(ctx, k8s, u.ns, name, func(s *rayv1.RayService) { rstest.SetImage(s, builders.DefaultImage) })
		Eventually(rstest.PendingName(ctx, k8s, u.ns, name), time.Minute).Should(BeEmpty())
		Expect(rstest.ActiveName(ctx, k8s, u.ns, name)()).To(Equal(u.blue))
		Eventually(rstest.ClusterNames(ctx, k8s, u.ns), time.Minute).Should(ConsistOf(u.blue), "the pending cluster is deleted after the deletion delay")
		gwRep, svcRep, samples := u.stop()

		label := fmt.Sprintf("rollback at 50%% (incremental 25%%/%ds) %s -> %s -> %s", upgradeInterval, u.blue, green, u.blue)
		first, last := routeLags(gwRep, samples, u.ns, green, green)
		AddReportEntry(fmt.Sprintf("%s: Traefik routing lag: first answer from the pending cluster %s after its weight rose above 0, last answer %s after its weight fell back to 0", label, first, last))
		verdict(label+", load through Traefik", gwRep, samples, u.ns, u.blue, green)
		verdict(label+", load in-cluster via "+name+"-serve-svc", svcRep, nil, u.ns, u.blue, "")
		Expect(distinctShares(samples, green)).To(BeNumerically(">=", 3), "the weights moved in steps: %v", samples)
		Expect(gwRep.Between(gwRep.Results[len(gwRep.Results)-1].At-time.Second, time.Hour).Share(u.ns+"/"+u.blue)).To(Equal(1.0), "at the end only the first cluster answers")
	})
})

// underLoad is a RayService serving under two bounded loads: through Traefik (the
// Gateway's listener address from its status) and in-cluster (the ready pods of the serve
// Service, as kube-proxy would send them), with the HTTPRoute's weights recorded.
type underLoad struct {
	ns, blue      string
	gwRun, svcRun *load.Run
	weights       *weightWatch
}

// startUnderLoad creates the RayService name (incremental, 100% surge, 25% steps every
// upgradeInterval) in a new namespace, waits until both clients get answers from its first
// cluster, and starts the loads.
func startUnderLoad(ctx context.Context, name string) *underLoad {
	ns := rstest.NewNamespace(ctx, k8s, "gwload-")
	retireGateway(ns, rayspec.GatewayName(name), rayspec.HTTPRouteName(name))
	retireRayService(ns, name)
	Expect(k8s.Create(ctx, builders.RayService(name, ns).Incremental(100, 25, upgradeInterval, className).DeletionDelay(2).Obj())).To(Succeed())
	blue := rstest.WaitServing(ctx, k8s, ns, name)

	By("Traefik programming raygate's Gateway and HTTPRoute")
	viaGateway := load.Options{Target: load.URL(rstest.GatewayURL(ctx, k8s, ns, name)), Path: "/fruit", Rate: 40, Workers: 4, MaxRequests: 4000, MaxDuration: 90 * time.Second, Timeout: 2 * time.Second}
	inCluster := viaGateway
	inCluster.Target = load.ServicePods(k8s, ns, name+"-serve-svc", "serve", 100*time.Millisecond)
	for _, o := range []load.Options{viaGateway, inCluster} {
		Eventually(func(g Gomega) {
			rep, err := load.Once(ctx, load.Options{Target: o.Target, Path: o.Path, MaxRequests: 1})
			g.Expect(err).NotTo(HaveOccurred())
			s := rep.Summary()
			g.Expect(s.Failed).To(BeZero(), "%v", s.Errors)
			g.Expect(s.ByCluster).To(HaveKey(ns + "/" + blue))
		}).Should(Succeed())
	}

	By("sending steady load through Traefik and in-cluster")
	u := &underLoad{ns: ns, blue: blue, weights: watchWeights(ctx, ns, name)}
	var err error
	u.gwRun, err = load.Start(ctx, viaGateway)
	Expect(err).NotTo(HaveOccurred())
	u.svcRun, err = load.Start(ctx, inCluster)
	Expect(err).NotTo(HaveOccurred())
	return u
}

// stop lets the loads run past the routing lag (the last change has reached Traefik and
// the deleted cluster's listeners are closed), then stops them and the weight recording.
func (u *underLoad) stop() (gateway, inCluster *load.Report, samples []weightSample) {
	before := len(u.gwRun.Report().Results)
	Eventually(func() int { return len(u.gwRun.Report().Results) }).Should(BeNumerically(">", before+int(40*(routeLag+time.Second).Seconds())))
	gateway, inCluster, samples = u.gwRun.Stop(), u.svcRun.Stop(), u.weights.stop()
	GinkgoWriter.Printf("HTTPRoute weights (from the start of the load):\n%s", timeline(samples))
	return gateway, inCluster, samples
}

// verdict reports a load's figures (AddReportEntry) and requires 0 failed requests, answers
// from both clusters (green may be "": not required) and, with weight samples, a measured
// split per interval within upgradeSplitTolerance of the HTTPRoute weights.
func verdict(label string, rep *load.Report, samples []weightSample, ns, blue, green string) {
	s := rep.Summary()
	worst, table := 0.0, rep.Table(interval)
	if samples != nil {
		var lines []string
		worst, lines = splitDeviation(rep.Intervals(interval), samples, ns, routeLag)
		table = strings.Join(lines, "\n") + "\n" + fmt.Sprintf("total %s\n", s)
	}
	entry := fmt.Sprintf("%s: sent=%d failed=%d p50=%s p99=%s worst split deviation=%.3f",
		label, s.Sent, s.Failed, s.P50.Round(10*time.Microsecond), s.P99.Round(10*time.Microsecond), worst)
	AddReportEntry(entry)
	GinkgoWriter.Printf("%s\n%s%s", entry, table, failures(rep))
	Expect(s.Failed).To(BeZero(), "%s: failed requests: %v", label, s.Errors)
	Expect(s.Sent).To(BeNumerically(">=", 100), label)
	Expect(s.ByCluster).To(HaveKey(ns+"/"+blue), "%s: the first cluster answered", label)
	if green != "" {
		Expect(s.ByCluster).To(HaveKey(ns+"/"+green), "%s: the new cluster answered", label)
	}
	Expect(worst).To(BeNumerically("<=", upgradeSplitTolerance), "%s: the measured split strays from the HTTPRoute weights:\n%s", label, table)
}

// retireGateway, retireRayService and the weight recording are gwenv's (shared with the
// gates package); the split verdict lives in internal/testenv/load, shared with
// test/bench's upgrade-load scenario.
func retireGateway(ns, gateway, route string) { world.RetireGateway(ns, gateway, route) }

func retireRayService(ns, name string) { world.RetireRayService(ns, name) }

type weightSample = load.WeightSample

type weightWatch struct{ *load.WeightWatch }

// watchWeights records the RayService HTTPRoute's weights as they change until stop.
func watchWeights(ctx context.Context, ns, name string) *weightWatch {
	return &weightWatch{world.WatchWeights(ctx, ns, name)}
}

func (w *weightWatch) stop() []weightSample { return w.Stop() }

func distinctShares(samples []weightSample, cluster string) int {
	return gwenv.DistinctShares(samples, cluster)
}

// splitDeviation is load.SplitDeviation with this suite's minWindow.
func splitDeviation(windows []load.Interval, samples []weightSample, ns string, lag time.Duration) (float64, []string) {
	return load.SplitDeviation(windows, samples, ns, lag, minWindow)
}

func shareRange(samples []weightSample, from, to time.Time) (lo, hi map[string]float64) {
	return load.ShareRange(samples, from, to)
}

func failures(rep *load.Report) string { return gwenv.Failures(rep) }

func timeline(samples []weightSample) string { return gwenv.Timeline(samples) }

// routeLags measures how late Traefik follows the weights: from the first sample in which
// the rising cluster has weight to its first answer, and from the first sample in which the
// falling cluster has none (after having had some) to its last answer. Sample times are
// taken from the first sample, which was taken just before the load started.
func routeLags(rep *load.Report, samples []weightSample, ns, rising, falling string) (first, last time.Duration) {
	if len(samples) == 0 {
		return 0, 0
	}
	t0 := samples[0].At
	var up, down time.Duration = -1, -1
	had := false
	for _, s := range samples {
		if up < 0 && s.Shares[rising] > 0 {
			up = s.At.Sub(t0)
		}
		had = had || s.Shares[falling] > 0
		if down < 0 && had && s.Shares[falling] == 0 {
			down = s.At.Sub(t0)
		}
	}
	firstAt, lastAt := time.Duration(-1), time.Duration(-1)
	for _, r := range rep.Results {
		if r.Failed {
			continue
		}
		if r.Cluster == ns+"/"+rising && (firstAt < 0 || r.At < firstAt) {
			firstAt = r.At
		}
		if r.Cluster == ns+"/"+falling && r.At > lastAt {
			lastAt = r.At
		}
	}
	return (firstAt - up).Round(time.Millisecond), (lastAt - down).Round(time.Millisecond)
}
