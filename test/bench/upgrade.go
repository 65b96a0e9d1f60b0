package main

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	rayscheme "github.com/raygate/raygate/apis/scheme"
	"github.com/raygate/raygate/internal/rayspec"
	"github.com/raygate/raygate/internal/testenv/framework"
	"github.com/raygate/raygate/internal/testenv/kwokcluster"
	"github.com/raygate/raygate/internal/testenv/raysim"
	"github.com/raygate/raygate/test/builders"
)

// The guide's example: maxSurge 20 %, step 5 %, with the interval scaled down to 2 s.
const (
	upgradeMaxSurge    = 20
	upgradeStep        = 5
	upgradeInterval    = 2 * time.Second
	upgradeGatewayName = "bench-gateway"
	upgradeDeployDelay = 500 * time.Millisecond // simulated Serve applications: DEPLOYING → RUNNING
)

// upgradeResult is the "upgrade" scenario: pacing of an incremental upgrade.
type upgradeResult struct {
	Scenario        string  `json:"scenario"`
	MaxSurgePercent int     `json:"maxSurgePercent"`
	StepSizePercent int     `json:"stepSizePercent"`
	IntervalSeconds float64 `json:"intervalSeconds"`
	// Steps is the number of traffic steps (100 / step); TheoreticalSeconds steps × interval.
	Steps              int     `json:"steps"`
	TheoreticalSeconds float64 `json:"theoreticalSeconds"`
	// WallSeconds is from the spec change to promotion; Overhead is WallSeconds over
	// TheoreticalSeconds, minus 1 (target ≤ 5%).
	WallSeconds float64 `json:"wallSeconds"`
	Overhead    float64 `json:"overhead"`
	// FirstShiftSeconds is from the spec change to the first traffic on the new cluster
	// (cluster created, pods ready, applications RUNNING, capacity raised).
	FirstShiftSeconds float64 `json:"firstShiftSeconds"`
	// TrafficShifts are the observed HTTPRoute weights of the new cluster over time, and
	// ShiftGaps the seconds between consecutive shifts (each should be the interval).
	TrafficShifts []trafficShift `json:"trafficShifts,omitempty"`
	ShiftGaps     gapStats       `json:"shiftGaps"`
	// PromotionAfterLastShiftSeconds is from 100 % traffic to promotion.
	PromotionAfterLastShiftSeconds float64 `json:"promotionAfterLastShiftSeconds"`
	// HTTPRouteWrites are the operator's writes to HTTPRoutes during the upgrade.
	HTTPRouteWrites map[string]int `json:"httpRouteWrites,omitempty"`
	OperatorWrites  *requestCounts `json:"operatorWrites,omitempty"`
	Error           string         `json:"error,omitempty"`
}

// trafficShift is one observed HTTPRoute weight of the new cluster.
type trafficShift struct {
	Seconds float64 `json:"seconds"` // since the spec change
	Percent int32   `json:"percent"`
}

// gapStats summarises the gaps between traffic shifts.
type gapStats struct {
	Count  int     `json:"count"`
	MinS   float64 `json:"min"`
	MeanS  float64 `json:"mean"`
	MaxS   float64 `json:"max"`
	Excess float64 `json:"meanExcessOverInterval"`
}

// analyseShifts turns the observed weights of the new cluster into the distinct shifts and
// the gaps between them.
func analyseShifts(obs []trafficShift, interval time.Duration) ([]trafficShift, gapStats) {
	var shifts []trafficShift
	var last int32
	for _, o := range obs {
		if o.Percent != last {
			shifts = append(shifts, o)
			last = o.Percent
		}
	}
	g := gapStats{MinS: math.Inf(1)}
	var sum float64
	for i := 1; i < len(shifts); i++ {
		d := shifts[i].Seconds - shifts[i-1].Seconds
		g.Count++
		sum += d
		g.MinS, g.MaxS = min(g.MinS, d), max(g.MaxS, d)
	}
	if g.Count == 0 {
		g.MinS = 0
		return shifts, g
	}
	g.MeanS = sum / float64(g.Count)
	g.Excess = g.MeanS - interval.Seconds()
	return shifts, g
}

