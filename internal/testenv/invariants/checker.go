// Package invariants watches RayService upgrades in a namespace and records every breach of
// the promises raygate makes about upgrades, as they happen:
//
//   - the HTTPRoute's weights sum to 100;
//   - no cluster gets more traffic than its Serve target capacity (route and status);
//   - no traffic moves to a cluster whose Serve applications are not all RUNNING (route
//     weights and the serve Service's selector);
//   - a cluster that served is deleted only after promotion and the deletion delay, and
//     never while active;
//   - the active cluster never receives a new serve config while an upgrade is in progress;
//   - a GRPCRoute takes only weights its HTTPRoute had, in the same order (grpc.go).
//
// The truth about Ray comes from the dashboard simulators (submissions, target capacities,
// application statuses); the truth about Kubernetes from watches, re-read from the API
// before judging so a late event never raises a false alarm. The envtest suites assert that
// no violation was recorded; the local mode prints them live.
package invariants

import (
	"context"
	"fmt"
	"maps"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/rayspec"
	"github.com/raygate/raygate/internal/testenv/raysim"
)

// The rules.
const (
	RuleWeightsSum        = "HTTPRoute weights sum to 100"
	RuleWithinCapacity    = "no cluster gets more traffic than its target capacity"
	RuleTrafficToRunning  = "no traffic moves to a cluster whose Serve applications are not all RUNNING"
	RuleDeleteAfterDelay  = "a cluster that served is deleted only after promotion and the deletion delay"
	RuleActiveConfigFixed = "the active cluster never receives a new serve config during an upgrade"
)

// Violation is one breach.
type Violation struct {
	At     time.Time
	Rule   string
	Detail string
}

func (v Violation) String() string {
	return fmt.Sprintf("%s %s: %s", v.At.Format("15:04:05.000"), v.Rule, v.Detail)
}

// Event is one observed change, for timelines.
type Event struct {
	At   time.Time
	What string
}

// Options choose what to watch.
type Options struct {
	// Namespace to watch.
	Namespace string
	// Dashboards are the simulators the operator talks to.
	Dashboards *raysim.Registry
	// Slack tolerates the watch latency between a promotion and the checker seeing it
	// (default 1 s).
	Slack time.Duration
}

// Checker records violations until stopped.
type Checker struct {
	opts   Options
	live   client.Client
	cancel context.CancelFunc
	done   chan struct{}

	mu         sync.Mutex
	stopped    bool
	violations []Violation
	events     []Event
	weights    map[string]map[string]int32 // route → cluster → weight
	selectors  map[string]string           // serve Service → cluster
	statuses   map[string]rayv1.RayServiceStatuses
	everActive map[string]bool
	demotedAt  map[string]time.Time
	gone       map[types.UID]bool
	grpc       grpcState
}

// Scheme has the types the checker reads.
func Scheme() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	utilruntime.Must(rayv1.AddToScheme(s))
	utilruntime.Must(gwv1.Install(s))
	return s
}

// Start watches opts.Namespace until Stop. HTTPRoutes are watched only if the Gateway API
// CRDs are installed.
func Start(ctx context.Context, cfg *rest.Config, opts Options) (*Checker, error) {
	if opts.Slack == 0 {
		opts.Slack = time.Second
	}
	scheme := Scheme()
	live, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, err
	}
	ca, err := cache.New(cfg, cache.Options{Scheme: scheme, DefaultNamespaces: map[string]cache.Config{opts.Namespace: {}}})
	if err != nil {
		return nil, err
	}
	c := &Checker{
		opts: opts, live: live,
		weights: map[string]map[string]int32{}, selectors: map[string]string{}, statuses: map[string]rayv1.RayServiceStatuses{},
		everActive: map[string]bool{}, demotedAt: map[string]time.Time{}, gone: map[types.UID]bool{},
		grpc: grpcState{httpHistory: map[string][]map[string]int32{}, matched: map[string]int{}, grpcWeights: map[string]map[string]int32{}},
	}
	ctx, c.cancel = context.WithCancel(ctx)
	handlers := []struct {
		obj client.Object
		fn  func(context.Context, client.Object, bool)
	}{
		{&rayv1.RayService{}, c.onService},
		{&rayv1.RayCluster{}, c.onCluster},
		{&corev1.Service{}, c.onServeService},
	}
	if gatewayAPI(live) {
		handlers = append(handlers, struct {
			obj client.Object
			fn  func(context.Context, client.Object, bool)
		}{&gwv1.HTTPRoute{}, c.onRoute})
		if grpcRouteAPI(live) {
			handlers = append(handlers, struct {
				obj client.Object
				fn  func(context.Context, client.Object, bool)
			}{&gwv1.GRPCRoute{}, c.onGRPCRoute})
		}
	}
	for _, h := range handlers {
		inf, err := ca.GetInformer(ctx, h.obj)
		if err != nil {
			c.cancel()
			return nil, err
		}
		fn := h.fn
		if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
			AddFunc:    func(o any) { fn(ctx, asObject(o), false) },
			UpdateFunc: func(_, o any) { fn(ctx, asObject(o), false) },
			DeleteFunc: func(o any) { fn(ctx, asObject(o), true) },
		}); err != nil {
			c.cancel()
			return nil, err
		}
	}
	if opts.Dashboards != nil {
		opts.Dashboards.OnSubmit(func(cl types.NamespacedName, s raysim.Submission) { c.onSubmit(ctx, cl, s) })
	}
	c.done = make(chan struct{})
	go func() {
		defer close(c.done)
		_ = ca.Start(ctx)
	}()
	if !ca.WaitForCacheSync(ctx) {
		c.cancel()
		return nil, fmt.Errorf("invariant checker: caches did not sync")
	}
	return c, nil
}

