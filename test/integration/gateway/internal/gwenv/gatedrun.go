package gwenv

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
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

const (
	// GatePolicy is the UpgradePolicy of a gated run.
	GatePolicy = "canary"
	// GateInterval is a gated run's intervalSeconds: Traefik routes by a step within ~2 s,
	// leaving ~3 s of data.
	GateInterval = 5
	// gateRate is the load's requests per second.
	gateRate = 40
	// routeLag is how long after an HTTPRoute change Traefik may still route by the old
	// weights (its 2 s providersThrottleDuration, and margin).
	routeLag = 2500 * time.Millisecond
	// tableInterval is the width of the windows the load is tabulated over.
	tableInterval = time.Second
)

// GatedRun is an incremental RayService under load through Traefik, gated by a policy of
// documented gates.
type GatedRun struct {
	NS, Name, Blue string
	Gates          []docqueries.Example
	LoadStart      time.Time
	Conds          *ConditionWatch
	// Green is the new cluster, known once StartGated returns.
	Green string

	gw      *Gates
	run     *load.Run
	weights *load.WeightWatch
	mu      sync.Mutex // guards Green until StartGated returns
}

// GatedOptions shape StartGated's policy and new version.
type GatedOptions struct {
	Gates []docqueries.Example
	// FailRatio is the share of user requests the new cluster's Serve fails.
	FailRatio float64
	// Latency is how long the new cluster's applications take over each user request.
	Latency      time.Duration
	Settle       int32
	OnFailure    raygatev1alpha1.FailureAction
	QueryTimeout int32 // 0: the default
}

// StartGated creates the policy and the RayService (incremental, 100% surge, 25% steps every
// GateInterval) and sends load through Traefik. It returns once raygate submitted a config
// to the new cluster, the upgrade to a new image having been asked for.
func (gw *Gates) StartGated(ctx context.Context, prefix string, o GatedOptions) *GatedRun {
	ginkgo.GinkgoHelper()
	const name = "fruit"
	k8s := gw.Client
	ns := rstest.NewNamespace(ctx, k8s, prefix)
	pol := &raygatev1alpha1.UpgradePolicy{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: GatePolicy},
		Spec:       raygatev1alpha1.UpgradePolicySpec{OnFailure: o.OnFailure, SettleSeconds: ptr.To(o.Settle)},
	}
	if o.QueryTimeout > 0 {
		pol.Spec.QueryTimeoutSeconds = ptr.To(o.QueryTimeout)
	}
	for _, e := range o.Gates {
		pol.Spec.Gates = append(pol.Spec.Gates, raygatev1alpha1.Gate{Name: e.Gate, Query: e.Query, Min: e.Min, Max: e.Max})
	}
	gomega.Expect(k8s.Create(ctx, pol)).To(gomega.Succeed())
	svc := builders.RayService(name, ns).Incremental(100, 25, GateInterval, ClassName).DeletionDelay(2).Obj()
	svc.Annotations = map[string]string{raygatev1alpha1.UpgradePolicyAnnotation: GatePolicy}
	blue := gw.CreateServing(ctx, ns, name, svc)
	g := &GatedRun{NS: ns, Name: name, Blue: blue, Gates: o.Gates, gw: gw}

	// The new cluster is known when raygate submits its first config (before its
	// applications run, so before any traffic): make its Serve fail the share asked for.
	var live atomic.Bool
	live.Store(true)
	ginkgo.DeferCleanup(func() { live.Store(false) })
	gw.Dashboards.OnSubmit(func(c types.NamespacedName, _ raysim.Submission) {
		if !live.Load() || c.Namespace != ns || c.Name == blue {
			return
		}
		g.mu.Lock()
		first := g.Green == ""
		if first {
			g.Green = c.Name
		}
		g.mu.Unlock()
		if !first {
			return
		}
		if sim := gw.Dashboards.Server(c); sim != nil {
			sim.SetUserErrorRatio(o.FailRatio)
			sim.SetUserLatency(o.Latency)
		}
	})

	url := rstest.GatewayURL(ctx, k8s, ns, name)
	opts := load.Options{Target: load.URL(url), Path: "/fruit", Rate: gateRate, Workers: 16, MaxRequests: 8000, MaxDuration: 180 * time.Second, Timeout: 2 * time.Second}
	gomega.Eventually(func(gm gomega.Gomega) {
		rep, err := load.Once(ctx, load.Options{Target: opts.Target, Path: opts.Path, MaxRequests: 1})
		gm.Expect(err).NotTo(gomega.HaveOccurred())
		gm.Expect(rep.Summary().ByCluster).To(gomega.HaveKey(ns + "/" + blue))
	}).Should(gomega.Succeed())
	ginkgo.By("sending steady load through Traefik and upgrading")
	g.weights = gw.WatchWeights(ctx, ns, name)
	g.Conds = gw.WatchGateCondition(ctx, ns, name)
	var err error
	g.LoadStart = time.Now()
	g.run, err = load.Start(ctx, opts)
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	rstest.Update(ctx, k8s, ns, name, func(s *rayv1.RayService) { rstest.SetImage(s, "rayproject/ray:2.53.0") })
	gomega.Eventually(func() string {
		g.mu.Lock()
		defer g.mu.Unlock()
		return g.Green
	}).ShouldNot(gomega.BeEmpty(), "raygate submits a config to a new cluster")
	return g
}

