package main

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/types"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/localmode"
	"github.com/raygate/raygate/internal/rayspec"
	"github.com/raygate/raygate/internal/testenv/load"
)

// Load the demo drives through the Gateway while it upgrades: steady and bounded.
const (
	maxLoadRate = 50 // requests per second, whatever --rate says
	// rowEvery is how often a row is printed while nothing changes, so the answered and
	// failed requests and the measured split keep coming during a long interval or a pause.
	rowEvery = 3 * time.Second
)

// gatewayTarget is where the demo sends its load: the Gateway's address (Traefik's entry
// point) and the first Serve application's route prefix. It refuses, with the reason, when
// the Gateway or the serve pods are not on loopback: the local mode's network rule lets
// requests go to 127.0.0.0/8 only.
func gatewayTarget(ctx context.Context, d *demo, svc *rayv1.RayService) (base, path string, err error) {
	var gw gwv1.Gateway
	if err := d.s.Client.Get(ctx, types.NamespacedName{Namespace: svc.Namespace, Name: rayspec.GatewayName(svc.Name)}, &gw); err != nil {
		return "", "", fmt.Errorf("reading the Gateway: %w", err)
	}
	addrs := make([]string, 0, len(gw.Status.Addresses))
	for _, a := range gw.Status.Addresses {
		addrs = append(addrs, a.Value)
	}
	if !localmode.AllLoopback(addrs) || len(gw.Spec.Listeners) == 0 {
		return "", "", fmt.Errorf("the Gateway's addresses %v are not all on loopback", addrs)
	}
	pods, err := localmode.ServeAddresses(ctx, d.s.Client, svc.Namespace, svc.Status.ActiveServiceStatus.RayClusterName)
	if err != nil {
		return "", "", fmt.Errorf("reading the serve pods' addresses: %w", err)
	}
	if !localmode.AllLoopback(pods) {
		return "", "", fmt.Errorf("the serve pods' addresses %v are not all on loopback", pods)
	}
	prefixes := localmode.RoutePrefixes(svc.Spec.ServeConfigV2)
	if len(prefixes) == 0 {
		return "", "", fmt.Errorf("the serve config has no application")
	}
	return "http://" + net.JoinHostPort(addrs[0], strconv.Itoa(int(gw.Spec.Listeners[0].Port))), prefixes[0], nil
}

// startLoad starts the load, or says why there is none (the demo goes on without it).
func (d *demo) startLoad(ctx context.Context, svc *rayv1.RayService) *load.Run {
	if d.opts.rate <= 0 {
		d.printf("  no load (--rate 0)\n")
		return nil
	}
	base, path, err := gatewayTarget(ctx, d, svc)
	if err != nil {
		d.printf("  no load through the Gateway: %v\n", err)
		return nil
	}
	rate := min(d.opts.rate, maxLoadRate)
	run, err := load.Start(ctx, load.Options{
		Target: load.URL(base), Path: path, Rate: float64(rate), Workers: 4,
		MaxRequests: rate * int(d.opts.timeout.Seconds()), MaxDuration: d.opts.timeout,
	})
	if err != nil {
		d.printf("  no load: %v\n", err)
		return nil
	}
	d.printf("  load: %d requests/s through the Gateway, GET %s%s (every request counts; any failure fails the demo)\n", rate, base, path)
	return run
}

// loadCells are a row's load columns for the requests that finished during the row:
// answered/failed, and the share of answers per cluster next to the weights (the active
// cluster first, clusters without the service's prefix).
func loadCells(results []load.Result, s split, service, namespace string) []string {
	if results == nil {
		return []string{"-", "-"}
	}
	sum := load.Summarize(results)
	counts := fmt.Sprintf("%d/%d", sum.Sent-sum.Failed, sum.Failed)
	ok := sum.Sent - sum.Failed
	if ok == 0 {
		return []string{counts, "-"}
	}
	names := make([]string, 0, len(sum.ByCluster))
	for c := range sum.ByCluster {
		names = append(names, strings.TrimPrefix(c, namespace+"/"))
	}
	slices.SortFunc(names, func(a, b string) int {
		switch {
		case a == s.Active:
			return -1
		case b == s.Active:
			return 1
		}
		return strings.Compare(a, b)
	})
	parts := make([]string, len(names))
	for i, n := range names {
		share := 100 * float64(sum.ByCluster[namespace+"/"+n]) / float64(ok)
		parts[i] = fmt.Sprintf("%s=%.0f", shortName(n, service), share)
	}
	return []string{counts, strings.Join(parts, " ")}
}

// table prints the live rows: each row is the state that held from its time until the
// next row, with the requests that finished meanwhile.
type table struct {
	d         *demo
	service   string
	namespace string
	start     time.Time
	// results reads every request finished so far, in the order they finished (nil: no load).
	results func() []load.Result
	seen    int      // results already shown
	cells   []string // the state being shown (nil before the first)
	split   split
	since   time.Time // when the current row began
}

// observe shows s: the row of the state before it ends when s differs, and a row is
// printed every rowEvery while nothing changes.
func (t *table) observe(s split, now time.Time) {
	cells := s.cells(t.service)
	switch {
	case t.cells == nil:
		t.cells, t.split, t.since = cells, s, now
	case !slices.Equal(cells, t.cells):
		t.flush(now)
		t.cells, t.split = cells, s
	case now.Sub(t.since) >= rowEvery:
		t.flush(now)
	}
}

// flush prints the current row with the requests that finished since the last one.
func (t *table) flush(now time.Time) {
	if t.cells == nil {
		return
	}
	var results []load.Result
	if t.results != nil {
		all := t.results()
		results = all[min(t.seen, len(all)):]
		if results == nil {
			results = []load.Result{}
		}
		t.seen = len(all)
	}
	row := append([]string{elapsed(t.since.Sub(t.start))}, t.cells...)
	t.d.printf("%s\n", formatRow(append(row, loadCells(results, t.split, t.service, t.namespace)...)))
	t.since = now
}

// resultsOf reads a run's results as they come (nil without a run).
func resultsOf(run *load.Run) func() []load.Result {
	if run == nil {
		return nil
	}
	return func() []load.Result { return run.Report().Results }
}

// loadVerdict stops the load and reports it; any failed request fails the demo.
func (d *demo) loadVerdict(run *load.Run) error {
	if run == nil {
		return nil
	}
	sum := run.Stop().Summary()
	d.printf("  load: %d requests, %d answered, %d failed; latency p50 %s, p99 %s\n",
		sum.Sent, sum.Sent-sum.Failed, sum.Failed, sum.P50.Round(time.Millisecond), sum.P99.Round(time.Millisecond))
	if sum.Failed > 0 {
		return fmt.Errorf("%d of %d requests through the Gateway failed during the upgrade: %s", sum.Failed, sum.Sent, strings.Join(sum.Errors, "; "))
	}
	return nil
}
