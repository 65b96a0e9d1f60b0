package plan

import (
	"fmt"
	"github.com/google/go-cmp/cmp"
	"maps"
	"reflect"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/rayspec"
	"github.com/raygate/raygate/test/builders"
)

// pureEvery: purity is judged on one pass in this many.
const pureEvery = 4

// The upgrade invariants, judged on every pass of a simulated world.
const (
	ruleWeightsSum        = "HTTPRoute weights are within 0-100 and sum to 100"
	ruleWithinCapacity    = "no cluster gets more traffic than its target capacity"
	ruleTrafficToRunning  = "no traffic moves to a cluster whose Serve applications are not all RUNNING"
	ruleDeleteAfterDelay  = "a cluster that served is deleted only after promotion and the deletion delay"
	ruleActiveConfigFixed = "the active cluster's serve config is never replaced during an upgrade"
	rulePacing            = "traffic moves at most one step per interval"
	ruleGRPCLikeHTTP      = "the GRPCRoute carries the HTTPRoute's weights"
	rulePure              = "plan changes nothing it is given and answers the same twice"
)

// checker follows a world pass by pass. It remembers which clusters carried traffic and
// when they last did, which a single pass cannot tell.
type checker struct {
	served     map[string]bool
	lastServed map[string]time.Time
	// lost: traffic went to a cluster that is gone (deleted by hand). It can only go to
	// the cluster that is left, whatever capacity that one runs, until raygate gave it
	// full capacity; the capacity rule is judged again once it holds.
	lost bool
}

func newChecker() *checker {
	return &checker{served: map[string]bool{}, lastServed: map[string]time.Time{}}
}

// check judges one pass and returns every breach, as "rule: detail".
func (c *checker) check(p *reconciled) []string {
	var out []string
	for _, rule := range []struct {
		name string
		fn   func(*reconciled) []string
	}{
		{ruleWeightsSum, checkWeights},
		{ruleWithinCapacity, c.checkCapacity},
		{ruleTrafficToRunning, checkTrafficToRunning},
		{ruleDeleteAfterDelay, c.checkDeletions},
		{ruleActiveConfigFixed, checkActiveConfig},
		{rulePacing, checkPacing},
		{ruleGRPCLikeHTTP, checkGRPCWeights},
		{rulePure, checkPure},
	} {
		for _, d := range rule.fn(p) {
			out = append(out, rule.name+": "+d)
		}
	}
	c.remember(p)
	return out
}

// remember notes which clusters carried traffic in this pass: the active cluster of the
// stored status (before and after), route backends with a share, the serve Service's cluster.
func (c *checker) remember(p *reconciled) {
	mark := func(name string) {
		if name != "" {
			c.served[name], c.lastServed[name] = true, p.now
		}
	}
	mark(p.stored.ActiveServiceStatus.RayClusterName)
	if p.written {
		mark(p.out.Status.ActiveServiceStatus.RayClusterName)
	}
	for _, t := range []trafficView{p.before, p.after} {
		for name, w := range t.weights {
			if w > 0 {
				mark(name)
			}
		}
		mark(t.serving)
	}
}

// routesOf are the HTTPRoutes the plan writes.
func routesOf(out Plan) []*gwv1.HTTPRoute {
	var rts []*gwv1.HTTPRoute
	for _, a := range out.Actions {
		switch a := a.(type) {
		case CreateObject:
			if rt, ok := a.Object.(*gwv1.HTTPRoute); ok {
				rts = append(rts, rt)
			}
		case UpdateObject:
			if rt, ok := a.Object.(*gwv1.HTTPRoute); ok {
				rts = append(rts, rt)
			}
		}
	}
	return rts
}

func checkWeights(p *reconciled) []string {
	var out []string
	judge := func(what string, weights map[string]int32) {
		var sum int32
		for name, w := range weights {
			if w < 0 || w > 100 {
				out = append(out, fmt.Sprintf("%s gives %s %d%%", what, name, w))
			}
			sum += w
		}
		if sum != 100 {
			out = append(out, fmt.Sprintf("%s weights %v sum to %d", what, weights, sum))
		}
	}
	for _, rt := range routesOf(p.out) {
		judge("the planned route", rayspec.RouteWeights(rt))
	}
	if p.after.weights != nil {
		judge("the route", p.after.weights)
	}
	return out
}

