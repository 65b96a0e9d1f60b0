package gateway

import (
	"context"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	raygatev1alpha1 "github.com/raygate/raygate/apis/raygate/v1alpha1"
	"github.com/raygate/raygate/internal/promgate"
	"github.com/raygate/raygate/internal/testenv/load"
	"github.com/raygate/raygate/internal/testenv/promscrape"
	"github.com/raygate/raygate/internal/testenv/raysim"
	"github.com/raygate/raygate/test/builders"
	"github.com/raygate/raygate/test/integration/internal/rstest"
)

// Metric gates judged on what Traefik itself counted. The suite's Traefik exposes its
// Prometheus metrics on loopback; promscrape scrapes them every 500 ms and answers the one
// query these specs register — the gate's, rendered for the pending cluster — from the
// scraped traefik_service_requests_total counters (it evaluates no other PromQL). The
// operator queries it through --prometheus-url as it would a real Prometheus.

// traefikRequests is Traefik's request counter per service, code, method and protocol.
const traefikRequests = "traefik_service_requests_total"

// gateWindow is the range of the gate's rate(): long enough to hold a whole traffic step.
const gateWindow = 20 * time.Second

// traefikGateQuery is the pending cluster's share of 5xx answers through Traefik over the
// last 20 s, 0 while it got no request (before the first traffic step there is nothing to
// judge, and a ratio of nothing is NaN, which would hold the upgrade). Traefik names the
// backend of raygate's HTTPRoute for a cluster <namespace>-<cluster>-serve-svc-http-<port>
// with the provider suffix @kubernetesgateway.
const traefikGateQuery = `(sum(rate(traefik_service_requests_total{service=~"{{namespace}}-{{pending}}-serve-svc-.*",code=~"5.."}[20s]))` +
	` / sum(rate(traefik_service_requests_total{service=~"{{namespace}}-{{pending}}-serve-svc-.*"}[20s]))) or vector(0)`

const (
	gatePolicy   = "traefik-5xx"
	gateName     = "pending-5xx-ratio"
	gateMax      = 0.05
	gateInterval = 5 // intervalSeconds: Traefik routes by a step within ~2 s, leaving ~3 s of data
	gateRate     = 40
)

// gateEval is one evaluation of the registered query, with Traefik's counts behind it.
type gateEval struct {
	At          time.Time
	Fails, All  float64
	Value       float64
	PendingName string
}

// gatedRun is an incremental RayService with the Traefik gate under load through Traefik.
type gatedRun struct {
	ns, name, blue string
	loadStart      time.Time
	run            *load.Run
	weights        *weightWatch
	conds          *conditionWatch

	mu    sync.Mutex
	evals []gateEval
	green string
}

func (g *gatedRun) evaluations() []gateEval {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]gateEval(nil), g.evals...)
}

