package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/localmode"
	"github.com/raygate/raygate/internal/rayspec"
	"github.com/raygate/raygate/internal/testenv/framework"
	"github.com/raygate/raygate/internal/testenv/kwokcluster"
	"github.com/raygate/raygate/internal/testenv/load"
	"github.com/raygate/raygate/internal/testenv/raysim"
	"github.com/raygate/raygate/internal/testenv/traefik"
)

// The upgrade-load scenario: the incremental-upgrade sample at its own pacing, under load
// through the real Traefik and in-cluster, all on loopback.
const (
	upgradeLoadSample = "ray_v1_rayservice_incremental.yaml"
	// upgradeLoadRate is the requests per second of each client (through Traefik, in-cluster).
	upgradeLoadRate = 20
	// upgradeLoadWindow is the width of the windows the split is measured over.
	upgradeLoadWindow = time.Second
	// upgradeLoadLag and upgradeLoadTolerance are the gateway suite's (test/integration/
	// gateway): a window's requests may follow any weight the route held from the lag
	// before the window to its end (Traefik's watch, reload and throttle), and a measured
	// share may lie that far outside that range (rounding in a window of ~20 answers is
	// one answer in 20, so the bench judges with the suite's bound, not a tighter one).
	upgradeLoadLag       = 1500 * time.Millisecond
	upgradeLoadTolerance = 0.10
	// upgradeLoadMinWindow is the fewest answers a window needs for its split to be judged.
	upgradeLoadMinWindow = 10
	// upgradeLoadTail is how long the loads go on after promotion: past the route lag, so
	// the last weight change is measured too.
	upgradeLoadTail = 3 * time.Second
)

// upgradeLoadResult is the "upgrade-load" scenario.
type upgradeLoadResult struct {
	Scenario        string  `json:"scenario"`
	Sample          string  `json:"sample"`
	MaxSurgePercent int32   `json:"maxSurgePercent"`
	StepSizePercent int32   `json:"stepSizePercent"`
	IntervalSeconds int32   `json:"intervalSeconds"`
	RatePerClient   float64 `json:"ratePerClient"`
	// WindowSeconds, LagSeconds and Tolerance are how the split was judged (see the constants).
	WindowSeconds float64 `json:"windowSeconds"`
	LagSeconds    float64 `json:"lagSeconds"`
	Tolerance     float64 `json:"tolerance"`
	// WallSeconds is from the spec change to promotion; the loads went on TailSeconds more.
	WallSeconds float64 `json:"wallSeconds"`
	TailSeconds float64 `json:"tailSeconds"`
	// WeightChanges is how many different HTTPRoute weights were seen under load.
	WeightChanges int           `json:"weightChanges"`
	Clients       []loadFigures `json:"clients,omitempty"`
	Error         string        `json:"error,omitempty"`
}

// loadFigures is one client's load during the upgrade.
type loadFigures struct {
	Client string  `json:"client"`
	Sent   int     `json:"sent"`
	Failed int     `json:"failed"`
	P50Ms  float64 `json:"p50Ms"`
	P99Ms  float64 `json:"p99Ms"`
	// WorstSplitDeviation is the worst distance of a window's measured share from the
	// HTTPRoute weights; nil when not judged (the in-cluster client follows the serve
	// Service, not the route).
	WorstSplitDeviation *float64       `json:"worstSplitDeviation,omitempty"`
	ByCluster           map[string]int `json:"byCluster,omitempty"`
	Errors              []string       `json:"errors,omitempty"`
}