// checkCapacity: in the world, a route share never exceeds the target capacity the
// cluster's dashboard accepted (none: 100%), except after a cluster with a share was lost;
// in the status, neither cluster's traffic exceeds its target capacity when the stored
// status kept to that.
func (c *checker) checkCapacity(p *reconciled) []string {
	var out []string
	for name, w := range p.before.weights {
		if _, exists := p.tcAfter[name]; !exists && w > 0 {
			c.lost = true
		}
	}
	var over []string
	for name, w := range p.after.weights {
		if tc, exists := p.tcAfter[name]; exists && w > ptr.Deref(tc, 100) {
			over = append(over, fmt.Sprintf("the route gives %s %d%% but it accepted target_capacity %d%%", name, w, *tc))
		}
	}
	if c.lost && len(over) == 0 {
		c.lost = false
	}
	if !c.lost {
		out = append(out, over...)
	}
	if !p.want.incremental() {
		return out
	}
	within := func(st *rayv1.RayServiceStatuses) []string {
		a, q := st.ActiveServiceStatus, st.PendingServiceStatus
		if a.RayClusterName == "" || q.RayClusterName == "" {
			return nil
		}
		var bad []string
		if ptr.Deref(q.TrafficRoutedPercent, 0) > ptr.Deref(q.TargetCapacity, 0) {
			bad = append(bad, fmt.Sprintf("pending %s: traffic %d%% > capacity %d%%", q.RayClusterName, *q.TrafficRoutedPercent, ptr.Deref(q.TargetCapacity, 0)))
		}
		if ptr.Deref(a.TrafficRoutedPercent, 100) > ptr.Deref(a.TargetCapacity, 100) {
			bad = append(bad, fmt.Sprintf("active %s: traffic %d%% > capacity %d%%", a.RayClusterName, *a.TrafficRoutedPercent, ptr.Deref(a.TargetCapacity, 100)))
		}
		return bad
	}
	if len(within(&p.stored)) == 0 {
		out = append(out, within(&p.out.Status)...)
	}
	return out
}

// running: the cluster's dashboard reported applications, all RUNNING, when it was observed.
func running(p *reconciled, name string) bool {
	v := p.obs.cluster(name)
	if v == nil || !HeadReady(v.Pods) || v.Serve.Apps == nil {
		return false
	}
	if len(v.Serve.Apps) == 0 && !p.want.Serve.empty() {
		return false
	}
	for _, a := range v.Serve.Apps {
		if a.Status != rayv1.ApplicationStatusRunning {
			return false
		}
	}
	return true
}

// checkTrafficToRunning: a traffic step toward a cluster, and a switch of the serve Service
// to a cluster other than the stored active one, need that cluster's applications RUNNING.
func checkTrafficToRunning(p *reconciled) []string {
	var out []string
	st, next := &p.stored, &p.out.Status
	pending := st.PendingServiceStatus.RayClusterName
	if pending != "" && pending == next.PendingServiceStatus.RayClusterName &&
		ptr.Deref(next.PendingServiceStatus.TrafficRoutedPercent, 0) > ptr.Deref(st.PendingServiceStatus.TrafficRoutedPercent, 0) && !running(p, pending) {
		out = append(out, "traffic moves to pending "+pending+" whose applications are not all RUNNING")
	}
	// (When the pending cluster is gone, its traffic can only go back to the active one.)
	active := st.ActiveServiceStatus.RayClusterName
	if active != "" && pending != "" && p.obs.cluster(pending) != nil && active == next.ActiveServiceStatus.RayClusterName &&
		ptr.Deref(next.ActiveServiceStatus.TrafficRoutedPercent, 100) > ptr.Deref(st.ActiveServiceStatus.TrafficRoutedPercent, 100) && !running(p, active) {
		out = append(out, "traffic moves back to active "+active+" whose applications are not all RUNNING")
	}
	if to := p.after.serving; to != "" && to != p.before.serving && to != active && !running(p, to) {
		out = append(out, "the serve Service switches to "+to+" whose applications are not all RUNNING")
	}
	return out
}

// checkDeletions (except during a suspension): never the active cluster; a cluster that carried traffic only once the
// deletion delay has passed since it last did.
func (c *checker) checkDeletions(p *reconciled) []string {
	var out []string
	if meta.IsStatusConditionTrue(p.stored.Conditions, string(rayv1.RayServiceSuspending)) {
		return nil // a suspension the user asked for takes everything down at once
	}
	delay := time.Duration(p.want.deletionDelay()) * time.Second
	for _, name := range p.deleted {
		if name == p.stored.ActiveServiceStatus.RayClusterName || name == p.out.Status.ActiveServiceStatus.RayClusterName {
			out = append(out, "deletes the active cluster "+name)
		}
		if c.served[name] && p.now.Before(c.lastServed[name].Add(delay)) {
			out = append(out, fmt.Sprintf("deletes %s %v after it last carried traffic (delay %v)", name, p.now.Sub(c.lastServed[name]), delay))
		}
	}
	return out
}

