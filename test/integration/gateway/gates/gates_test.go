package gates

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/prometheus/common/model"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	raygatev1alpha1 "github.com/raygate/raygate/apis/raygate/v1alpha1"
	"github.com/raygate/raygate/internal/promgate"
	"github.com/raygate/raygate/internal/testenv/docqueries"
	"github.com/raygate/raygate/internal/testenv/load"
	"github.com/raygate/raygate/test/integration/gateway/internal/gwenv"
	"github.com/raygate/raygate/test/integration/internal/rstest"
)

// The documented gates (gwenv), under shorter names.
const (
	errorGate   = gwenv.ErrorGate
	latencyGate = gwenv.LatencyGate
	traefikGate = gwenv.TraefikGate
)

// documentedGates are the three, in the docs' order: the first that fails is the one the
// condition names.
func documentedGates() []docqueries.Example {
	GinkgoHelper()
	return []docqueries.Example{gateDoc(errorGate), gateDoc(latencyGate), gateDoc(traefikGate)}
}

// increase asks Prometheus how much the summed counters grew in the window before at.
func increase(ctx context.Context, selector string, window time.Duration, at time.Time) float64 {
	GinkgoHelper()
	v, _ := instant(ctx, fmt.Sprintf("sum(increase(%s[%s]))", selector, model.Duration(window)), at)
	return v
}

// traefikSelector selects Traefik's request counters of a cluster's backend (extra: more
// matchers).
func traefikSelector(ns, cluster, extra string) string {
	return fmt.Sprintf(`traefik_service_requests_total{service=~"%s-%s-serve-svc-.*"%s}`, ns, cluster, extra)
}

// serveSelector selects a Ray Serve series of a cluster's pods, health checks left out.
func serveSelector(metric, ns, cluster string) string {
	return fmt.Sprintf(`%s{namespace=%q,pod=~"%s-.*",route!="/-/healthz"}`, metric, ns, cluster)
}

// failedGate is the first GateFailed state recorded and the value its message reports.
func failedGate(conds []gateCondition) (gateCondition, float64) {
	GinkgoHelper()
	for _, c := range conds {
		if c.State == "False/"+raygatev1alpha1.GateFailed {
			m := gateValueRE.FindStringSubmatch(c.Message)
			Expect(m).NotTo(BeNil(), c.Message)
			v, err := strconv.ParseFloat(m[1], 64)
			Expect(err).NotTo(HaveOccurred())
			return c, v
		}
	}
	Fail(fmt.Sprintf("no GateFailed state among %v", conds))
	return gateCondition{}, 0
}

// evaluationOf is the evaluation of a gate whose value is closest to value: the one whose
// answer the condition reports.
func evaluationOf(ctx context.Context, g *gatedRun, gate docqueries.Example, value float64) evaluation {
	GinkgoHelper()
	var best *evaluation
	evals := g.Evaluations(ctx, gate)
	for i, e := range evals {
		if e.OK && (best == nil || math.Abs(e.Value-value) < math.Abs(best.Value-value)) {
			best = &evals[i]
		}
	}
	Expect(best).NotTo(BeNil(), "Prometheus evaluated %s: %+v", g.Rendered(gate), evals)
	Expect(best.Value).To(BeNumerically("~", value, math.Max(0.02, 0.02*value)), "evaluated again at %s", best.At)
	return *best
}

// expectRolledBack checks the end of a failed gated upgrade: the pending cluster is gone,
// traffic is back on the old one, and the event names the gate, the query and the value.
func expectRolledBack(ctx context.Context, g *gatedRun, gate docqueries.Example, failed gateCondition, samples []load.WeightSample) float64 {
	GinkgoHelper()
	Expect(failed.Message).To(ContainSubstring(fmt.Sprintf("gate %q of UpgradePolicy %s failed: query %s returned ", gate.Gate, gatePolicy, g.Rendered(gate))))
	Expect(failed.Message).To(ContainSubstring("above max " + gate.Max))
	m := gateValueRE.FindStringSubmatch(failed.Message)
	Eventually(rstest.Events(ctx, k8s, g.NS, g.Name)).Should(And(
		ContainSubstring(fmt.Sprintf("Warning UpgradeGateFailed: gate %q of UpgradePolicy %s failed: query %s returned %s, above max %s", gate.Gate, gatePolicy, g.Rendered(gate), m[1], gate.Max)),
		ContainSubstring(rayv1.UpgradeActionKey+"=abort")))
	maxGreen := 0.0
	for _, s := range samples {
		maxGreen = math.Max(maxGreen, s.Shares[g.Green])
	}
	Expect(maxGreen).To(BeNumerically("<=", 0.5), "the gate stopped the shift at the first step(s)")
	Expect(samples[len(samples)-1].Shares[g.Green]).To(BeZero())
	return maxGreen
}

