package gateway

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	raygatev1alpha1 "github.com/raygate/raygate/apis/raygate/v1alpha1"
	"github.com/raygate/raygate/internal/testenv/docqueries"
	"github.com/raygate/raygate/test/integration/internal/rstest"
)

// traefikGate is docs/rayservice.md's gate on the Gateway's own metrics: the pending
// cluster's share of 5xx answers through Traefik, 0 while it got no request.
const traefikGate = "pending-5xx-ratio"

// traefikCounts asks Prometheus how many requests Traefik answered for the cluster's backend
// in the window before at, and how many of them were 5xx: the gate's ratio broken down.
func traefikCounts(ctx context.Context, ns, cluster string, window time.Duration, at time.Time) (fails, all float64) {
	GinkgoHelper()
	sel := fmt.Sprintf(`traefik_service_requests_total{service=~"%s-%s-serve-svc-.*"%%s}[%s]`, ns, cluster, promDuration(window))
	all, _ = instant(ctx, "sum(increase("+fmt.Sprintf(sel, "")+"))", at)
	fails, _ = instant(ctx, "sum(increase("+fmt.Sprintf(sel, `,code=~"5.."`)+"))", at)
	return fails, all
}

// promDuration writes a whole number of seconds as PromQL does (20s).
func promDuration(d time.Duration) string { return strconv.Itoa(int(d.Seconds())) + "s" }