func runUpgrade(ctx context.Context, b *bench) (res upgradeResult) {
	steps := int(math.Ceil(100.0 / upgradeStep))
	res = upgradeResult{Scenario: "upgrade", MaxSurgePercent: upgradeMaxSurge, StepSizePercent: upgradeStep,
		IntervalSeconds: upgradeInterval.Seconds(), Steps: steps, TheoreticalSeconds: float64(steps) * upgradeInterval.Seconds()}
	b.logf("upgrade: incremental (maxSurge %d%%, step %d%%, interval %s)", upgradeMaxSurge, upgradeStep, upgradeInterval)
	if err := b.upgrade(ctx, &res); err != nil {
		res.Error = err.Error()
	}
	return res
}

func (b *bench) upgrade(ctx context.Context, res *upgradeResult) (runErr error) {
	sc, err := b.startScenarioCluster(ctx, "upgrade", func(o *kwokcluster.Options) { o.GatewayAPI = true })
	if err != nil {
		return err
	}
	defer b.stopScenarioCluster(sc, &runErr)
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	c, cl, cfg, ns := sc.Cluster, sc.cl, sc.cfg, sc.ns

	// The Ray dashboards are simulated in this process; the operator reaches them through a
	// front server that routes /<namespace>/<cluster>/ to each raysim.
	dashboards := raysim.NewRegistry(raysim.Options{DeployDelay: upgradeDeployDelay})
	defer dashboards.Close()
	urlFlag, stopFront, err := serveDashboards(dashboards)
	if err != nil {
		return err
	}
	defer stopFront()

	gw, err := framework.StartGateway(cfg, framework.GatewayOptions{ClassName: upgradeGatewayName})
	if err != nil {
		return fmt.Errorf("starting the stand-in gateway controller: %w", err)
	}
	defer gw.Stop()

	op, err := b.startOperator(ctx, c, operatorOptions{Concurrency: 4, ExtraArgs: []string{
		"--feature-gates=RayServiceIncrementalUpgrade=true",
		urlFlag,
	}})
	if err != nil {
		return err
	}
	rec, err := recordUpgrade(runCtx, cfg, ns)
	if err != nil {
		return err
	}

	svc := builders.RayService("upgrade", ns).Incremental(upgradeMaxSurge, upgradeStep, int32(upgradeInterval.Seconds()), upgradeGatewayName).DeletionDelay(5).Obj()
	if err := cl.Create(ctx, svc); err != nil {
		return err
	}
	first, err := rec.waitActive(ctx, c, op, "", 3*time.Minute)
	if err != nil {
		return fmt.Errorf("the RayService never became ready: %w", err)
	}
	b.logf("upgrade: serving from %s; changing the image", first)

	if err := cl.Get(ctx, client.ObjectKeyFromObject(svc), svc); err != nil {
		return err
	}
	for i := range svc.Spec.RayClusterSpec.WorkerGroupSpecs {
		svc.Spec.RayClusterSpec.WorkerGroupSpecs[i].Template.Spec.Containers[0].Image = "rayproject/ray:2.53.0"
	}
	svc.Spec.RayClusterSpec.HeadGroupSpec.Template.Spec.Containers[0].Image = "rayproject/ray:2.53.0"
	start := time.Now()
	if err := cl.Update(ctx, svc); err != nil {
		return err
	}
	second, err := rec.waitActive(ctx, c, op, first, time.Duration(res.TheoreticalSeconds)*time.Second*4+2*time.Minute)
	if err != nil {
		return fmt.Errorf("the upgrade did not complete: %w", err)
	}
	promoted := rec.promotedAt(second)
	res.WallSeconds = promoted.Sub(start).Seconds()
	res.Overhead = res.WallSeconds/res.TheoreticalSeconds - 1

	shifts, gaps := analyseShifts(rec.weights(rayspec.ClusterServeServiceName(second), start), upgradeInterval)
	res.TrafficShifts, res.ShiftGaps = shifts, gaps
	if len(shifts) > 0 {
		res.FirstShiftSeconds = shifts[0].Seconds
		res.PromotionAfterLastShiftSeconds = res.WallSeconds - shifts[len(shifts)-1].Seconds
	}
	time.Sleep(time.Second) // let the audit log catch up with the promotion's writes
	reqs, err := readAudit(c.AuditLogPath)
	if err != nil {
		return err
	}
	writes := count(window(reqs, start, promoted.Add(500*time.Millisecond)))
	res.OperatorWrites = &writes
	res.HTTPRouteWrites = map[string]int{}
	for kind, n := range writes.WritesByKind {
		if verb, resource, _ := strings.Cut(kind, " "); strings.HasPrefix(resource, "httproutes") {
			res.HTTPRouteWrites[verb+" "+resource] += n
		}
	}
	b.logf("upgrade: promoted %s after %.1fs (theoretical %.0fs)", second, res.WallSeconds, res.TheoreticalSeconds)
	return nil
}

