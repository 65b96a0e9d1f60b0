package main

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	rayscheme "github.com/raygate/raygate/apis/scheme"
	"github.com/raygate/raygate/internal/rayspec"
	"github.com/raygate/raygate/internal/testenv/framework"
	"github.com/raygate/raygate/internal/testenv/kuberay"
	"github.com/raygate/raygate/internal/testenv/kwokcluster"
	"github.com/raygate/raygate/internal/testenv/raysim"
	"github.com/raygate/raygate/test/builders"
)

// The fleet's pacing, the same for both operators: KubeRay moves traffic at most once per
// interval and only up to the pending cluster's target capacity, which it raises by
// maxSurge after each step has settled, so a step as large as the surge lets it move every
// interval; 4 s leaves both operators room to requeue between steps on a loaded machine.
const (
	fleetMaxSurge     = 20
	fleetStep         = 20
	fleetInterval     = 4 * time.Second
	fleetGatewayClass = "bench-fleet-gateway"
	fleetDeployDelay  = 500 * time.Millisecond // simulated Serve applications: DEPLOYING → RUNNING
	fleetServeTimeout = 4 * time.Minute        // all N serving before the change
	fleetWorkers      = 10                     // parallel clients creating and changing the services
)

// fleetResult is the "upgrade-fleet" scenario: N incremental RayServices whose image
// changes at once, under raygate and under KubeRay, each on its own cluster.
type fleetResult struct {
	Scenario        string  `json:"scenario"`
	Services        int     `json:"services"`
	MaxSurgePercent int     `json:"maxSurgePercent"`
	StepSizePercent int     `json:"stepSizePercent"`
	IntervalSeconds float64 `json:"intervalSeconds"`
	// Steps is 100 / step; TheoreticalSeconds steps × interval, as in the "upgrade" scenario.
	Steps              int       `json:"steps"`
	TheoreticalSeconds float64   `json:"theoreticalSeconds"`
	Raygate            fleetRun  `json:"raygate"`
	KubeRay            *fleetRun `json:"kuberay,omitempty"`
	// DurationSeconds is the scenario's own duration, both operators with their clusters.
	DurationSeconds float64 `json:"durationSeconds"`
}

// fleetRun is one operator's upgrade of the fleet.
type fleetRun struct {
	Operator string `json:"operator"`
	// Flags are the flags the scenario gives the operator beyond the harness's own (the
	// dashboard address): fleetFlags.
	Flags []string `json:"flags,omitempty"`
	// ProfileDir holds raygate's CPU profile of the window (-fleet-profile).
	ProfileDir string `json:"profileDir,omitempty"`
	// Completed is how many services were promoted to the new cluster before the timeout.
	Completed int `json:"completed"`
	// WallSeconds is from the first image change to the last promotion.
	WallSeconds float64 `json:"wallSeconds"`
	// PacingError is, over every step of every service, the observed gap between two
	// consecutive weight changes of the new cluster in the service's HTTPRoute minus the
	// interval, in seconds.
	PacingError dist `json:"pacingError"`
	// FirstShift is, per service, from its image change to the first traffic on the new cluster.
	FirstShift dist `json:"firstShift"`
	// CPUSeconds and PeakRSSMB are the operator's, from the change to the last promotion
	// (RSS sampled every fleetRSSEvery).
	CPUSeconds float64 `json:"cpuSeconds"`
	PeakRSSMB  float64 `json:"peakRSSMB"`
	// Writes are the operator's writes in that window (audit log); HTTPRouteUpdates those
	// that change an HTTPRoute's spec.
	Writes           int            `json:"writes"`
	HTTPRouteUpdates int            `json:"httpRouteUpdates"`
	WritesByKind     map[string]int `json:"writesByKind,omitempty"`
	Conflicts        int            `json:"conflicts"`
	Error            string         `json:"error,omitempty"`
}

// dist summarises a sample.
type dist struct {
	Count int     `json:"count"`
	Mean  float64 `json:"mean"`
	P50   float64 `json:"p50"`
	P95   float64 `json:"p95"`
	Max   float64 `json:"max"`
}

const fleetRSSEvery = 250 * time.Millisecond