func gatewayAPI(c client.Client) bool {
	_, err := c.RESTMapper().RESTMapping(schema.GroupKind{Group: gwv1.GroupName, Kind: "HTTPRoute"}, gwv1.GroupVersion.Version)
	return err == nil
}

func asObject(o any) client.Object {
	if t, ok := o.(toolscache.DeletedFinalStateUnknown); ok {
		o = t.Obj
	}
	obj, _ := o.(client.Object)
	return obj
}

// Stop ends the watches; violations stay readable.
func (c *Checker) Stop() {
	c.mu.Lock()
	c.stopped = true
	c.mu.Unlock()
	c.cancel()
	if c.done != nil {
		<-c.done
	}
}

// Violations returns every violation so far.
func (c *Checker) Violations() []Violation {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Violation(nil), c.violations...)
}

// Err is nil without violations, else an error listing them.
func (c *Checker) Err() error {
	v := c.Violations()
	if len(v) == 0 {
		return nil
	}
	lines := make([]string, len(v))
	for i := range v {
		lines[i] = v[i].String()
	}
	return fmt.Errorf("%d invariant violation(s):\n%s", len(v), strings.Join(lines, "\n"))
}

// Events returns the observed changes, oldest first.
func (c *Checker) Events() []Event {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Event(nil), c.events...)
}

// SawActive reports whether the checker has seen a RayService name the cluster as active.
func (c *Checker) SawActive(cluster string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.everActive[cluster]
}

// RouteWeights returns each observed change of a route's weights, oldest first.
func (c *Checker) RouteWeights() []map[string]int32 {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []map[string]int32
	for _, e := range c.events {
		if w, ok := parseWeights(e.What); ok {
			out = append(out, w)
		}
	}
	return out
}

func (c *Checker) violate(rule, format string, args ...any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopped {
		return
	}
	c.violations = append(c.violations, Violation{At: time.Now(), Rule: rule, Detail: fmt.Sprintf(format, args...)})
}

func (c *Checker) record(format string, args ...any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.stopped {
		c.events = append(c.events, Event{At: time.Now(), What: fmt.Sprintf(format, args...)})
	}
}

// apps reports whether a cluster's simulator has applications, all RUNNING, and its
// target capacity (100 when unset).
func (c *Checker) sim(ns, cluster string) (running bool, capacity int32, known bool) {
	if c.opts.Dashboards == nil {
		return true, 100, false
	}
	s := c.opts.Dashboards.Server(types.NamespacedName{Namespace: ns, Name: cluster})
	if s == nil {
		return false, 0, true
	}
	capacity = 100
	if tc := s.TargetCapacity(); tc != nil {
		capacity = int32(*tc)
	}
	return s.AllRunning(), capacity, true
}

func (c *Checker) onRoute(ctx context.Context, o client.Object, deleted bool) {
	rt, ok := o.(*gwv1.HTTPRoute)
	if !ok || deleted {
		return
	}
	var cur gwv1.HTTPRoute
	if err := c.live.Get(ctx, client.ObjectKeyFromObject(rt), &cur); err != nil || cur.ResourceVersion != rt.ResourceVersion {
		return // a newer version follows
	}
	w := rayspec.RouteWeights(&cur)
	key := cur.Namespace + "/" + cur.Name
	c.mu.Lock()
	prev := c.weights[key]
	c.weights[key] = w
	c.noteHTTPWeights(serviceOf(cur.Namespace, cur.Name), w)
	c.mu.Unlock()
	if maps.Equal(prev, w) {
		return
	}
	c.record("route %s weights %s", cur.Name, formatWeights(w))
	var sum int32
	for _, v := range w {
		sum += v
	}
	if len(w) > 0 && sum != 100 {
		c.violate(RuleWeightsSum, "route %s weights %s sum to %d", cur.Name, formatWeights(w), sum)
	}
	for cluster, weight := range w {
		running, capacity, known := c.sim(cur.Namespace, cluster)
		if weight > prev[cluster] && !running {
			c.violate(RuleTrafficToRunning, "route %s raised %s to %d%% while its applications are not all RUNNING", cur.Name, cluster, weight)
		}
		if known && weight > capacity {
			c.violate(RuleWithinCapacity, "route %s gives %s %d%% of traffic; its target capacity is %d%%", cur.Name, cluster, weight, capacity)
		}
	}
}