// figures condenses a client's report; with weight samples, its split per window is judged
// against them.
func figures(clientName string, rep *load.Report, samples []load.WeightSample, ns string) loadFigures {
	s := rep.Summary()
	f := loadFigures{Client: clientName, Sent: s.Sent, Failed: s.Failed, Errors: s.Errors,
		P50Ms: float64(s.P50) / float64(time.Millisecond), P99Ms: float64(s.P99) / float64(time.Millisecond),
		ByCluster: map[string]int{}}
	for c, n := range s.ByCluster {
		f.ByCluster[strings.TrimPrefix(c, ns+"/")] = n
	}
	if samples != nil {
		worst, _ := load.SplitDeviation(rep.Intervals(upgradeLoadWindow), samples, ns, upgradeLoadLag, upgradeLoadMinWindow)
		f.WorstSplitDeviation = &worst
	}
	return f
}

// passed is the scenario's verdict: every client sent load, none failed, and the judged
// splits stayed within the tolerance.
func (u *upgradeLoadResult) passed() bool {
	if u.Error != "" || len(u.Clients) == 0 {
		return false
	}
	for _, c := range u.Clients {
		if c.Sent == 0 || c.Failed > 0 || (c.WorstSplitDeviation != nil && *c.WorstSplitDeviation > u.Tolerance) {
			return false
		}
	}
	return true
}

func runUpgradeLoad(ctx context.Context, b *bench) (res upgradeLoadResult) {
	res = upgradeLoadResult{Scenario: "upgrade-load", Sample: "config/samples/" + upgradeLoadSample, RatePerClient: upgradeLoadRate,
		WindowSeconds: upgradeLoadWindow.Seconds(), LagSeconds: upgradeLoadLag.Seconds(), Tolerance: upgradeLoadTolerance,
		TailSeconds: upgradeLoadTail.Seconds()}
	if err := b.upgradeLoad(ctx, &res); err != nil {
		res.Error = err.Error()
	}
	return res
}