// Describe is what a failed wait on the upgrade says: what it waited for and the
// UpgradeGates condition last seen.
func (g *GatedRun) Describe(waitedFor string) func() string {
	return func() string {
		last := g.Conds.Last()
		return fmt.Sprintf("%s; UpgradeGates %s: %s", waitedFor, last.State, last.Message)
	}
}

// Rendered is a gate's query as raygate sends it for this upgrade.
func (g *GatedRun) Rendered(gate docqueries.Example) string {
	ginkgo.GinkgoHelper()
	q, err := promgate.Render(gate.Query, promgate.Vars{Namespace: g.NS, RayService: g.Name, Pending: g.Green, Active: g.Blue})
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	return q
}

// Evaluation is one evaluation of a gate's query by Prometheus, as its query log recorded
// it, with the value Prometheus gives again for that time.
type Evaluation struct {
	At    time.Time
	Value float64
	OK    bool // false: no data (or NaN)
	Err   string
}

// Evaluations are Prometheus's evaluations of the gate's rendered query, each evaluated
// again at its time.
func (g *GatedRun) Evaluations(ctx context.Context, gate docqueries.Example) []Evaluation {
	ginkgo.GinkgoHelper()
	q := g.Rendered(gate)
	logged, err := g.gw.Prom.LoggedQueries()
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	var out []Evaluation
	for _, l := range logged {
		if l.Query != q {
			continue
		}
		e := Evaluation{At: l.At, Err: l.Err}
		if e.Err == "" {
			e.Value, e.OK = g.gw.Instant(ctx, q, l.At)
		}
		out = append(out, e)
	}
	return out
}

// Stop lets the load run past Traefik's routing lag, then stops it and the recordings.
func (g *GatedRun) Stop() (*load.Report, []load.WeightSample, []GateCondition) {
	ginkgo.GinkgoHelper()
	before := len(g.run.Report().Results)
	gomega.Eventually(func() int { return len(g.run.Report().Results) }).Should(gomega.BeNumerically(">", before+int(gateRate*(routeLag+time.Second).Seconds())))
	rep, samples, conds := g.run.Stop(), g.weights.Stop(), g.Conds.Stop()
	ginkgo.GinkgoWriter.Printf("HTTPRoute weights (from the start of the load):\n%s", Timeline(samples))
	ginkgo.GinkgoWriter.Printf("load through Traefik:\n%s%s", rep.Table(tableInterval), Failures(rep))
	for _, c := range conds {
		ginkgo.GinkgoWriter.Printf("%s UpgradeGates %s: %s\n", c.At.Format("15:04:05.000"), c.State, c.Message)
	}
	return rep, samples, conds
}

// Window is what the load generator saw from cluster for requests sent in [from, to].
func (g *GatedRun) Window(rep *load.Report, cluster string, from, to time.Time) (fails, all int) {
	for _, r := range rep.Results {
		sent := g.LoadStart.Add(r.At)
		if r.Cluster != g.NS+"/"+cluster || sent.Before(from) || sent.After(to) {
			continue
		}
		all++
		if r.Status >= 500 {
			fails++
		}
	}
	return fails, all
}