// checkActiveConfig: a submission to the active cluster while the pass leaves an upgrade
// in progress, or to the active cluster this pass demotes, resubmits the config it already
// runs (only its target capacity changes). An upgrade the pass ends without promotion (the
// spec went back) is over: the active cluster may then get the spec's serve config.
func checkActiveConfig(p *reconciled) []string {
	var out []string
	st, next := &p.stored, &p.out.Status
	for _, s := range p.submits {
		name := s.Cluster.Name
		frozen := (name == next.ActiveServiceStatus.RayClusterName && next.PendingServiceStatus.RayClusterName != "") ||
			(name == st.ActiveServiceStatus.RayClusterName && name != next.ActiveServiceStatus.RayClusterName)
		if rec := p.recorded[name]; frozen && (rec.Hash == "" || rec.Hash != s.Hash || (s.Config != nil && s.Config.hash != s.Hash)) {
			out = append(out, fmt.Sprintf("submits config %s to the active cluster %s, which runs %q", s.Hash, name, rec.Hash))
		}
	}
	return out
}

// checkPacing: between the same two clusters, a traffic change is at most one step and
// comes no sooner than the interval after the previous one.
func checkPacing(p *reconciled) []string {
	st, next := &p.stored, &p.out.Status
	pending := st.PendingServiceStatus.RayClusterName
	if !p.want.incremental() || pending == "" || pending != next.PendingServiceStatus.RayClusterName ||
		st.ActiveServiceStatus.RayClusterName != next.ActiveServiceStatus.RayClusterName {
		return nil
	}
	if c := findCondition(st.Conditions, rayv1.UpgradeAction); c != nil && c.Reason == ReasonUpgradePromoting {
		return nil // promote asked to skip the pacing
	}
	from, to := ptr.Deref(st.PendingServiceStatus.TrafficRoutedPercent, 0), ptr.Deref(next.PendingServiceStatus.TrafficRoutedPercent, 0)
	if from == to {
		return nil
	}
	var out []string
	if d := max(to-from, from-to); d > p.want.Pacing.Step {
		out = append(out, fmt.Sprintf("traffic to %s moves %d%% at once (step %d%%)", pending, d, p.want.Pacing.Step))
	}
	if last := st.PendingServiceStatus.LastTrafficMigratedTime; last != nil && p.now.Before(last.Add(p.want.Pacing.Interval)) {
		out = append(out, fmt.Sprintf("traffic to %s moves %v after the previous step (interval %v)", pending, p.now.Sub(last.Time), p.want.Pacing.Interval))
	}
	return out
}

// checkPure: the observation is as it was before planning, and planning it again gives the
// same answer. (Judged on one pass in pureEvery: it costs two plans.)
func checkPure(p *reconciled) []string {
	if p.want.Invalid != "" || p.index%pureEvery != 0 {
		return nil
	}
	var out []string
	if !equality.Semantic.DeepEqual(p.obs, p.obsCopy) {
		out = append(out, "the observation changed while planning")
	}
	a, b := Decide(p.obsCopy, p.want, &p.stored, p.now), Decide(p.obsCopy, p.want, &p.stored, p.now)
	if !reflect.DeepEqual(a, b) {
		out = append(out, "two plans of the same inputs differ: "+cmp.Diff(a, b, cmp.Exporter(func(reflect.Type) bool { return true })))
	}
	return out
}