var _ = Describe("metric gates evaluated by the real Prometheus on what Traefik counted", func() {
	It("a healthy new version passes the documented Traefik 5xx gate at every step and is promoted", func(ctx context.Context) {
		gate := gateDoc(traefikGate)
		g := startGated(ctx, "gwgateok-", gatedOptions{gates: []docqueries.Example{gate}, settle: 4, onFailure: raygatev1alpha1.FailureRollback})
		green := g.green
		Eventually(rstest.ActiveName(ctx, k8s, g.ns, g.name), 2*time.Minute).Should(Equal(green), "the upgrade completes")
		Eventually(rstest.ClusterNames(ctx, k8s, g.ns), time.Minute).Should(ConsistOf(green))
		rep, samples, conds := g.stop()

		sum := rep.Summary()
		Expect(sum.Failed).To(BeZero(), "failed requests: %v", sum.Errors)
		Expect(sum.ByCluster).To(HaveKey(g.ns + "/" + green))
		Expect(distinctShares(samples, green)).To(BeNumerically(">=", 3), "traffic moved in steps")

		for _, c := range conds {
			Expect(c.State).NotTo(Equal("False/"+raygatev1alpha1.GateFailed), c.Message)
		}
		passed := passedValues(conds, gate.Gate)
		Expect(passed).NotTo(BeEmpty(), "UpgradeGates reported the gate passing: %v", conds)
		for _, v := range passed {
			Expect(v).To(BeNumerically("<=", 0.01), "the value in the condition is ≈ 0")
		}

		By("Prometheus evaluated the query before every traffic step, and judged real traffic")
		window := rangeOf(gate.Query)
		evals := g.evaluations(ctx, gate)
		Expect(len(evals)).To(BeNumerically(">=", 4), "an evaluation before each of the 4 traffic steps: %+v", evals)
		withData := 0
		for _, e := range evals {
			Expect(e.Err).To(BeEmpty())
			Expect(e.OK).To(BeTrue(), "`or vector(0)` answers 0 rather than no data, at %s", e.At)
			Expect(e.Value).To(BeZero(), "evaluation at %s", e.At)
			if _, all := traefikCounts(ctx, g.ns, green, window, e.At); all >= 10 {
				withData++
			}
		}
		Expect(withData).To(BeNumerically(">=", 1), "an evaluation saw requests to %s", green)

		By("Traefik's counter for the new cluster, as Prometheus stored it, agrees with the load generator")
		answered := float64(sum.ByCluster[g.ns+"/"+green])
		counted := fmt.Sprintf(`sum(traefik_service_requests_total{service=~"%s-%s-serve-svc-.*"})`, g.ns, green)
		var seen float64
		Eventually(func() float64 {
			seen, _ = instant(ctx, counted, time.Now())
			return math.Abs(seen - answered)
		}, 10*time.Second).Should(BeNumerically("<=", math.Max(3, 0.02*answered)),
			"Traefik counted %v requests to %s, the load generator got %v answers from it", seen, green, answered)
		AddReportEntry(fmt.Sprintf("TRAEFIK GATE (Prometheus) healthy %s -> %s: sent=%d failed=%d; %d evaluations (%d with requests to %s), values in UpgradeGates %v; Traefik counted %v requests to %s, load generator %v",
			g.blue, green, sum.Sent, sum.Failed, len(evals), withData, green, passed, seen, green, answered))
	})

	It("a new version failing 30% of requests fails the documented Traefik 5xx gate at the first step(s) and rolls back", func(ctx context.Context) {
		const failRatio = 0.3
		gate := gateDoc(traefikGate)
		g := startGated(ctx, "gwgatebad-", gatedOptions{gates: []docqueries.Example{gate}, failRatio: failRatio, onFailure: raygatev1alpha1.FailureRollback})
		green := g.green
		Eventually(func() bool { return g.conds.seen("False/" + raygatev1alpha1.GateFailed) }, 2*time.Minute).Should(BeTrue(), "the gate fails")
		Eventually(rstest.PendingName(ctx, k8s, g.ns, g.name), 2*time.Minute).Should(BeEmpty(), "the pending cluster is dropped")
		Expect(rstest.ActiveName(ctx, k8s, g.ns, g.name)()).To(Equal(g.blue))
		Eventually(rstest.ClusterNames(ctx, k8s, g.ns), time.Minute).Should(ConsistOf(g.blue))
		rep, samples, conds := g.stop()

		By("the condition names the query, the value and the threshold")
		query := g.rendered(gate)
		var failed *gateCondition
		for i := range conds {
			if conds[i].State == "False/"+raygatev1alpha1.GateFailed {
				failed = &conds[i]
				break
			}
		}
		Expect(failed).NotTo(BeNil())
		Expect(failed.Message).To(ContainSubstring(fmt.Sprintf("gate %q of UpgradePolicy %s failed: query %s returned ", gate.Gate, gatePolicy, query)))
		Expect(failed.Message).To(ContainSubstring("above max " + gate.Max))
		m := gateValueRE.FindStringSubmatch(failed.Message)
		Expect(m).NotTo(BeNil(), failed.Message)
		value, err := strconv.ParseFloat(m[1], 64)
		Expect(err).NotTo(HaveOccurred())
		Expect(value).To(BeNumerically("~", failRatio, 0.12), "the measured 5xx ratio")

		By("Prometheus evaluated that value, and it agrees with the load generator's count over the gate's window")
		window := rangeOf(gate.Query)
		var at *evaluation
		evals := g.evaluations(ctx, gate)
		for i, e := range evals {
			if e.OK && (at == nil || math.Abs(e.Value-value) < math.Abs(at.Value-value)) {
				at = &evals[i]
			}
		}
		Expect(at).NotTo(BeNil(), "Prometheus evaluated %s: %+v", query, evals)
		Expect(at.Value).To(BeNumerically("~", value, 0.02), "evaluated again at %s", at.At)
		tFails, tAll := traefikCounts(ctx, g.ns, green, window, at.At)
		lgFails, lgAll := g.window(rep, green, at.At.Add(-window), at.At)
		Expect(lgAll).To(BeNumerically(">=", 10), "the load generator got answers from %s in the window", green)
		lgRatio := float64(lgFails) / float64(lgAll)
		Expect(value).To(BeNumerically("~", lgRatio, 0.1), "gate %v (Traefik: %.1f of %.1f) vs load generator %d of %d", value, tFails, tAll, lgFails, lgAll)

		By("the event says it too")
		Eventually(rstest.Events(ctx, k8s, g.ns, g.name)).Should(And(
			ContainSubstring(fmt.Sprintf("Warning UpgradeGateFailed: gate %q of UpgradePolicy %s failed: query %s returned %s, above max %s", gate.Gate, gatePolicy, query, m[1], gate.Max)),
			ContainSubstring(rayv1.UpgradeActionKey+"=abort")))

		By("traffic is back on the old cluster, and only the pending cluster failed requests")
		maxGreen := 0.0
		for _, s := range samples {
			maxGreen = math.Max(maxGreen, s.Shares[green])
		}
		Expect(maxGreen).To(BeNumerically("<=", 0.5), "the gate stopped the shift at the first step(s)")
		Expect(samples[len(samples)-1].Shares[green]).To(BeZero())
		sum := rep.Summary()
		failedFrom := map[string]int{}
		for _, r := range rep.Results {
			if r.Failed {
				Expect(r.Status).To(Equal(500), "a failure that is not the simulated 500: %+v", r)
				failedFrom[r.Cluster]++
			}
		}
		Expect(failedFrom).To(HaveLen(1))
		Expect(failedFrom).To(HaveKey(g.ns+"/"+green), "failures only from the pending cluster")
		last := rep.Between(rep.Results[len(rep.Results)-1].At-time.Second, time.Hour)
		Expect(last.Failed).To(BeZero())
		Expect(last.Share(g.ns+"/"+g.blue)).To(Equal(1.0), "at the end only the old cluster answers")
		greenFails, greenAll := g.window(rep, green, g.loadStart, time.Now())
		AddReportEntry(fmt.Sprintf("TRAEFIK GATE (Prometheus) failing %s (30%% 5xx) -> rollback to %s: sent=%d failed=%d (all from %s: %d of its %d answers, %.3f); max weight on %s %.2f; gate value %v (Traefik %.1f of %.1f in %s) vs load generator %d of %d = %.3f in the same window",
			green, g.blue, sum.Sent, sum.Failed, green, greenFails, greenAll, float64(greenFails)/float64(max(greenAll, 1)), green, maxGreen, value, tFails, tAll, window, lgFails, lgAll, lgRatio))
	})
})