// startGated creates the policy and the RayService (incremental, 100% surge, 25% steps every
// gateInterval) and sends load through Traefik; failRatio is the share of user requests the
// new cluster's Serve fails. It returns once the upgrade to a new image was asked for.
func startGated(ctx context.Context, prefix string, failRatio float64, settle int32) *gatedRun {
	const name = "fruit"
	ns := rstest.NewNamespace(ctx, k8s, prefix)
	Expect(k8s.Create(ctx, &raygatev1alpha1.UpgradePolicy{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: gatePolicy},
		Spec: raygatev1alpha1.UpgradePolicySpec{
			Gates:         []raygatev1alpha1.Gate{{Name: gateName, Query: traefikGateQuery, Max: strconv.FormatFloat(gateMax, 'f', -1, 64)}},
			OnFailure:     raygatev1alpha1.FailureRollback,
			SettleSeconds: ptr.To(settle),
		},
	})).To(Succeed())
	svc := builders.RayService(name, ns).Incremental(100, 25, gateInterval, className).DeletionDelay(2).Obj()
	svc.Annotations = map[string]string{raygatev1alpha1.UpgradePolicyAnnotation: gatePolicy}
	blue := createServing(ctx, ns, name, svc)
	g := &gatedRun{ns: ns, name: name, blue: blue}

	// The new cluster is known when raygate submits its first config (before its
	// applications run, so before any traffic): register the query as raygate will render
	// it, and make its Serve fail the share asked for.
	var live atomic.Bool
	live.Store(true)
	DeferCleanup(func() { live.Store(false) })
	dashboards.OnSubmit(func(c types.NamespacedName, _ raysim.Submission) {
		if !live.Load() || c.Namespace != ns || c.Name == blue {
			return
		}
		g.mu.Lock()
		first := g.green == ""
		if first {
			g.green = c.Name
		}
		g.mu.Unlock()
		if !first {
			return
		}
		q, err := promgate.Render(traefikGateQuery, promgate.Vars{Namespace: ns, RayService: name, Pending: c.Name, Active: blue})
		Expect(err).NotTo(HaveOccurred())
		scraped.Register(q, g.pendingErrorRatio(c.Name))
		if sim := dashboards.Server(c); sim != nil && failRatio > 0 {
			sim.SetUserErrorRatio(failRatio)
		}
	})

	url := rstest.GatewayURL(ctx, k8s, ns, name)
	opts := load.Options{Target: load.URL(url), Path: "/fruit", Rate: gateRate, Workers: 4, MaxRequests: 6000, MaxDuration: 150 * time.Second, Timeout: 2 * time.Second}
	Eventually(func(gm Gomega) {
		rep, err := load.Once(ctx, load.Options{Target: opts.Target, Path: opts.Path, MaxRequests: 1})
		gm.Expect(err).NotTo(HaveOccurred())
		gm.Expect(rep.Summary().ByCluster).To(HaveKey(ns + "/" + blue))
	}).Should(Succeed())
	By("sending steady load through Traefik and upgrading")
	g.weights = watchWeights(ctx, ns, name)
	g.conds = watchGateCondition(ctx, ns, name)
	var err error
	g.loadStart = time.Now()
	g.run, err = load.Start(ctx, opts)
	Expect(err).NotTo(HaveOccurred())
	rstest.Update(ctx, k8s, ns, name, func(s *rayv1.RayService) { rstest.SetImage(s, "rayproject/ray:2.53.0") })
	Eventually(func() string {
		g.mu.Lock()
		defer g.mu.Unlock()
		return g.green
	}).ShouldNot(BeEmpty(), "raygate submits a config to a new cluster")
	return g
}

// pendingErrorRatio computes the registered query from the scraped counters, as PromQL
// would: the growth of the 5xx counters of the pending cluster's Traefik service over the
// window, divided by the growth of all of its counters; 0 without requests (the query's
// `or vector(0)`).
func (g *gatedRun) pendingErrorRatio(pending string) promscrape.Func {
	service := regexp.MustCompile("^" + regexp.QuoteMeta(g.ns+"-"+pending+"-serve-svc-") + ".*$")
	mine := func(l promscrape.Labels) bool {
		return l["__name__"] == traefikRequests && service.MatchString(l["service"])
	}
	fivexx := func(l promscrape.Labels) bool { return mine(l) && len(l["code"]) == 3 && l["code"][0] == '5' }
	return func(st *promscrape.Store, at time.Time) (float64, bool) {
		all, ok := st.Increase(mine, at, gateWindow)
		if !ok {
			return 0, false
		}
		fails, _ := st.Increase(fivexx, at, gateWindow)
		v, ok := promscrape.Ratio(fails, all)
		if !ok {
			v = 0
		}
		g.mu.Lock()
		g.evals = append(g.evals, gateEval{At: at, Fails: fails, All: all, Value: v, PendingName: pending})
		g.mu.Unlock()
		return v, true
	}
}

// stop lets the load run past Traefik's routing lag, then stops it and the recordings.
func (g *gatedRun) stop() (*load.Report, []weightSample, []gateCondition) {
	before := len(g.run.Report().Results)
	Eventually(func() int { return len(g.run.Report().Results) }).Should(BeNumerically(">", before+int(gateRate*(scenarioLag+time.Second).Seconds())))
	rep, samples, conds := g.run.Stop(), g.weights.stop(), g.conds.stop()
	GinkgoWriter.Printf("HTTPRoute weights (from the start of the load):\n%s", timeline(samples))
	GinkgoWriter.Printf("load through Traefik:\n%s%s", rep.Table(interval), failures(rep))
	for _, c := range conds {
		GinkgoWriter.Printf("%s UpgradeGates %s: %s\n", c.At.Format("15:04:05.000"), c.State, c.Message)
	}
	for _, l := range scraped.Store().Series(func(l promscrape.Labels) bool {
		return l["__name__"] == traefikRequests && strings.HasPrefix(l["service"], g.ns+"-")
	}) {
		GinkgoWriter.Printf("scraped series %v\n", l)
	}
	for _, e := range g.evaluations() {
		GinkgoWriter.Printf("%s gate on %s: %v 5xx of %v requests in %s: %.4f\n", e.At.Format("15:04:05.000"), e.PendingName, e.Fails, e.All, gateWindow, e.Value)
	}
	return rep, samples, conds
}

