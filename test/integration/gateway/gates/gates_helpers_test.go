package gates

import (
	"context"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/prometheus/common/model"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	raygatev1alpha1 "github.com/raygate/raygate/apis/raygate/v1alpha1"
	"github.com/raygate/raygate/internal/promgate"
	"github.com/raygate/raygate/internal/testenv/docqueries"
	"github.com/raygate/raygate/internal/testenv/load"
	"github.com/raygate/raygate/internal/testenv/raysim"
	"github.com/raygate/raygate/test/builders"
	"github.com/raygate/raygate/test/integration/internal/rstest"
)

// Metric gates judged by the real Prometheus (internal/testenv/prometheus, built by `make
// tools`): it scrapes the suite's Traefik and the simulated Ray pods' Serve metrics every
// second, and the operator's --prometheus-url is its address, so every gate query is
// evaluated by Prometheus's own engine. The queries
// are the examples of the user docs, read from them (docqueries): a doc edit that breaks
// one fails these specs. Prometheus logs every query it evaluates (with its evaluation
// time), so a spec can ask it again what a gate saw, and break the value down.

// gateDoc finds a documented UpgradePolicy gate by name; the specs use its query and
// bounds verbatim.
func gateDoc(name string) docqueries.Example {
	GinkgoHelper()
	ex, err := docqueries.Read(docqueries.GateDocs...)
	Expect(err).NotTo(HaveOccurred())
	for _, e := range ex {
		if e.Kind == docqueries.Gate && e.Gate == name {
			return e
		}
	}
	Fail(fmt.Sprintf("no gate %q in %v: a doc edit renamed or removed the example this spec runs", name, docqueries.GateDocs))
	return docqueries.Example{}
}

const (
	gatePolicy   = "canary"
	gateInterval = 5 // intervalSeconds: Traefik routes by a step within ~2 s, leaving ~3 s of data
	gateRate     = 40
)

// gatedRun is an incremental RayService under load through Traefik, gated by a policy of
// documented gates.
type gatedRun struct {
	ns, name, blue string
	gates          []docqueries.Example
	loadStart      time.Time
	run            *load.Run
	weights        *weightWatch
	conds          *conditionWatch

	mu    sync.Mutex
	green string
}

// gatedOptions shape startGated's policy and new version.
type gatedOptions struct {
	gates []docqueries.Example
	// failRatio is the share of user requests the new cluster's Serve fails.
	failRatio float64
	// latency is how long the new cluster's applications take over each user request.
	latency      time.Duration
	settle       int32
	onFailure    raygatev1alpha1.FailureAction
	queryTimeout int32 // 0: the default
}

// startGated creates the policy and the RayService (incremental, 100% surge, 25% steps every
// gateInterval) and sends load through Traefik. It returns once raygate submitted a config
// to the new cluster, the upgrade to a new image having been asked for.
func startGated(ctx context.Context, prefix string, o gatedOptions) *gatedRun {
	const name = "fruit"
	ns := rstest.NewNamespace(ctx, k8s, prefix)
	pol := &raygatev1alpha1.UpgradePolicy{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: gatePolicy},
		Spec:       raygatev1alpha1.UpgradePolicySpec{OnFailure: o.onFailure, SettleSeconds: ptr.To(o.settle)},
	}
	if o.queryTimeout > 0 {
		pol.Spec.QueryTimeoutSeconds = ptr.To(o.queryTimeout)
	}
	for _, e := range o.gates {
		pol.Spec.Gates = append(pol.Spec.Gates, raygatev1alpha1.Gate{Name: e.Gate, Query: e.Query, Min: e.Min, Max: e.Max})
	}
	Expect(k8s.Create(ctx, pol)).To(Succeed())
	svc := builders.RayService(name, ns).Incremental(100, 25, gateInterval, className).DeletionDelay(2).Obj()
	svc.Annotations = map[string]string{raygatev1alpha1.UpgradePolicyAnnotation: gatePolicy}
	blue := createServing(ctx, ns, name, svc)
	g := &gatedRun{ns: ns, name: name, blue: blue, gates: o.gates}

	// The new cluster is known when raygate submits its first config (before its
	// applications run, so before any traffic): make its Serve fail the share asked for.
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
		if sim := dashboards.Server(c); sim != nil {
			sim.SetUserErrorRatio(o.failRatio)
			sim.SetUserLatency(o.latency)
		}
	})

	url := rstest.GatewayURL(ctx, k8s, ns, name)
	opts := load.Options{Target: load.URL(url), Path: "/fruit", Rate: gateRate, Workers: 16, MaxRequests: 8000, MaxDuration: 180 * time.Second, Timeout: 2 * time.Second}
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