func (c *Checker) onServeService(ctx context.Context, o client.Object, deleted bool) {
	s, ok := o.(*corev1.Service)
	if !ok || deleted || s.Labels[rayv1.OriginatedFromCRDLabelKey] != "RayService" || s.Spec.Selector[rayv1.ServeLabelKey] != "true" {
		return
	}
	owner := s.Labels[rayv1.OriginatedFromCRNameLabelKey]
	if s.Name != rayspec.ServeServiceName(owner) {
		return // per-cluster serve Services never change cluster
	}
	cluster := s.Spec.Selector[rayv1.ClusterLabelKey]
	key := s.Namespace + "/" + s.Name
	c.mu.Lock()
	prev := c.selectors[key]
	c.selectors[key] = cluster
	c.mu.Unlock()
	if prev == cluster {
		return
	}
	c.record("service %s selects %s", s.Name, cluster)
	if running, _, _ := c.sim(s.Namespace, cluster); !running {
		var cur corev1.Service
		if err := c.live.Get(ctx, client.ObjectKeyFromObject(s), &cur); err == nil && cur.ResourceVersion == s.ResourceVersion {
			c.violate(RuleTrafficToRunning, "Service %s switched to %s while its applications are not all RUNNING", s.Name, cluster)
		}
	}
}

func (c *Checker) onService(_ context.Context, o client.Object, deleted bool) {
	svc, ok := o.(*rayv1.RayService)
	if !ok || deleted {
		return
	}
	st := svc.Status
	key := svc.Namespace + "/" + svc.Name
	c.mu.Lock()
	prev, seen := c.statuses[key]
	c.statuses[key] = *st.DeepCopy()
	if a := st.ActiveServiceStatus.RayClusterName; a != "" {
		c.everActive[a] = true
	}
	if p := prev.ActiveServiceStatus.RayClusterName; seen && p != "" && p != st.ActiveServiceStatus.RayClusterName {
		if _, ok := c.demotedAt[p]; !ok {
			c.demotedAt[p] = time.Now()
		}
	}
	c.mu.Unlock()
	if seen && splitOf(prev) == splitOf(st) {
		return
	}
	c.record("status %s: %s", svc.Name, splitOf(st))
	for _, s := range []rayv1.RayServiceStatus{st.ActiveServiceStatus, st.PendingServiceStatus} {
		if s.TargetCapacity != nil && s.TrafficRoutedPercent != nil && *s.TrafficRoutedPercent > *s.TargetCapacity {
			c.violate(RuleWithinCapacity, "status of %s: %s has %d%% traffic and %d%% target capacity", svc.Name, s.RayClusterName, *s.TrafficRoutedPercent, *s.TargetCapacity)
		}
	}
}

func splitOf(st rayv1.RayServiceStatuses) string {
	f := func(s rayv1.RayServiceStatus) string {
		if s.RayClusterName == "" {
			return "-"
		}
		return fmt.Sprintf("%s(cap %s, traffic %s)", s.RayClusterName, pct(s.TargetCapacity), pct(s.TrafficRoutedPercent))
	}
	return "active " + f(st.ActiveServiceStatus) + " pending " + f(st.PendingServiceStatus)
}

func pct(v *int32) string {
	if v == nil {
		return "-"
	}
	return fmt.Sprintf("%d%%", *v)
}