// window is what the load generator saw from cluster for requests sent in [from, to].
func (g *gatedRun) window(rep *load.Report, cluster string, from, to time.Time) (fails, all int) {
	for _, r := range rep.Results {
		sent := g.loadStart.Add(r.At)
		if r.Cluster != g.ns+"/"+cluster || sent.Before(from) || sent.After(to) {
			continue
		}
		all++
		if r.Status >= 500 {
			fails++
		}
	}
	return fails, all
}

// gateValueRE finds the value a GateFailed message reports.
var gateValueRE = regexp.MustCompile(`returned ([^ ,]+), above max`)

// passedValueRE finds the gate's value in a GatesPassed message.
var passedValueRE = regexp.MustCompile(regexp.QuoteMeta(gateName) + `=([^ ]+) \(max `)

var _ = Describe("metric gates on metrics scraped from Traefik", func() {
	It("a healthy new version passes the Traefik 5xx gate at every step and is promoted", func(ctx context.Context) {
		g := startGated(ctx, "gwgateok-", 0, 4)
		green := g.green
		Eventually(rstest.ActiveName(ctx, k8s, g.ns, g.name), 2*time.Minute).Should(Equal(green), "the upgrade completes")
		Eventually(rstest.ClusterNames(ctx, k8s, g.ns), time.Minute).Should(ConsistOf(green))
		rep, samples, conds := g.stop()
		Expect(scraped.WaitScrape(ctx)).To(Succeed())

		sum := rep.Summary()
		Expect(sum.Failed).To(BeZero(), "failed requests: %v", sum.Errors)
		Expect(sum.ByCluster).To(HaveKey(g.ns + "/" + green))
		Expect(distinctShares(samples, green)).To(BeNumerically(">=", 3), "traffic moved in steps")

		var passed []float64
		for _, c := range conds {
			Expect(c.State).NotTo(Equal("False/"+raygatev1alpha1.GateFailed), c.Message)
			if m := passedValueRE.FindStringSubmatch(c.Message); c.State == "True/"+raygatev1alpha1.GatesPassed && m != nil {
				v, err := strconv.ParseFloat(m[1], 64)
				Expect(err).NotTo(HaveOccurred())
				passed = append(passed, v)
			}
		}
		Expect(passed).NotTo(BeEmpty(), "UpgradeGates reported the gate passing: %v", conds)
		for _, v := range passed {
			Expect(v).To(BeNumerically("<=", 0.01), "the value in the condition is ≈ 0")
		}
		// The gate judged real traffic: some evaluation counted requests Traefik sent to green.
		evals := g.evaluations()
		withData := 0
		for _, e := range evals {
			Expect(e.Value).To(BeZero(), "evaluation at %s", e.At)
			if e.All >= 10 {
				withData++
			}
		}
		Expect(withData).To(BeNumerically(">=", 1), "an evaluation saw requests to %s: %+v", green, evals)

		// Traefik's counter for green agrees with what the load generator got from it.
		seen, _ := scraped.Store().Increase(func(l promscrape.Labels) bool {
			return l["__name__"] == traefikRequests && strings.HasPrefix(l["service"], g.ns+"-"+green+"-serve-svc-")
		}, time.Now(), time.Hour)
		answered := float64(sum.ByCluster[g.ns+"/"+green])
		Expect(math.Abs(seen-answered)).To(BeNumerically("<=", math.Max(3, 0.02*answered)),
			"Traefik counted %v requests to %s, the load generator got %v answers from it", seen, green, answered)
		AddReportEntry(fmt.Sprintf("TRAEFIK GATE healthy %s -> %s: sent=%d failed=%d; %d gate evaluations (%d with requests to %s), values %v; Traefik counted %v requests to %s, load generator %v",
			g.blue, green, sum.Sent, sum.Failed, len(evals), withData, green, passed, seen, green, answered))
	})

	It("a new version failing 30% of requests fails the gate at the first step(s) and rolls back", func(ctx context.Context) {
		const failRatio = 0.3
		g := startGated(ctx, "gwgatebad-", failRatio, 0)
		green := g.green
		Eventually(func() bool { return g.conds.seen("False/" + raygatev1alpha1.GateFailed) }, 2*time.Minute).Should(BeTrue(), "the gate fails")
		Eventually(rstest.PendingName(ctx, k8s, g.ns, g.name), 2*time.Minute).Should(BeEmpty(), "the pending cluster is dropped")
		Expect(rstest.ActiveName(ctx, k8s, g.ns, g.name)()).To(Equal(g.blue))
		Eventually(rstest.ClusterNames(ctx, k8s, g.ns), time.Minute).Should(ConsistOf(g.blue))
		rep, samples, conds := g.stop()

		By("the condition names the query, the value and the threshold")
		query, err := promgate.Render(traefikGateQuery, promgate.Vars{Namespace: g.ns, RayService: g.name, Pending: green, Active: g.blue})
		Expect(err).NotTo(HaveOccurred())
		var failed *gateCondition
		for i := range conds {
			if conds[i].State == "False/"+raygatev1alpha1.GateFailed {
				failed = &conds[i]
				break
			}
		}
		Expect(failed).NotTo(BeNil())
		Expect(failed.Message).To(ContainSubstring(fmt.Sprintf("gate %q of UpgradePolicy %s failed: query %s returned ", gateName, gatePolicy, query)))
		Expect(failed.Message).To(ContainSubstring("above max 0.05"))
		m := gateValueRE.FindStringSubmatch(failed.Message)
		Expect(m).NotTo(BeNil(), failed.Message)
		value, err := strconv.ParseFloat(m[1], 64)
		Expect(err).NotTo(HaveOccurred())
		Expect(value).To(BeNumerically("~", failRatio, 0.12), "the measured 5xx ratio")

		By("the value agrees with the load generator's own count over the gate's window")
		var eval *gateEval
		for _, e := range g.evaluations() {
			if strconv.FormatFloat(e.Value, 'g', 6, 64) == m[1] {
				eval = &e
				break
			}
		}
		Expect(eval).NotTo(BeNil(), "the failing value %s was one promscrape answered", m[1])
		lgFails, lgAll := g.window(rep, green, eval.At.Add(-gateWindow), eval.At)
		Expect(lgAll).To(BeNumerically(">=", 10), "the load generator got answers from %s in the window", green)
		lgRatio := float64(lgFails) / float64(lgAll)
		Expect(value).To(BeNumerically("~", lgRatio, 0.1), "gate %v (Traefik: %v of %v) vs load generator %d of %d", value, eval.Fails, eval.All, lgFails, lgAll)

		By("the event says it too")
		Eventually(rstest.Events(ctx, k8s, g.ns, g.name)).Should(And(
			ContainSubstring(fmt.Sprintf("Warning UpgradeGateFailed: gate %q of UpgradePolicy %s failed: query %s returned %s, above max 0.05", gateName, gatePolicy, query, m[1])),
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
		AddReportEntry(fmt.Sprintf("TRAEFIK GATE failing %s (30%% 5xx) -> rollback to %s: sent=%d failed=%d (all from %s: %d of its %d answers, %.3f); max weight on %s %.2f; gate value %v (Traefik %v of %v in %s) vs load generator %d of %d = %.3f in the same window",
			green, g.blue, sum.Sent, sum.Failed, green, greenFails, greenAll, float64(greenFails)/float64(max(greenAll, 1)), green, maxGreen, value, eval.Fails, eval.All, gateWindow, lgFails, lgAll, lgRatio))
	})
})

// gateCondition is one state of the RayService's UpgradeGates condition.
type gateCondition struct {
	At      time.Time
	State   string // Status/Reason
	Message string
}

// conditionWatch records every distinct UpgradeGates condition every 100 ms: the condition
// is removed once no gated upgrade runs, so a spec must catch it while it is there.
type conditionWatch struct {
	cancel context.CancelFunc
	done   chan struct{}
	mu     sync.Mutex
	states []gateCondition
}

func watchGateCondition(ctx context.Context, ns, name string) *conditionWatch {
	ctx, cancel := context.WithCancel(ctx)
	w := &conditionWatch{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer GinkgoRecover()
		defer close(w.done)
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			var svc rayv1.RayService
			if err := k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, &svc); err == nil {
				if c := meta.FindStatusCondition(svc.Status.Conditions, raygatev1alpha1.UpgradeGatesCondition); c != nil {
					st := gateCondition{At: time.Now(), State: string(c.Status) + "/" + c.Reason, Message: c.Message}
					w.mu.Lock()
					if n := len(w.states); n == 0 || w.states[n-1].State != st.State || w.states[n-1].Message != st.Message {
						w.states = append(w.states, st)
					}
					w.mu.Unlock()
				}
			}
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	return w
}

func (w *conditionWatch) seen(state string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, s := range w.states {
		if s.State == state {
			return true
		}
	}
	return false
}

func (w *conditionWatch) stop() []gateCondition {
	w.cancel()
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]gateCondition(nil), w.states...)
}