// upgradeRecorder keeps, through informers of the admin user, when each cluster became the
// active one and every HTTPRoute weight seen.
type upgradeRecorder struct {
	mu          sync.Mutex
	activeSince map[string]time.Time
	route       []routeObservation
}

type routeObservation struct {
	at      time.Time
	weights map[string]int32 // backend Service → weight
}

func recordUpgrade(ctx context.Context, cfg *rest.Config, ns string) (*upgradeRecorder, error) {
	ca, err := cache.New(cfg, cache.Options{Scheme: rayscheme.New(), DefaultNamespaces: map[string]cache.Config{ns: {}}})
	if err != nil {
		return nil, err
	}
	r := &upgradeRecorder{activeSince: map[string]time.Time{}}
	onService := func(o any) {
		svc, ok := o.(*rayv1.RayService)
		if !ok {
			return
		}
		name := svc.Status.ActiveServiceStatus.RayClusterName
		ready := meta.IsStatusConditionTrue(svc.Status.Conditions, string(rayv1.RayServiceReady))
		if name == "" || !ready {
			return
		}
		r.mu.Lock()
		defer r.mu.Unlock()
		if _, seen := r.activeSince[name]; !seen {
			r.activeSince[name] = time.Now()
		}
	}
	onRoute := func(o any) {
		rt, ok := o.(*gwv1.HTTPRoute)
		if !ok {
			return
		}
		w := routeWeights(rt)
		r.mu.Lock()
		defer r.mu.Unlock()
		r.route = append(r.route, routeObservation{at: time.Now(), weights: w})
	}
	if err := watchServicesAndRoutes(ctx, ca, onService, onRoute); err != nil {
		return nil, fmt.Errorf("upgrade recorder: %w", err)
	}
	return r, nil
}

// routeWeights sums an HTTPRoute's backend weights by backend Service.
func routeWeights(rt *gwv1.HTTPRoute) map[string]int32 {
	w := map[string]int32{}
	for _, rule := range rt.Spec.Rules {
		for _, ref := range rule.BackendRefs {
			w[string(ref.Name)] += ptr.Deref(ref.Weight, 1)
		}
	}
	return w
}

// watchServicesAndRoutes calls onService for every RayService and onRoute for every HTTPRoute
// the cache sees added or updated, starts the cache and waits for it to sync.
func watchServicesAndRoutes(ctx context.Context, ca cache.Cache, onService, onRoute func(any)) error {
	for obj, f := range map[client.Object]func(any){&rayv1.RayService{}: onService, &gwv1.HTTPRoute{}: onRoute} {
		inf, err := ca.GetInformer(ctx, obj)
		if err != nil {
			return err
		}
		if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{AddFunc: f, UpdateFunc: func(_, o any) { f(o) }}); err != nil {
			return err
		}
	}
	go func() { _ = ca.Start(ctx) }()
	if !ca.WaitForCacheSync(ctx) {
		return errors.New("cache did not sync")
	}
	return nil
}

