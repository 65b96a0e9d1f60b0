package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/rayspec"
)

// split is what one row of the live table shows: which cluster serves, which is being
// brought up, their Serve target capacities, the pending cluster's share of the traffic in
// the status, and the weights actually in the HTTPRoute.
type split struct {
	Active, Pending string
	// PendingApps summarises the pending cluster's Serve applications.
	PendingApps           string
	ActiveCap, PendingCap *int32
	PendingTraffic        *int32
	Weights               map[string]int32 // cluster → HTTPRoute weight
}

func splitOf(svc *rayv1.RayService, rt *gwv1.HTTPRoute) split {
	var s split
	if svc != nil {
		st := svc.Status
		s.Active, s.Pending = st.ActiveServiceStatus.RayClusterName, st.PendingServiceStatus.RayClusterName
		s.ActiveCap = st.ActiveServiceStatus.TargetCapacity
		if s.Pending != "" {
			s.PendingCap, s.PendingTraffic = st.PendingServiceStatus.TargetCapacity, st.PendingServiceStatus.TrafficRoutedPercent
			s.PendingApps = appsSummary(st.PendingServiceStatus.Applications)
		}
	}
	if rt != nil {
		s.Weights = rayspec.RouteWeights(rt)
	}
	return s
}

// appsSummary counts applications by status ("2 RUNNING", "1 DEPLOYING 1 RUNNING"); a
// cluster without any yet is still starting (pods, then the Ray dashboard).
func appsSummary(apps map[string]rayv1.AppStatus) string {
	if len(apps) == 0 {
		return "starting"
	}
	count := map[string]int{}
	for _, a := range apps {
		count[a.Status]++
	}
	statuses := make([]string, 0, len(count))
	for st := range count {
		statuses = append(statuses, st)
	}
	slices.Sort(statuses)
	parts := make([]string, len(statuses))
	for i, st := range statuses {
		parts[i] = fmt.Sprintf("%d %s", count[st], st)
	}
	return strings.Join(parts, " ")
}

// columns of the table; the first is the time since the upgrade started. The last two are
// the load sent through the Gateway during the row: requests answered/failed, and the
// share of the answers each cluster gave, to read next to the weights.
var columns = []struct {
	title string
	width int
}{
	{"TIME", 8}, {"ACTIVE", 8}, {"PENDING", 9}, {"PENDING APPS", 14}, {"ACTIVE CAP", 12}, {"PENDING CAP", 13}, {"PENDING TRAFFIC", 17},
	{"HTTPROUTE WEIGHTS", 20}, {"OK/FAILED", 11}, {"MEASURED SPLIT", 0},
}

func header() string {
	cells := make([]string, len(columns))
	for i, c := range columns {
		cells[i] = c.title
	}
	return formatRow(cells)
}

// cells are the row without its time. Clusters are shown without the RayService's name
// (rayservice-incremental-x7k2p → x7k2p), which the table's title gives.
func (s split) cells(service string) []string {
	short := func(cluster string) string { return shortName(cluster, service) }
	pct := func(v *int32) string {
		if v == nil {
			return "-"
		}
		return fmt.Sprintf("%d%%", *v)
	}
	// Weights: the active cluster first, then the others by name.
	names := make([]string, 0, len(s.Weights))
	for n := range s.Weights {
		names = append(names, n)
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
	weights := make([]string, len(names))
	for i, n := range names {
		weights[i] = fmt.Sprintf("%s=%d", short(n), s.Weights[n])
	}
	w := strings.Join(weights, " ")
	if w == "" {
		w = "-"
	}
	activeCap := pct(s.ActiveCap)
	if s.Active != "" && s.ActiveCap == nil {
		activeCap = "100%" // unset: the whole config runs
	}
	apps := s.PendingApps
	if apps == "" {
		apps = "-"
	}
	return []string{short(s.Active), short(s.Pending), apps, activeCap, pct(s.PendingCap), pct(s.PendingTraffic), w}
}

// shortName is a cluster's name without the service's prefix ("-" for none).
func shortName(cluster, service string) string {
	if cluster == "" {
		return "-"
	}
	if rest, ok := strings.CutPrefix(cluster, rayspec.ClusterNamePrefix(service)); ok && rest != "" {
		return rest
	}
	return cluster
}

func formatRow(cells []string) string {
	var b strings.Builder
	for i, c := range cells {
		if i == len(cells)-1 {
			b.WriteString(c)
			break
		}
		b.WriteString(c)
		b.WriteString(strings.Repeat(" ", max(columns[i].width-len(c), 1)))
	}
	return "  " + strings.TrimRight(b.String(), " ")
}

func elapsed(d time.Duration) string { return fmt.Sprintf("+%.1fs", d.Seconds()) }

// follow streams the RayService and its HTTPRoute as they change (watches, re-opened when
// the API server ends them), so the table misses no step however short. Both channels stop
// receiving when ctx ends.
func follow(ctx context.Context, c client.WithWatch, ns, name string) (svcs, routes <-chan client.Object) {
	s, r := make(chan client.Object, 16), make(chan client.Object, 16)
	go watchNamed(ctx, c, &rayv1.RayServiceList{}, ns, name, s)
	go watchNamed(ctx, c, &gwv1.HTTPRouteList{}, ns, rayspec.HTTPRouteName(name), r)
	return s, r
}

func watchNamed(ctx context.Context, c client.WithWatch, list client.ObjectList, ns, name string, out chan<- client.Object) {
	for ctx.Err() == nil {
		w, err := c.Watch(ctx, list, client.InNamespace(ns), client.MatchingFields{"metadata.name": name})
		if err != nil {
			select {
			case <-ctx.Done():
			case <-time.After(time.Second):
			}
			continue
		}
		for ev := range w.ResultChan() {
			o, ok := ev.Object.(client.Object)
			if !ok || (ev.Type != watch.Added && ev.Type != watch.Modified) {
				continue
			}
			select {
			case out <- o:
			case <-ctx.Done():
				w.Stop()
				return
			}
		}
		w.Stop()
	}
}