func (b *bench) upgradeLoad(ctx context.Context, res *upgradeLoadResult) (runErr error) {
	svc, err := localmode.ReadRayService(localmode.SamplePath(upgradeLoadSample))
	if err != nil {
		return err
	}
	if svc.Spec.UpgradeStrategy == nil || svc.Spec.UpgradeStrategy.ClusterUpgradeOptions == nil {
		return fmt.Errorf("%s has no clusterUpgradeOptions", upgradeLoadSample)
	}
	opts := svc.Spec.UpgradeStrategy.ClusterUpgradeOptions
	res.MaxSurgePercent, res.StepSizePercent, res.IntervalSeconds = ptr.Deref(opts.MaxSurgePercent, 0), ptr.Deref(opts.StepSizePercent, 0), ptr.Deref(opts.IntervalSeconds, 0)
	prefixes := localmode.RoutePrefixes(svc.Spec.ServeConfigV2)
	if len(prefixes) == 0 || res.StepSizePercent <= 0 {
		return fmt.Errorf("%s: no Serve application or no step size", upgradeLoadSample)
	}
	path := prefixes[len(prefixes)-1]
	steps := (100 + int(res.StepSizePercent) - 1) / int(res.StepSizePercent)
	// Bounds: four times the theoretical upgrade plus two minutes, at the rate.
	upgradeTimeout := time.Duration(4*steps*int(res.IntervalSeconds))*time.Second + 2*time.Minute
	b.logf("upgrade-load: %s (maxSurge %d%%, step %d%%, interval %ds), %d req/s through Traefik and in-cluster to %s",
		upgradeLoadSample, res.MaxSurgePercent, res.StepSizePercent, res.IntervalSeconds, upgradeLoadRate, path)

	sc, err := b.startScenarioCluster(ctx, "upgrade-load", func(o *kwokcluster.Options) { o.GatewayAPI = true })
	if err != nil {
		return err
	}
	defer b.stopScenarioCluster(sc, &runErr)
	c, cl, ns := sc.Cluster, sc.cl, sc.ns
	svc.Namespace = ns

	// Simulated Ray where a real Ray listens (kwok gives pods loopback IPs): Serve's proxy on
	// each pod's IP, reached by Traefik and the in-cluster client. The operator reaches the
	// same simulators' dashboards through a front server (--dashboard-url-template): its
	// production resolver refuses loopback pod IPs.
	dashboards := raysim.NewRegistry(raysim.Options{DeployDelay: upgradeDeployDelay})
	defer dashboards.Close()
	pods, err := framework.StartPodServers(c.Config, dashboards)
	if err != nil {
		return fmt.Errorf("starting the simulated Ray listeners: %w", err)
	}
	defer pods.Stop()
	urlFlag, stopFront, err := serveDashboards(dashboards)
	if err != nil {
		return err
	}
	defer stopFront()

	logPath := filepath.Join(c.LogDir, "traefik.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return err
	}
	defer func() { _ = logFile.Close() }()
	tr, err := traefik.Start(ctx, c.Client, traefik.Options{Kubeconfig: c.Kubeconfig, ClassName: opts.GatewayClassName, Log: logFile})
	if err != nil {
		return fmt.Errorf("starting Traefik (log %s): %w", logPath, err)
	}
	defer func() { _ = tr.Stop() }()
	endpoints, err := traefik.StartLoopbackEndpoints(c.Config)
	if err != nil {
		return err
	}
	defer endpoints.Stop()

	op, err := b.startOperator(ctx, c, operatorOptions{Concurrency: 4, ExtraArgs: []string{
		"--feature-gates=RayServiceIncrementalUpgrade=true",
		urlFlag,
	}})
	if err != nil {
		return err
	}
	if err := cl.Create(ctx, svc); err != nil {
		return err
	}
	blue, err := waitPromoted(ctx, c, op, cl, svc, "", 3*time.Minute)
	if err != nil {
		return fmt.Errorf("the RayService never became ready: %w", err)
	}
	gwURL, err := gatewayURL(ctx, cl, ns, svc.Name)
	if err != nil {
		return err
	}
	bound := upgradeTimeout + time.Minute
	viaGateway := load.Options{Target: load.URL(gwURL), Path: path, Rate: upgradeLoadRate, Workers: 4,
		MaxRequests: int(upgradeLoadRate * bound.Seconds()), MaxDuration: bound, Timeout: 2 * time.Second}
	inCluster := viaGateway
	inCluster.Target = load.ServicePods(cl, ns, rayspec.ServeServiceName(svc.Name), "serve", 100*time.Millisecond)
	for _, o := range []load.Options{viaGateway, inCluster} {
		if err := waitAnswers(ctx, o, ns+"/"+blue); err != nil {
			return err
		}
	}
	b.logf("upgrade-load: %s serves through Traefik at %s and in-cluster; changing the image", blue, gwURL)

	watcher, err := client.NewWithWatch(c.Config, client.Options{Scheme: cl.Scheme(), Mapper: cl.RESTMapper()})
	if err != nil {
		return err
	}
	weights := load.WatchWeights(ctx, watcher, ns, rayspec.HTTPRouteName(svc.Name))
	gwRun, err := load.Start(ctx, viaGateway)
	if err != nil {
		return err
	}
	svcRun, err := load.Start(ctx, inCluster)
	if err != nil {
		gwRun.Stop()
		return err
	}
	start := time.Now()
	green, upErr := upgradeImage(ctx, c, op, cl, svc, blue, upgradeTimeout)
	if upErr == nil {
		res.WallSeconds = time.Since(start).Seconds()
		time.Sleep(upgradeLoadTail)
	}
	gwRep, svcRep, samples := gwRun.Stop(), svcRun.Stop(), weights.Stop()
	if upErr != nil {
		return upErr
	}
	seen := map[float64]bool{}
	for _, s := range samples {
		seen[s.Shares[green]] = true
	}
	res.WeightChanges = len(seen)
	res.Clients = []loadFigures{
		figures("through Traefik (Gateway)", gwRep, samples, ns),
		figures("in-cluster ("+rayspec.ServeServiceName(svc.Name)+")", svcRep, nil, ns),
	}
	b.logf("upgrade-load: promoted %s after %.1fs; through Traefik %s; in-cluster %s", green, res.WallSeconds, gwRep.Summary(), svcRep.Summary())
	return nil
}