// expectOnlyOldAtEnd: in the last second of the load only the old cluster answered.
func expectOnlyOldAtEnd(g *gatedRun, rep *load.Report) {
	GinkgoHelper()
	last := rep.Between(rep.Results[len(rep.Results)-1].At-time.Second, time.Hour)
	Expect(last.Failed).To(BeZero())
	Expect(last.Share(g.NS+"/"+g.Blue)).To(Equal(1.0), "at the end only the old cluster answers")
}

var _ = Describe("metric gates evaluated by the real Prometheus on what Traefik and Ray Serve counted", func() {
	It(gwenv.SpecGatesHealthy, func(ctx context.Context) {
		gates := documentedGates()
		g := startGated(ctx, "gwgateok-", gatedOptions{Gates: gates, Settle: 4, OnFailure: raygatev1alpha1.FailureRollback})
		green := g.Green
		Eventually(rstest.ActiveName(ctx, k8s, g.NS, g.Name), 2*time.Minute).Should(Equal(green), g.Describe("the upgrade completes"))
		Eventually(rstest.ClusterNames(ctx, k8s, g.NS), time.Minute).Should(ConsistOf(green))
		rep, samples, conds := g.Stop()

		sum := rep.Summary()
		Expect(sum.Failed).To(BeZero(), "failed requests: %v", sum.Errors)
		Expect(sum.ByCluster).To(HaveKey(g.NS + "/" + green))
		Expect(gwenv.DistinctShares(samples, green)).To(BeNumerically(">=", 3), "traffic moved in steps")
		for _, c := range conds {
			Expect(c.State).NotTo(Equal("False/"+raygatev1alpha1.GateFailed), c.Message)
		}

		By("every gate passed within its documented bound, on data: Prometheus evaluated each query before every traffic step")
		report := []string{}
		for _, gate := range gates {
			bound, err := strconv.ParseFloat(gate.Max, 64)
			Expect(err).NotTo(HaveOccurred())
			passed := passedValues(conds, gate.Gate)
			Expect(passed).NotTo(BeEmpty(), "UpgradeGates reported %s passing: %v", gate.Gate, conds)
			for _, v := range passed {
				Expect(v).To(BeNumerically("<=", bound), gate.Gate)
				if gate.Gate != latencyGate {
					Expect(v).To(BeNumerically("<=", 0.01), "%s: no request failed", gate.Gate)
				}
			}
			// The new pods' first scrape may come after the first evaluation: no data then
			// (the upgrade waits), never once the gate had data.
			evals := g.Evaluations(ctx, gate)
			answered, early := 0, 0
			for _, e := range evals {
				Expect(e.Err).To(BeEmpty(), gate.Gate)
				switch {
				case e.OK:
					answered++
				case answered == 0:
					early++
				default:
					Fail(fmt.Sprintf("%s returned no data at %s, after it had data: %+v", gate.Gate, e.At, evals))
				}
			}
			Expect(answered).To(BeNumerically(">=", 4), "%s evaluated on data before each of the 4 traffic steps: %+v", gate.Gate, evals)
			report = append(report, fmt.Sprintf("%s: %d evaluations (%d before the new pods' data), values in UpgradeGates %v", gate.Gate, len(evals), early, passed))
		}

		By("the gates judged real traffic: an evaluation saw requests to the new cluster in Traefik's and in Ray's counters")
		traefikWindow, serveWindow := rangeOf(gateDoc(traefikGate).Query), rangeOf(gateDoc(errorGate).Query)
		seenByTraefik, seenByRay := 0.0, 0.0
		for _, e := range g.Evaluations(ctx, gateDoc(traefikGate)) {
			seenByTraefik = math.Max(seenByTraefik, increase(ctx, traefikSelector(g.NS, green, ""), traefikWindow, e.At))
		}
		for _, e := range g.Evaluations(ctx, gateDoc(errorGate)) {
			seenByRay = math.Max(seenByRay, increase(ctx, serveSelector("ray_serve_num_http_requests_total", g.NS, green), serveWindow, e.At))
		}
		Expect(seenByTraefik).To(BeNumerically(">=", 10))
		Expect(seenByRay).To(BeNumerically(">=", 10))

		By("Traefik's and Ray's counters for the new cluster, as Prometheus stored them, agree with the load generator")
		answered := float64(sum.ByCluster[g.NS+"/"+green])
		var byTraefik, byRay float64
		Eventually(func(gm Gomega) {
			byTraefik, _ = instant(ctx, "sum("+traefikSelector(g.NS, green, "")+")", time.Now())
			byRay, _ = instant(ctx, "sum("+serveSelector("ray_serve_num_http_requests_total", g.NS, green)+")", time.Now())
			gm.Expect(math.Abs(byTraefik-answered)).To(BeNumerically("<=", math.Max(3, 0.02*answered)), "Traefik counted %v, the load generator got %v answers", byTraefik, answered)
			gm.Expect(math.Abs(byRay-answered)).To(BeNumerically("<=", math.Max(3, 0.02*answered)), "Ray's proxies counted %v, the load generator got %v answers", byRay, answered)
		}, 10*time.Second).Should(Succeed())

		By("docs/monitoring.md's series check finds the namespace's Serve series")
		check := docExample("docs/monitoring.md", docqueries.Shell, "What the metric gates read")
		vec, err := prom.Vector(ctx, check.Query)
		Expect(err).NotTo(HaveOccurred())
		Expect(vec.String()).To(ContainSubstring(fmt.Sprintf(`namespace=%q`, g.NS)), "%s: %s", check.Query, vec)
		AddReportEntry(fmt.Sprintf("GATES (Prometheus) healthy %s -> %s: sent=%d failed=%d; %s; requests to %s in an evaluation's window: Traefik %.0f, Ray %.0f; counted in all: Traefik %v, Ray %v, load generator %v",
			g.Blue, green, sum.Sent, sum.Failed, strings.Join(report, "; "), green, seenByTraefik, seenByRay, byTraefik, byRay, answered))
	})

	It(gwenv.SpecGatesFail, func(ctx context.Context) {
		const failRatio = 0.3
		gates := documentedGates()
		g := startGated(ctx, "gwgatebad-", gatedOptions{Gates: gates, FailRatio: failRatio, OnFailure: raygatev1alpha1.FailureRollback})
		green := g.Green
		Eventually(func() bool { return g.Conds.Seen("False/" + raygatev1alpha1.GateFailed) }, 2*time.Minute).Should(BeTrue(), g.Describe("a gate fails"))
		Eventually(rstest.PendingName(ctx, k8s, g.NS, g.Name), 2*time.Minute).Should(BeEmpty(), "the pending cluster is dropped")
		Expect(rstest.ActiveName(ctx, k8s, g.NS, g.Name)()).To(Equal(g.Blue))
		Eventually(rstest.ClusterNames(ctx, k8s, g.NS), time.Minute).Should(ConsistOf(g.Blue))
		rep, samples, conds := g.Stop()

		By("the error ratio from Ray's counters fails first; the condition names the query, the value and the threshold")
		failed, value := failedGate(conds)
		errGate := gateDoc(errorGate)
		maxGreen := expectRolledBack(ctx, g, errGate, failed, samples)
		Expect(value).To(BeNumerically("~", failRatio, 0.12), "the measured error ratio")

		By("Prometheus evaluated that value; Traefik's 5xx gate, evaluated with it, saw the same failures; both agree with the load generator")
		at := evaluationOf(ctx, g, errGate, value)
		serveWindow := rangeOf(errGate.Query)
		lgFails, lgAll := g.Window(rep, green, at.At.Add(-serveWindow), at.At)
		Expect(lgAll).To(BeNumerically(">=", 10), "the load generator got answers from %s in the window", green)
		Expect(value).To(BeNumerically("~", float64(lgFails)/float64(lgAll), 0.1), "Ray's error ratio %v vs the load generator's %d of %d", value, lgFails, lgAll)
		tGate := gateDoc(traefikGate)
		tValue, ok := instant(ctx, g.Rendered(tGate), at.At)
		Expect(ok).To(BeTrue())
		tWindow := rangeOf(tGate.Query)
		tFails, tAll := increase(ctx, traefikSelector(g.NS, green, `,code=~"5.."`), tWindow, at.At), increase(ctx, traefikSelector(g.NS, green, ""), tWindow, at.At)
		tlFails, tlAll := g.Window(rep, green, at.At.Add(-tWindow), at.At)
		Expect(tValue).To(BeNumerically(">", 0.05), "Traefik's gate fails too")
		Expect(tValue).To(BeNumerically("~", float64(tlFails)/float64(max(tlAll, 1)), 0.1), "Traefik's 5xx ratio %v (%.1f of %.1f) vs the load generator's %d of %d", tValue, tFails, tAll, tlFails, tlAll)

		By("docs/monitoring.md's example, rendered for the pending cluster, reads the same ratio")
		shown := docExample("docs/monitoring.md", docqueries.PromQL, "What the metric gates read")
		rendered, err := promgate.Render(shown.Query, promgate.Vars{Namespace: g.NS, RayService: g.Name, Pending: green, Active: g.Blue})
		Expect(err).NotTo(HaveOccurred())
		shownValue, ok := instant(ctx, rendered, at.At)
		Expect(ok).To(BeTrue(), rendered)
		Expect(shownValue).To(BeNumerically("~", at.Value, 1e-9))

		By("only the pending cluster failed requests, all with the simulated 500")
		sum := rep.Summary()
		failedFrom := map[string]int{}
		for _, r := range rep.Results {
			if r.Failed {
				Expect(r.Status).To(Equal(500), "a failure that is not the simulated 500: %+v", r)
				failedFrom[r.Cluster]++
			}
		}
		Expect(failedFrom).To(HaveLen(1))
		Expect(failedFrom).To(HaveKey(g.NS+"/"+green), "failures only from the pending cluster")
		expectOnlyOldAtEnd(g, rep)
		greenFails, greenAll := g.Window(rep, green, g.LoadStart, time.Now())
		AddReportEntry(fmt.Sprintf("GATES (Prometheus) failing %s (30%% 5xx) -> rollback to %s: sent=%d failed=%d (all from %s: %d of its %d answers); max weight on it %.2f; %s %v vs load generator %d of %d in %s; %s %.3f (Traefik %.1f of %.1f) vs load generator %d of %d in %s",
			green, g.Blue, sum.Sent, sum.Failed, green, greenFails, greenAll, maxGreen, errorGate, value, lgFails, lgAll, serveWindow, traefikGate, tValue, tFails, tAll, tlFails, tlAll, tWindow))
	})

	It(gwenv.SpecGatesSlow, func(ctx context.Context) {
		const latency = 400 * time.Millisecond
		gates := documentedGates()
		g := startGated(ctx, "gwgateslow-", gatedOptions{Gates: gates, Latency: latency, OnFailure: raygatev1alpha1.FailureRollback})
		green := g.Green
		Eventually(func() bool { return g.Conds.Seen("False/" + raygatev1alpha1.GateFailed) }, 2*time.Minute).Should(BeTrue(), g.Describe("a gate fails"))
		Eventually(rstest.PendingName(ctx, k8s, g.NS, g.Name), 2*time.Minute).Should(BeEmpty(), "the pending cluster is dropped")
		Eventually(rstest.ClusterNames(ctx, k8s, g.NS), time.Minute).Should(ConsistOf(g.Blue))
		rep, samples, conds := g.Stop()

		By("the p99 latency from Ray's histogram fails; the error gates passed")
		failed, value := failedGate(conds)
		latGate := gateDoc(latencyGate)
		maxGreen := expectRolledBack(ctx, g, latGate, failed, samples)
		// Every answer takes 400 ms and more: histogram_quantile interpolates within Serve's
		// bucket (400, 500] or, on a loaded machine, a later one ((500, 1000] seen at a load
		// average of 56 on two cores); the load generator's 2 s timeout bounds it.
		Expect(value).To(BeNumerically(">", 400))
		Expect(value).To(BeNumerically("<=", 2000))
		Expect(failed.Message).NotTo(ContainSubstring(errorGate))
		at := evaluationOf(ctx, g, latGate, value)

		By("the load generator waited at least as long for the new cluster's answers")
		sum := rep.Summary()
		Expect(sum.Failed).To(BeZero(), "a slow version fails no request: %v", sum.Errors)
		var slowest time.Duration
		n := 0
		for _, r := range rep.Results {
			if r.Cluster == g.NS+"/"+green {
				n++
				slowest = max(slowest, r.Latency)
				Expect(r.Latency).To(BeNumerically(">=", latency), "an answer from %s", green)
			}
		}
		Expect(n).To(BeNumerically(">=", 5), "answers from %s", green)
		expectOnlyOldAtEnd(g, rep)
		AddReportEntry(fmt.Sprintf("GATES (Prometheus) slow %s (+%s a request) -> rollback to %s: sent=%d failed=%d; %s %v at %s; %d answers from %s, the slowest %s; max weight on it %.2f",
			green, latency, g.Blue, sum.Sent, sum.Failed, latencyGate, value, at.At.Format("15:04:05.000"), n, green, slowest.Round(time.Millisecond), maxGreen))
	})
})

// docExample finds a documented example by document, kind and heading.
func docExample(doc string, kind docqueries.Kind, heading string) docqueries.Example {
	GinkgoHelper()
	ex, err := docqueries.Read(doc)
	Expect(err).NotTo(HaveOccurred())
	for _, e := range ex {
		if e.Kind == kind && e.Heading == heading {
			return e
		}
	}
	Fail(fmt.Sprintf("no %s example under %q in %s: a doc edit moved the example this spec runs", kind, heading, doc))
	return docqueries.Example{}
}