// distOf summarises xs (nearest-rank percentiles).
func distOf(xs []float64) dist {
	if len(xs) == 0 {
		return dist{}
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	var sum float64
	for _, x := range s {
		sum += x
	}
	rank := func(p float64) float64 {
		i := int(math.Ceil(p*float64(len(s)))) - 1
		return s[min(max(i, 0), len(s)-1)]
	}
	return dist{Count: len(s), Mean: sum / float64(len(s)), P50: rank(0.50), P95: rank(0.95), Max: s[len(s)-1]}
}

// pacingErrors are the gaps between consecutive distinct weights of the new cluster, minus
// the interval.
func pacingErrors(obs []trafficShift, interval time.Duration) []float64 {
	shifts, _ := analyseShifts(obs, interval)
	var out []float64
	for i := 1; i < len(shifts); i++ {
		out = append(out, shifts[i].Seconds-shifts[i-1].Seconds-interval.Seconds())
	}
	return out
}

// fleetFlags are an operator's flags in the fleet: both with the incremental upgrade's gate
// (KubeRay's is off by default), raygate with its default reconcile concurrency, and KubeRay
// on like terms (kubeRayRayJobFlags: raygate's concurrency, a client-side request limit that
// does not bind).
func fleetFlags(kuberayOp bool) []string {
	gate := "--feature-gates=RayServiceIncrementalUpgrade=true"
	if kuberayOp {
		return append(kubeRayRayJobFlags(defaultConcurrency()), gate)
	}
	return []string{gate}
}

func runUpgradeFleet(ctx context.Context, b *bench, n int, withKubeRay, profile bool) fleetResult {
	started := time.Now()
	steps := int(math.Ceil(100.0 / fleetStep))
	res := fleetResult{Scenario: "upgrade-fleet", Services: n, MaxSurgePercent: fleetMaxSurge, StepSizePercent: fleetStep,
		IntervalSeconds: fleetInterval.Seconds(), Steps: steps, TheoreticalSeconds: float64(steps) * fleetInterval.Seconds()}
	b.logf("upgrade-fleet: %d RayServices (maxSurge %d%%, step %d%%, interval %s)", n, fleetMaxSurge, fleetStep, fleetInterval)
	res.Raygate = b.upgradeFleet(ctx, n, false, profile, res.TheoreticalSeconds)
	if withKubeRay && ctx.Err() == nil {
		k := b.upgradeFleet(ctx, n, true, false, res.TheoreticalSeconds)
		res.KubeRay = &k
	}
	res.DurationSeconds = time.Since(started).Seconds()
	return res
}

func (b *bench) upgradeFleet(ctx context.Context, n int, kuberayOp, profile bool, theoretical float64) (run fleetRun) {
	run.Operator = "raygate"
	if kuberayOp {
		run.Operator = "kuberay"
	}
	run.Flags = fleetFlags(kuberayOp)
	b.logf("upgrade-fleet: %s %s", run.Operator, strings.Join(run.Flags, " "))
	if profile {
		run.ProfileDir = filepath.Join(b.outDir, "profile-upgrade-fleet-"+run.Operator)
	}
	if err := b.upgradeFleetRun(ctx, n, kuberayOp, theoretical, &run); err != nil {
		run.Error = err.Error()
	}
	b.logf("upgrade-fleet: %s: %d/%d promoted, last after %.1fs, pacing error mean %.2fs p95 %.2fs, CPU %.1fs, %d writes%s",
		run.Operator, run.Completed, n, run.WallSeconds, run.PacingError.Mean, run.PacingError.P95, run.CPUSeconds, run.Writes, errSuffix(run.Error))
	return run
}

func errSuffix(e string) string {
	if e == "" {
		return ""
	}
	return "; error: " + firstLine(e)
}

func (b *bench) upgradeFleetRun(ctx context.Context, n int, kuberayOp bool, theoretical float64, run *fleetRun) (runErr error) {
	sc, err := b.startScenarioCluster(ctx, "upgrade-fleet-"+run.Operator, func(o *kwokcluster.Options) {
		o.GatewayAPI = true
		if kuberayOp {
			// KubeRay counts serve endpoints from v1 Endpoints, which the API server refuses
			// to hold loopback addresses; its calls to these pod IPs go through the proxy.
			o.PodIPs = writtenOnlyPodIPs
		}
	})
	if err != nil {
		return err
	}
	defer b.stopScenarioCluster(sc, &runErr)
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	c, cl, cfg, ns := sc.Cluster, sc.cl, sc.cfg, sc.ns

	dashboards := raysim.NewRegistry(raysim.Options{DeployDelay: fleetDeployDelay})
	defer dashboards.Close()
	gw, err := framework.StartGateway(cfg, framework.GatewayOptions{ClassName: fleetGatewayClass})
	if err != nil {
		return fmt.Errorf("starting the stand-in gateway controller: %w", err)
	}
	defer gw.Stop()

	var op *operator
	var proxy *kuberay.Proxy
	if kuberayOp {
		// KubeRay calls http://<head svc>.<ns>.svc.cluster.local:8265 and Serve proxies at pod
		// IPs; the proxy answers both from the simulators and refuses everything else.
		if proxy, err = kuberay.StartProxy(kuberay.SimulatorRoutes(cl, dashboards)); err != nil {
			return err
		}
		defer proxy.Close()
		op, err = b.startOperator(ctx, c, operatorOptions{KubeRay: true, Concurrency: defaultConcurrency(),
			ExtraArgs: run.Flags, Env: proxy.Env()})
	} else {
		urlFlag, stopFront, ferr := serveDashboards(dashboards)
		if ferr != nil {
			return ferr
		}
		defer stopFront()
		op, err = b.startOperator(ctx, c, operatorOptions{Concurrency: defaultConcurrency(), ExtraArgs: append(slices.Clone(run.Flags), urlFlag)})
	}
	if err != nil {
		return err
	}
	rec, err := recordFleet(runCtx, cfg, ns)
	if err != nil {
		return err
	}
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("fleet-%d", i)
	}
	err = parallel(ctx, n, fleetWorkers, func(ctx context.Context, i int) error {
		svc := builders.RayService(names[i], ns).Incremental(fleetMaxSurge, fleetStep, int32(fleetInterval.Seconds()), fleetGatewayClass).DeletionDelay(5).Obj()
		return cl.Create(ctx, svc)
	})
	if err != nil {
		return err
	}
	diagnose := func(missing []string) string { return fleetDiagnosis(ctx, cl, ns, missing, proxy) }
	first, err := rec.waitAll(ctx, c, op, names, nil, fleetServeTimeout, diagnose)
	if err != nil {
		return fmt.Errorf("the RayServices never all served: %w", err)
	}
	b.logf("upgrade-fleet: %s: all %d serving; changing every image", run.Operator, n)

	before, err := op.usage()
	if err != nil {
		return err
	}
	peak := newPeakSampler(op)
	defer peak.stop()
	if run.ProfileDir != "" {
		defer b.profileFleet(ctx, op, theoretical, run.ProfileDir)()
	}
	start := time.Now()
	changed := make([]time.Time, n)
	err = parallel(ctx, n, fleetWorkers, func(ctx context.Context, i int) error {
		return retry.RetryOnConflict(retry.DefaultRetry, func() error {
			svc := &rayv1.RayService{}
			if err := cl.Get(ctx, client.ObjectKey{Namespace: ns, Name: names[i]}, svc); err != nil {
				return err
			}
			for j := range svc.Spec.RayClusterSpec.WorkerGroupSpecs {
				svc.Spec.RayClusterSpec.WorkerGroupSpecs[j].Template.Spec.Containers[0].Image = "rayproject/ray:2.53.0"
			}
			svc.Spec.RayClusterSpec.HeadGroupSpec.Template.Spec.Containers[0].Image = "rayproject/ray:2.53.0"
			changed[i] = time.Now()
			return cl.Update(ctx, svc)
		})
	})
	if err != nil {
		return err
	}
	timeout := time.Duration(theoretical*4)*time.Second + 2*time.Minute
	second, waitErr := rec.waitAll(ctx, c, op, names, first, timeout, diagnose)
	end := time.Now()
	after, uerr := op.usage()
	run.PeakRSSMB = peak.stop()
	if uerr == nil {
		run.CPUSeconds = after.CPUSeconds - before.CPUSeconds
	}

	var errs, firsts []float64
	var last time.Time
	for i, name := range names {
		promoted, ok := rec.activeSince(name, second[name])
		if second[name] == "" || !ok {
			continue
		}
		run.Completed++
		if promoted.After(last) {
			last = promoted
		}
		obs := rec.weights(rayspec.ClusterServeServiceName(second[name]), changed[i])
		errs = append(errs, pacingErrors(obs, fleetInterval)...)
		if shifts, _ := analyseShifts(obs, fleetInterval); len(shifts) > 0 {
			firsts = append(firsts, shifts[0].Seconds)
		}
	}
	run.PacingError, run.FirstShift = distOf(errs), distOf(firsts)
	if last.IsZero() {
		last = end
	}
	run.WallSeconds = last.Sub(start).Seconds()
	time.Sleep(time.Second) // let the audit log catch up with the promotions' writes
	reqs, err := readAudit(c.AuditLogPath)
	if err != nil {
		return errors.Join(waitErr, err)
	}
	writes := count(window(reqs, start, last.Add(500*time.Millisecond)))
	run.Writes, run.WritesByKind, run.Conflicts = writes.Writes, writes.WritesByKind, writes.Conflicts
	run.HTTPRouteUpdates = httpRouteUpdates(writes.WritesByKind)
	if waitErr != nil {
		return fmt.Errorf("the upgrade did not complete: %w", waitErr)
	}
	return nil
}