// describe is what a failed wait on the upgrade says: what it waited for and the
// UpgradeGates condition last seen.
func (g *gatedRun) describe(waitedFor string) func() string {
	return func() string {
		last := g.conds.last()
		return fmt.Sprintf("%s; UpgradeGates %s: %s", waitedFor, last.State, last.Message)
	}
}

// rendered is a gate's query as raygate sends it for this upgrade.
func (g *gatedRun) rendered(gate docqueries.Example) string {
	GinkgoHelper()
	q, err := promgate.Render(gate.Query, promgate.Vars{Namespace: g.ns, RayService: g.name, Pending: g.green, Active: g.blue})
	Expect(err).NotTo(HaveOccurred())
	return q
}

// evaluation is one evaluation of a gate's query by Prometheus, as its query log recorded
// it, with the value Prometheus gives again for that time.
type evaluation struct {
	At    time.Time
	Value float64
	OK    bool // false: no data (or NaN)
	Err   string
}

// evaluations are Prometheus's evaluations of the gate's rendered query, each evaluated
// again at its time.
func (g *gatedRun) evaluations(ctx context.Context, gate docqueries.Example) []evaluation {
	GinkgoHelper()
	q := g.rendered(gate)
	logged, err := prom.LoggedQueries()
	Expect(err).NotTo(HaveOccurred())
	var out []evaluation
	for _, l := range logged {
		if l.Query != q {
			continue
		}
		e := evaluation{At: l.At, Err: l.Err}
		if e.Err == "" {
			e.Value, e.OK = instant(ctx, q, l.At)
		}
		out = append(out, e)
	}
	return out
}

// rangeOf is the range of the first range selector of a query ([20s] in the Traefik gate).
func rangeOf(query string) time.Duration {
	GinkgoHelper()
	m := regexp.MustCompile(`\[([0-9]+[smh])\]`).FindStringSubmatch(query)
	Expect(m).NotTo(BeNil(), "a range selector in %s", query)
	d, err := model.ParseDuration(m[1])
	Expect(err).NotTo(HaveOccurred())
	return time.Duration(d)
}

// instant evaluates expr at at with Prometheus's engine: the one value of its answer (ok
// false for no data or NaN).
func instant(ctx context.Context, expr string, at time.Time) (float64, bool) {
	GinkgoHelper()
	v, _, err := prom.API().Query(ctx, expr, at)
	Expect(err).NotTo(HaveOccurred(), expr)
	vec, isVec := v.(model.Vector)
	Expect(isVec).To(BeTrue(), "%s returned a %s", expr, v.Type())
	Expect(len(vec)).To(BeNumerically("<=", 1), "%s: %v", expr, vec)
	if len(vec) == 0 || math.IsNaN(float64(vec[0].Value)) {
		return 0, false
	}
	return float64(vec[0].Value), true
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

// passedValues are the values a gate had in the GatesPassed conditions recorded.
func passedValues(conds []gateCondition, gate string) []float64 {
	GinkgoHelper()
	re := regexp.MustCompile(regexp.QuoteMeta(gate) + `=([^ ]+) \(`)
	var out []float64
	for _, c := range conds {
		if m := re.FindStringSubmatch(c.Message); c.State == "True/"+raygatev1alpha1.GatesPassed && m != nil {
			v, err := strconv.ParseFloat(m[1], 64)
			Expect(err).NotTo(HaveOccurred())
			out = append(out, v)
		}
	}
	return out
}

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

// last is the latest state recorded ("" before any).
func (w *conditionWatch) last() gateCondition {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.states) == 0 {
		return gateCondition{}
	}
	return w.states[len(w.states)-1]
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