// waitPromoted waits until the RayService is Ready with an active cluster other than not,
// and returns that cluster.
func waitPromoted(ctx context.Context, c *kwokcluster.Cluster, op *operator, cl client.Client, svc *rayv1.RayService, not string, timeout time.Duration) (string, error) {
	deadline := time.Now().Add(timeout)
	for {
		var cur rayv1.RayService
		if err := cl.Get(ctx, client.ObjectKeyFromObject(svc), &cur); err == nil {
			name := cur.Status.ActiveServiceStatus.RayClusterName
			if name != "" && name != not && meta.IsStatusConditionTrue(cur.Status.Conditions, string(rayv1.RayServiceReady)) {
				return name, nil
			}
		}
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
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// upgradeImage changes every Ray image (an upgrade to a new cluster) and waits for the
// promotion of the new cluster, which it returns.
func upgradeImage(ctx context.Context, c *kwokcluster.Cluster, op *operator, cl client.Client, svc *rayv1.RayService, blue string, timeout time.Duration) (string, error) {
	for attempt := 0; ; attempt++ {
		var cur rayv1.RayService
		if err := cl.Get(ctx, client.ObjectKeyFromObject(svc), &cur); err != nil {
			return "", err
		}
		image := localmode.NextImage(localmode.RayImage(&cur))
		spec := &cur.Spec.RayClusterSpec
		spec.HeadGroupSpec.Template.Spec.Containers[0].Image = image
		for i := range spec.WorkerGroupSpecs {
			spec.WorkerGroupSpecs[i].Template.Spec.Containers[0].Image = image
		}
		err := cl.Update(ctx, &cur)
		if err == nil {
			break
		}
		if attempt >= 5 {
			return "", fmt.Errorf("changing the image: %w", err)
		}
	}
	return waitPromoted(ctx, c, op, cl, svc, blue, timeout)
}

// gatewayURL waits until Traefik has programmed the RayService's Gateway and accepted its
// HTTPRoute, and returns the listener's address from the Gateway's status (on loopback, or
// an error: the network rule).
func gatewayURL(ctx context.Context, cl client.Client, ns, name string) (string, error) {
	deadline := time.Now().Add(2 * time.Minute)
	var last string
	for time.Now().Before(deadline) {
		var gw gwv1.Gateway
		var rt gwv1.HTTPRoute
		switch {
		case cl.Get(ctx, client.ObjectKey{Namespace: ns, Name: rayspec.GatewayName(name)}, &gw) != nil:
			last = "no Gateway"
		case !meta.IsStatusConditionTrue(gw.Status.Conditions, string(gwv1.GatewayConditionProgrammed)) || len(gw.Status.Addresses) == 0 || len(gw.Spec.Listeners) == 0:
			last = "Gateway not Programmed"
		case cl.Get(ctx, client.ObjectKey{Namespace: ns, Name: rayspec.HTTPRouteName(name)}, &rt) != nil:
			last = "no HTTPRoute"
		case len(rt.Status.Parents) == 0 || !meta.IsStatusConditionTrue(rt.Status.Parents[0].Conditions, string(gwv1.RouteConditionAccepted)):
			last = "HTTPRoute not Accepted"
		default:
			addr := gw.Status.Addresses[0].Value
			if !localmode.AllLoopback([]string{addr}) {
				return "", fmt.Errorf("the Gateway's address %s is not on loopback", addr)
			}
			return "http://" + net.JoinHostPort(addr, strconv.Itoa(int(gw.Spec.Listeners[0].Port))), nil
		}
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
	return "", fmt.Errorf("the Gateway was not programmed by Traefik: %s", last)
}

// waitAnswers sends single requests until one succeeds from cluster (at most a minute).
func waitAnswers(ctx context.Context, o load.Options, cluster string) error {
	deadline := time.Now().Add(time.Minute)
	var last string
	for time.Now().Before(deadline) {
		rep, err := load.Once(ctx, load.Options{Target: o.Target, Path: o.Path, MaxRequests: 1})
		if err != nil {
			return err
		}
		s := rep.Summary()
		if s.Failed == 0 && s.ByCluster[cluster] == 1 {
			return nil
		}
		last = fmt.Sprintf("%v %v", s.Errors, s.ByCluster)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
	return fmt.Errorf("no answer from %s: %s", cluster, last)
}

func renderUpgradeLoad(m *md, u *upgradeLoadResult) {
	m.WriteString("## 2b. Upgrade under load: real gateway and in-cluster clients\n\n")
	if u == nil {
		m.p("Not measured in this run.")
		return
	}
	if u.Error != "" {
		m.p("**Not measured** — %s", u.Error)
		return
	}
	m.p("The incremental-upgrade sample (`%s`) at its own pacing — maxSurgePercent %d, stepSizePercent %d,\n"+
		"intervalSeconds %d — upgraded by changing every Ray image, under %s requests/s from each of two clients:\n"+
		"through the real Traefik (the Gateway API implementation, programming raygate's Gateway and HTTPRoute)\n"+
		"and in-cluster to the ready pods of the serve Service, as kube-proxy would send them. kwok gives pods\n"+
		"loopback IPs and the simulated Serve proxies (`internal/testenv/raysim`) listen there, so every request\n"+
		"stays on 127.0.0.0/8. The operator is `cmd/raygate` in its own process.",
		u.Sample, u.MaxSurgePercent, u.StepSizePercent, u.IntervalSeconds, f1(u.RatePerClient))
	m.p("Spec change → promotion: **%s s**; the loads ran from before the spec change until %s s after\n"+
		"promotion, bounded in count and time. The HTTPRoute gave the new cluster %d different weights. The\n"+
		"split through Traefik is measured per %s s window and compared with every weight the HTTPRoute held\n"+
		"from %s s before the window to its end (Traefik's watch and reload); windows with fewer than %d\n"+
		"answers are not judged. Target: 0 failed requests, deviation at most %s.",
		f1(u.WallSeconds), f1(u.TailSeconds), u.WeightChanges, f1(u.WindowSeconds), f1(u.LagSeconds), upgradeLoadMinWindow, f2(u.Tolerance))
	var rows [][]string
	for _, c := range u.Clients {
		dev := "n/a (follows the serve Service)"
		if c.WorstSplitDeviation != nil {
			dev = fmt.Sprintf("%.3f", *c.WorstSplitDeviation)
		}
		rows = append(rows, []string{c.Client, fmt.Sprint(c.Sent), fmt.Sprint(c.Failed), f2(c.P50Ms), f2(c.P99Ms), dev})
	}
	m.table([]string{"client", "sent", "failed", "p50 ms", "p99 ms", "worst split deviation per window"}, rows)
	for _, c := range u.Clients {
		if len(c.Errors) > 0 {
			m.p("Failures of %s: %s.", c.Client, strings.Join(c.Errors, "; "))
		}
	}
}

// measured is the verdict's cell: failed of sent per client, and the worst judged deviation.
func (u *upgradeLoadResult) measured() string {
	var parts []string
	worst := -1.0
	for _, c := range u.Clients {
		parts = append(parts, fmt.Sprintf("%d of %d", c.Failed, c.Sent))
		if c.WorstSplitDeviation != nil {
			worst = max(worst, *c.WorstSplitDeviation)
		}
	}
	out := strings.Join(parts, ", ")
	if worst >= 0 {
		out += fmt.Sprintf("; worst deviation %.3f", worst)
	}
	return out
}