// profileFleet starts a CPU profile of the operator over the upgrade's theoretical time
// (the window's busiest part) and returns a wait for it to be saved, to call before the
// operator stops.
func (b *bench) profileFleet(ctx context.Context, op *operator, theoretical float64, dir string) (wait func()) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.logf("upgrade-fleet: cpu profile: %v", err)
		return func() {}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		path := filepath.Join(dir, "cpu.pprof")
		if err := op.cpuProfile(ctx, time.Duration(theoretical)*time.Second, path); err != nil {
			b.logf("upgrade-fleet: cpu profile: %v", err)
			return
		}
		b.logf("upgrade-fleet: cpu profile in %s", path)
	}()
	return func() { <-done }
}

// httpRouteUpdates counts the writes that change an HTTPRoute's spec (not its status).
func httpRouteUpdates(byKind map[string]int) int {
	n := 0
	for kind, c := range byKind {
		if verb, resource, _ := strings.Cut(kind, " "); resource == "httproutes" && (verb == "update" || verb == "patch") {
			n += c
		}
	}
	return n
}

// peakSampler samples the operator's resident memory until stopped: VmHWM covers the whole
// process life, and the fleet's services were created before the window.
type peakSampler struct {
	mu   sync.Mutex
	peak float64
	done chan struct{}
	once sync.Once
}