func (c *Checker) onCluster(ctx context.Context, o client.Object, deleted bool) {
	rc, ok := o.(*rayv1.RayCluster)
	if !ok || (!deleted && rc.DeletionTimestamp == nil) {
		return
	}
	c.mu.Lock()
	if c.gone[rc.UID] {
		c.mu.Unlock()
		return
	}
	c.gone[rc.UID] = true
	wasActive, demoted := c.everActive[rc.Name], c.demotedAt[rc.Name]
	c.mu.Unlock()
	c.record("cluster %s deleted", rc.Name)
	owner := rc.Labels[rayv1.OriginatedFromCRNameLabelKey]
	var svc rayv1.RayService
	if err := c.live.Get(ctx, types.NamespacedName{Namespace: rc.Namespace, Name: owner}, &svc); err != nil || svc.DeletionTimestamp != nil {
		return // the RayService itself is going away
	}
	if svc.Status.ActiveServiceStatus.RayClusterName == rc.Name {
		c.violate(RuleDeleteAfterDelay, "active cluster %s deleted", rc.Name)
		return
	}
	if !wasActive {
		// A pending cluster that never served may go at once, but not while it has traffic.
		var rt gwv1.HTTPRoute
		if err := c.live.Get(ctx, types.NamespacedName{Namespace: rc.Namespace, Name: rayspec.HTTPRouteName(owner)}, &rt); err == nil {
			if w := rayspec.RouteWeights(&rt)[rc.Name]; w > 0 {
				c.violate(RuleDeleteAfterDelay, "cluster %s deleted while the route gives it %d%%", rc.Name, w)
			}
		}
		return
	}
	at, err := time.Parse(time.RFC3339, rc.Annotations[rayv1.DeleteAfterKey])
	if err != nil {
		c.violate(RuleDeleteAfterDelay, "cluster %s that served was deleted without a recorded deletion time", rc.Name)
		return
	}
	now := time.Now()
	if now.Before(at) {
		c.violate(RuleDeleteAfterDelay, "cluster %s deleted at %s, before its recorded time %s", rc.Name, now.Format(time.RFC3339), at.Format(time.RFC3339))
	}
	delay := time.Duration(ptr.Deref(svc.Spec.RayClusterDeletionDelaySeconds, 60)) * time.Second
	if !demoted.IsZero() && at.Add(c.opts.Slack).Before(demoted.Add(delay)) {
		c.violate(RuleDeleteAfterDelay, "cluster %s stopped being active at %s but was due for deletion at %s (delay %s)", rc.Name, demoted.Format(time.RFC3339), at.Format(time.RFC3339), delay)
	}
}

func (c *Checker) onSubmit(ctx context.Context, cl types.NamespacedName, s raysim.Submission) {
	c.mu.Lock()
	stopped := c.stopped
	c.mu.Unlock()
	if stopped || cl.Namespace != c.opts.Namespace {
		return
	}
	c.record("submit %s target_capacity %s", cl.Name, pctF(s.TargetCapacity))
	var rc rayv1.RayCluster
	if err := c.live.Get(ctx, cl, &rc); err != nil {
		return
	}
	owner := rc.Labels[rayv1.OriginatedFromCRNameLabelKey]
	var svc rayv1.RayService
	if err := c.live.Get(ctx, types.NamespacedName{Namespace: cl.Namespace, Name: owner}, &svc); err != nil {
		return
	}
	st := svc.Status
	if st.ActiveServiceStatus.RayClusterName == cl.Name && st.PendingServiceStatus.RayClusterName != "" {
		subs := c.opts.Dashboards.Server(cl).Submissions()
		if len(subs) >= 2 && subs[len(subs)-2].ConfigWithoutTargetCapacity() != s.ConfigWithoutTargetCapacity() {
			c.violate(RuleActiveConfigFixed, "active cluster %s got a different serve config while %s is pending", cl.Name, st.PendingServiceStatus.RayClusterName)
		}
	}
	if s.TargetCapacity != nil {
		var rt gwv1.HTTPRoute
		if err := c.live.Get(ctx, types.NamespacedName{Namespace: cl.Namespace, Name: rayspec.HTTPRouteName(owner)}, &rt); err == nil {
			if w := rayspec.RouteWeights(&rt)[cl.Name]; float64(w) > *s.TargetCapacity {
				c.violate(RuleWithinCapacity, "target capacity of %s set to %.0f%% while the route gives it %d%%", cl.Name, *s.TargetCapacity, w)
			}
		}
	}
}

func pctF(v *float64) string {
	if v == nil {
		return "unset"
	}
	return fmt.Sprintf("%.0f%%", *v)
}

// formatWeights is "a=85 b=15", clusters sorted by name.
func formatWeights(w map[string]int32) string {
	keys := make([]string, 0, len(w))
	for k := range w {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s=%d", k, w[k])
	}
	return strings.Join(parts, " ")
}

func parseWeights(what string) (map[string]int32, bool) {
	i := strings.Index(what, " weights ")
	if !strings.HasPrefix(what, "route ") || i < 0 {
		return nil, false
	}
	out := map[string]int32{}
	for _, kv := range strings.Fields(what[i+len(" weights "):]) {
		var n int32
		k, v, _ := strings.Cut(kv, "=")
		if _, err := fmt.Sscan(v, &n); err == nil {
			out[k] = n
		}
	}
	return out, true
}