// waitActive waits until a cluster other than not is active and ready, and returns it.
func (r *upgradeRecorder) waitActive(ctx context.Context, c *kwokcluster.Cluster, op *operator, not string, timeout time.Duration) (string, error) {
	deadline := time.Now().Add(timeout)
	for {
		r.mu.Lock()
		for name := range r.activeSince {
			if name != not {
				r.mu.Unlock()
				return name, nil
			}
		}
		r.mu.Unlock()
		if err := c.Healthy(); err != nil {
			return "", err
		}
		if err := op.forbidden(); err != nil {
			return "", err
		}
		if time.Now().After(deadline) {
			return "", fmt.Errorf("no newly active cluster after %s; operator log %s:\n%s", timeout, op.proc.LogPath(), op.proc.LogTail(1500))
		}
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// promotedAt is when the named cluster became the active one.
func (r *upgradeRecorder) promotedAt(name string) time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.activeSince[name]
}

// weights are the observed HTTPRoute weights of one backend after start.
func (r *upgradeRecorder) weights(backend string, start time.Time) []trafficShift {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []trafficShift
	for _, o := range r.route {
		if o.at.Before(start) {
			continue
		}
		out = append(out, trafficShift{Seconds: o.at.Sub(start).Seconds(), Percent: o.weights[backend]})
	}
	return out
}

func renderUpgradeDetails(m *md, u *upgradeResult) {
	m.p("The guide's example (maxSurgePercent %d, stepSizePercent %d) with intervalSeconds scaled down to\n"+
		"%.0f s: a RayService with `NewClusterWithIncrementalUpgrade`, Serve applications on simulated Ray\n"+
		"dashboards (`internal/testenv/raysim`, DEPLOYING for %s) reached by the operator through\n"+
		"`--dashboard-url-template`, and the stand-in gateway controller of `internal/testenv/framework` accepting and\n"+
		"programming the Gateway and HTTPRoute. After the first cluster serves, every container image changes;\n"+
		"the clock runs from that update to the new cluster becoming the active one.",
		u.MaxSurgePercent, u.StepSizePercent, u.IntervalSeconds, upgradeDeployDelay)
	m.table([]string{"", "seconds"}, [][]string{
		{fmt.Sprintf("theoretical minimum: %d traffic steps × %.0f s", u.Steps, u.IntervalSeconds), f1(u.TheoreticalSeconds)},
		{"**spec change → promotion**", fmt.Sprintf("**%s** (%+.1f%%)", f1(u.WallSeconds), 100*u.Overhead)},
		{"spec change → first traffic on the new cluster", f1(u.FirstShiftSeconds)},
		{"gaps between traffic shifts: min / mean / max", fmt.Sprintf("%s / %s / %s (%d gaps)", f2(u.ShiftGaps.MinS), f2(u.ShiftGaps.MeanS), f2(u.ShiftGaps.MaxS), u.ShiftGaps.Count)},
		{"100 % traffic → promotion", f1(u.PromotionAfterLastShiftSeconds)},
	})
	var shifts []string
	for _, s := range u.TrafficShifts {
		shifts = append(shifts, fmt.Sprintf("%d%% @ %.1fs", s.Percent, s.Seconds))
	}
	if len(shifts) > 0 {
		m.p("New cluster's HTTPRoute weight as observed: %s.", strings.Join(shifts, ", "))
	}
	if len(u.HTTPRouteWrites) > 0 {
		var rows [][]string
		total := 0
		for _, c := range sortedCounts(u.HTTPRouteWrites) {
			rows = append(rows, []string{c.Key, fmt.Sprint(c.Value)})
			total += c.Value
		}
		m.p("Operator writes to HTTPRoutes during the upgrade: %d for %d traffic steps.", total, u.Steps)
		m.table([]string{"write", "requests"}, rows)
	}
	if u.OperatorWrites != nil {
		var rows [][]string
		for _, c := range sortedCounts(u.OperatorWrites.WritesByKind) {
			rows = append(rows, []string{c.Key, fmt.Sprint(c.Value)})
		}
		m.p("All operator writes during the upgrade (%d, %d conflicts):", u.OperatorWrites.Writes, u.OperatorWrites.Conflicts)
		m.table([]string{"write", "requests"}, rows)
	}
}