// A check that cannot fail guards nothing: each rule must report a pass broken its way.
// The passes are real ones of an incremental upgrade (the one that shifts traffic, and the
// one after it), each broken by hand.
func TestInvariantChecksCatchBrokenPasses(t *testing.T) {
	// shift returns a fresh checker and the first pass that moves traffic to the pending
	// cluster, after the checker judged every earlier pass.
	shift := func(t *testing.T) (*checker, *reconciled) {
		w := newWorld(incrementalService(50, 25, 5))
		c := newChecker()
		settle(t, w)
		w.updateSpec(func(s *rayv1.RayService) { setTestImage(s, "rayproject/ray:2.53.0") })
		for range 500 {
			p, err := w.reconcile()
			if err != nil {
				t.Fatal(err)
			}
			if ptr.Deref(p.out.Status.PendingServiceStatus.TrafficRoutedPercent, 0) > ptr.Deref(p.stored.PendingServiceStatus.TrafficRoutedPercent, 0) {
				p.index = 0 // judged for purity too
				return c, p
			}
			if breaches := c.check(p); len(breaches) > 0 {
				t.Fatalf("the unbroken upgrade breaks %v", breaches)
			}
			w.advance(w.untilNext(p.out.Wake.After(w.now, time.Second, time.Minute)))
		}
		t.Fatal("no traffic step")
		return nil, nil
	}
	active := func(p *reconciled) string { return p.stored.ActiveServiceStatus.RayClusterName }
	pending := func(p *reconciled) string { return p.stored.PendingServiceStatus.RayClusterName }
	cases := []struct {
		rule    string
		breakIt func(p *reconciled)
	}{
		{ruleWeightsSum, func(p *reconciled) { p.after.weights = map[string]int32{active(p): 60, pending(p): 50} }},
		{ruleWeightsSum, func(p *reconciled) { p.after.weights = map[string]int32{active(p): 101, pending(p): -1} }},
		{ruleWithinCapacity, func(p *reconciled) {
			p.after.weights = map[string]int32{active(p): 50, pending(p): 50}
			p.tcAfter[pending(p)] = ptr.To[int32](25)
		}},
		{ruleWithinCapacity, func(p *reconciled) { p.out.Status.PendingServiceStatus.TargetCapacity = ptr.To[int32](0) }},
		{ruleTrafficToRunning, func(p *reconciled) {
			v := p.obs.cluster(pending(p))
			for n := range v.Serve.Apps {
				v.Serve.Apps[n] = rayv1.AppStatus{Status: rayv1.ApplicationStatusDeploying}
			}
		}},
		{ruleTrafficToRunning, func(p *reconciled) {
			p.obs.cluster(pending(p)).Serve.Apps = nil
			p.after.serving = pending(p)
		}},
		{ruleDeleteAfterDelay, func(p *reconciled) { p.deleted = []string{active(p)} }},
		{ruleActiveConfigFixed, func(p *reconciled) {
			cfg, _ := ParseServeConfig(serveConfigs[1])
			p.submits = append(p.submits, SubmitServeConfig{Cluster: p.clusters[active(p)], Hash: cfg.hash, Config: cfg})
		}},
		{rulePacing, func(p *reconciled) { p.out.Status.PendingServiceStatus.TrafficRoutedPercent = ptr.To[int32](100) }},
		{rulePacing, func(p *reconciled) {
			p.stored.PendingServiceStatus.LastTrafficMigratedTime = &metav1.Time{Time: p.now.Add(-time.Second)}
		}},
		{rulePure, func(p *reconciled) { p.obs.cluster(active(p)).Cluster.Annotations["touched"] = "by the plan" }},
		{ruleGRPCLikeHTTP, func(p *reconciled) { p.after.grpc = map[string]int32{active(p): 50, pending(p): 50} }},
	}
	for _, tc := range cases {
		c, p := shift(t)
		if breaches := c.check(p); len(breaches) > 0 {
			t.Fatalf("the unbroken traffic step breaks %v", breaches)
		}
		c, p = shift(t)
		tc.breakIt(p)
		found := false
		for _, b := range c.check(p) {
			found = found || strings.HasPrefix(b, tc.rule+":")
		}
		if !found {
			t.Errorf("%s: not reported", tc.rule)
		}
	}

	// Deleting a cluster that served, before the delay since it last did.
	w := newWorld(builders.RayService("svc", "ns").DeletionDelay(30).Obj())
	c := newChecker()
	settle(t, w)
	blue := w.svc.Status.ActiveServiceStatus.RayClusterName
	w.updateSpec(func(s *rayv1.RayService) { setTestImage(s, "rayproject/ray:2.53.0") })
	for w.svc.Status.ActiveServiceStatus.RayClusterName == blue {
		p, _ := w.reconcile()
		c.check(p)
		w.advance(w.untilNext(p.out.Wake.After(w.now, time.Second, time.Minute)))
	}
	w.advance(10 * time.Second)
	p, _ := w.reconcile()
	p.deleted = []string{blue}
	if b := c.check(p); len(b) != 1 || !strings.HasPrefix(b[0], ruleDeleteAfterDelay) {
		t.Errorf("deleting the old cluster 10 s after the switch: %v", b)
	}
}

// checkGRPCWeights: whenever both routes exist after a pass, the GRPCRoute's weights are the
// HTTPRoute's (one traffic decision moves both).
func checkGRPCWeights(p *reconciled) []string {
	if p.after.grpc == nil || p.after.weights == nil || maps.Equal(p.after.grpc, p.after.weights) {
		return nil
	}
	return []string{fmt.Sprintf("GRPCRoute weights %v, HTTPRoute weights %v", p.after.grpc, p.after.weights)}
}