func newPeakSampler(op *operator) *peakSampler {
	s := &peakSampler{done: make(chan struct{})}
	sample := func() {
		if rss, err := op.currentRSS(); err == nil {
			s.mu.Lock()
			s.peak = max(s.peak, rss)
			s.mu.Unlock()
		}
	}
	sample()
	go func() {
		t := time.NewTicker(fleetRSSEvery)
		defer t.Stop()
		for {
			select {
			case <-s.done:
				return
			case <-t.C:
				sample()
			}
		}
	}()
	return s
}

func (s *peakSampler) stop() float64 {
	s.once.Do(func() { close(s.done) })
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.peak
}

// fleetRecorder keeps, through informers of the admin user, when each cluster became a
// service's active one (with the service Ready) and every HTTPRoute weight seen.
type fleetRecorder struct {
	mu     sync.Mutex
	active map[string]map[string]time.Time // service → cluster → first seen active and Ready
	route  []routeObservation
}

func recordFleet(ctx context.Context, cfg *rest.Config, ns string) (*fleetRecorder, error) {
	ca, err := cache.New(cfg, cache.Options{Scheme: rayscheme.New(), DefaultNamespaces: map[string]cache.Config{ns: {}}})
	if err != nil {
		return nil, err
	}
	r := &fleetRecorder{active: map[string]map[string]time.Time{}}
	onService := func(o any) {
		svc, ok := o.(*rayv1.RayService)
		if !ok {
			return
		}
		name := svc.Status.ActiveServiceStatus.RayClusterName
		if name == "" || !meta.IsStatusConditionTrue(svc.Status.Conditions, string(rayv1.RayServiceReady)) {
			return
		}
		r.mu.Lock()
		defer r.mu.Unlock()
		if r.active[svc.Name] == nil {
			r.active[svc.Name] = map[string]time.Time{}
		}
		if _, seen := r.active[svc.Name][name]; !seen {
			r.active[svc.Name][name] = time.Now()
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
		return nil, fmt.Errorf("upgrade-fleet recorder: %w", err)
	}
	return r, nil
}

// activeClusters returns, per service, an active cluster other than not[service] (first
// seen), or "" when there is none yet.
func (r *fleetRecorder) activeClusters(names []string, not map[string]string) map[string]string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[string]string, len(names))
	for _, svc := range names {
		var best string
		var at time.Time
		for cluster, since := range r.active[svc] {
			if cluster != not[svc] && (best == "" || since.Before(at)) {
				best, at = cluster, since
			}
		}
		out[svc] = best
	}
	return out
}

func (r *fleetRecorder) activeSince(svc, cluster string) (time.Time, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	t, ok := r.active[svc][cluster]
	return t, ok
}

// weights are the observed weights of one backend after start (routes without it skipped).
func (r *fleetRecorder) weights(backend string, start time.Time) []trafficShift {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []trafficShift
	for _, o := range r.route {
		w, ok := o.weights[backend]
		if !ok || o.at.Before(start) {
			continue
		}
		out = append(out, trafficShift{Seconds: o.at.Sub(start).Seconds(), Percent: w})
	}
	return out
}

// waitAll waits until every service has an active cluster other than not[service]; on
// timeout it returns what it has with an error that says what the operator was waiting on.
func (r *fleetRecorder) waitAll(ctx context.Context, c *kwokcluster.Cluster, op *operator, names []string, not map[string]string, timeout time.Duration, diagnose func(missing []string) string) (map[string]string, error) {
	deadline := time.Now().Add(timeout)
	for {
		got := r.activeClusters(names, not)
		var missing []string
		for _, name := range names {
			if got[name] == "" {
				missing = append(missing, name)
			}
		}
		if len(missing) == 0 {
			return got, nil
		}
		if err := c.Healthy(); err != nil {
			return got, err
		}
		if err := op.forbidden(); err != nil {
			return got, err
		}
		if time.Now().After(deadline) {
			return got, fmt.Errorf("%d of %d RayServices without a newly active cluster after %s; %s; operator log %s",
				len(missing), len(names), timeout, diagnose(missing), op.proc.LogPath())
		}
		select {
		case <-ctx.Done():
			return got, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// fleetDiagnosis says what the operator was waiting on: the status of the first services
// that did not get there (conditions, clusters, traffic and capacity) and what the KubeRay
// proxy refused.
func fleetDiagnosis(ctx context.Context, cl client.Client, ns string, missing []string, proxy *kuberay.Proxy) string {
	var parts []string
	for _, name := range missing[:min(2, len(missing))] {
		svc := &rayv1.RayService{}
		if err := cl.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, svc); err != nil {
			parts = append(parts, fmt.Sprintf("%s: %v", name, err))
			continue
		}
		parts = append(parts, name+": "+describeServiceStatus(&svc.Status))
	}
	if proxy != nil {
		if refused := proxy.Refused(); len(refused) > 0 {
			parts = append(parts, fmt.Sprintf("proxy refused %d requests, last %q", len(refused), refused[len(refused)-1]))
		}
	}
	return strings.Join(parts, "; ")
}

// describeServiceStatus is a RayService status in one line.
func describeServiceStatus(st *rayv1.RayServiceStatuses) string {
	var conds []string
	for _, c := range st.Conditions {
		s := fmt.Sprintf("%s=%s", c.Type, c.Status)
		if c.Reason != "" {
			s += " (" + c.Reason
			if c.Message != "" {
				s += ": " + c.Message
			}
			s += ")"
		}
		conds = append(conds, s)
	}
	side := func(label string, s rayv1.RayServiceStatus) string {
		pct := func(p *int32) string {
			if p == nil {
				return "-"
			}
			return fmt.Sprintf("%d%%", *p)
		}
		return fmt.Sprintf("%s %q traffic %s capacity %s", label, s.RayClusterName, pct(s.TrafficRoutedPercent), pct(s.TargetCapacity))
	}
	return fmt.Sprintf("conditions [%s], %s, %s", strings.Join(conds, ", "), side("active", st.ActiveServiceStatus), side("pending", st.PendingServiceStatus))
}
