package upgradematrix

import (
	"context"
	"fmt"
	"time"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	"k8s.io/utils/ptr"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/rayspec"
	"github.com/raygate/raygate/test/integration/internal/rstest"
)

const name = "mx"

// actionCase is what one RayService of a phase is told: first at the phase, then (after a
// pause was held) second.
type actionCase struct {
	label         string
	first, second string
}

var actionCases = []actionCase{
	{"pause then resume", rayv1.UpgradeActionPause, rayv1.UpgradeActionResume},
	{"abort", rayv1.UpgradeActionAbort, ""},
	{"promote", rayv1.UpgradeActionPromote, ""},
	{"pause then promote", rayv1.UpgradeActionPause, rayv1.UpgradeActionPromote},
}

// run is one RayService of a phase spec, in its own namespace.
type run struct {
	actionCase
	ns, blue, green string
	reverted        bool // pauseRollingBack changed the spec back
	// restarted: the operator restarted right after first was recorded. The recorder sends
	// events asynchronously, so the event of that recording pass may be lost with the
	// stopping operator (seen once in three runs); the stored condition is the record.
	restarted bool
}

// want is how the run ends, as phases_test.go expects.
func (r *run) want(ph phase) string {
	switch r.second {
	case rayv1.UpgradeActionResume:
		return ph.resumed
	case rayv1.UpgradeActionPromote:
		return ph.promoted
	}
	if r.first == rayv1.UpgradeActionAbort {
		return endRolledBack
	}
	return ph.promoted
}

// Specs registers the matrix's specs: every phase, with the operator restarted between
// recording the actions and carrying them out (restart) or straight. Call it at the top
// level of a test package.
func Specs(restart bool) bool {
	mode := "straight"
	if restart {
		mode = "with an operator restart between recording and carrying out"
	}
	return ginkgo.Describe("Every upgrade action at every phase", func() {
		for _, ph := range phases {
			ginkgo.It(ph.name+", "+mode, func(ctx context.Context) { runPhase(ctx, ph, restart) })
		}
	})
}

// runPhase runs the four action cases at one phase concurrently, one RayService each.
func runPhase(ctx context.Context, ph phase, restart bool) {
	start := time.Now()
	runs := make([]*run, len(actionCases))
	for i, ac := range actionCases {
		r := &run{actionCase: ac, ns: rstest.NewNamespace(ctx, k8s, "um-")}
		watchInvariants(ctx, r.ns)
		gomega.Expect(k8s.Create(ctx, ph.service(r.ns))).To(gomega.Succeed())
		runs[i] = r
	}
	for _, r := range runs {
		r.blue = rstest.WaitServing(ctx, k8s, r.ns, name)
	}
	ginkgo.By("reaching the phase")
	ph.reach(ctx, runs)
	for _, r := range runs {
		ginkgo.GinkgoWriter.Printf("%s (%s): %s -> %s at %+v\n", r.label, r.ns, r.blue, r.green, split(ctx, r)())
	}

	ginkgo.By("recording the actions")
	for _, r := range runs {
		if !ph.pausedFirst || r.first != rayv1.UpgradeActionPause { // reach paused these already
			rstest.SetAction(ctx, k8s, r.ns, name, r.first, r.green)
		}
	}
	for _, r := range runs {
		waitRecorded(ctx, r, r.first)
	}
	if restart {
		// Every action is in the stored condition (and an abort on the active cluster), so
		// the new operator has only what is stored to carry them out.
		restartManager()
		for _, r := range runs {
			r.restarted = true
		}
	}
	if ph.release != nil {
		ph.release(ctx, runs)
	}

	var paused, aborted, others []*run
	for _, r := range runs {
		switch r.first {
		case rayv1.UpgradeActionPause:
			paused = append(paused, r)
		case rayv1.UpgradeActionAbort:
			aborted = append(aborted, r)
		default:
			others = append(others, r)
		}
	}
	// The paused runs are held for three intervals, then told their second action, while the
	// others' actions are carried out and checked (reads only).
	ginkgo.By("holding the pauses while the other actions are carried out")
	held := inBackground(func() {
		checkPaused(ctx, ph, paused)
		for _, r := range paused {
			rstest.SetAction(ctx, k8s, r.ns, name, r.second, r.green)
		}
	})
	for _, r := range aborted {
		checkEnd(ctx, ph, r)
	}
	// From the aborted runs' end on, no new cluster comes for their spec for 2 s and a held
	// abort stays recorded: checked while the other runs end, not after them.
	abortHeld := inBackground(func() {
		gomega.Consistently(ctx, func(g gomega.Gomega) {
			for _, r := range aborted {
				g.Expect(rstest.ClusterNames(ctx, k8s, r.ns)()).To(gomega.ConsistOf(r.blue), "no new cluster for the aborted spec in %s", r.ns)
				if !r.reverted {
					g.Expect(condition(ctx, r, rayv1.UpgradeAction)).To(gomega.Equal("True/"+rayv1.UpgradeAborted), "the abort stays held in %s", r.ns)
				}
			}
		}, 2*time.Second).Should(gomega.Succeed())
	})
	for _, r := range others {
		checkEnd(ctx, ph, r)
	}
	<-held
	for _, r := range paused {
		checkEnd(ctx, ph, r)
	}
	<-abortHeld
	ginkgo.AddReportEntry(ph.name+" duration", time.Since(start).Round(100*time.Millisecond).String())
}

// inBackground runs check in a goroutine, whose failures fail the spec, and returns a
// channel closed once check returned. The spec does not end before check returns, even when
// it fails first.
func inBackground(check func()) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer ginkgo.GinkgoRecover()
		defer close(done)
		check()
	}()
	ginkgo.DeferCleanup(func() { <-done })
	return done
}

// splitOf is a status' capacities and traffic, KubeRay's defaults filled in.
type splitOf struct {
	ActiveCapacity, PendingCapacity, PendingTraffic int32
}

func split(ctx context.Context, r *run) func() splitOf {
	return func() splitOf {
		st := getService(ctx, r.ns, name).Status
		return splitOf{
			ActiveCapacity:  ptr.Deref(st.ActiveServiceStatus.TargetCapacity, 100),
			PendingCapacity: ptr.Deref(st.PendingServiceStatus.TargetCapacity, 0),
			PendingTraffic:  ptr.Deref(st.PendingServiceStatus.TrafficRoutedPercent, 0),
		}
	}
}

func condition(ctx context.Context, r *run, t rayv1.RayServiceConditionType) string {
	return rstest.Condition(ctx, k8s, r.ns, name, t)()
}

// recordedAs is the UpgradeAction condition that says the controller recorded action.
var recordedAs = map[string]string{
	rayv1.UpgradeActionPause:   "True/" + rayv1.UpgradePaused,
	rayv1.UpgradeActionResume:  "False/" + rayv1.UpgradeResumed,
	rayv1.UpgradeActionAbort:   "True/" + rayv1.UpgradeAborting,
	rayv1.UpgradeActionPromote: "True/" + rayv1.UpgradePromoting,
}

// waitRecorded waits until the controller stored its record of the action: the condition
// (for an abort also the aborted spec on the active cluster), as the abort/restart spec of
// the rayservice suite detects it.
func waitRecorded(ctx context.Context, r *run, action string) {
	want := []string{recordedAs[action]}
	if action == rayv1.UpgradeActionAbort {
		// A pending cluster without traffic is dropped right after the record.
		want = append(want, "True/"+rayv1.UpgradeAborted)
	}
	gomega.Eventually(func() string { return condition(ctx, r, rayv1.UpgradeAction) }).Should(gomega.BeElementOf(want), "%s recorded in %s", action, r.ns)
	if action == rayv1.UpgradeActionAbort {
		gomega.Expect(getCluster(ctx, r.ns, r.blue).Annotations).To(gomega.HaveKey(rayv1.AbortedSpecHashKey), "recorded on the active cluster in %s", r.ns)
	}
}

// checkPaused checks that the paused runs hold capacity, traffic and the switch for a
// while once nothing else holds them, as users see it.
func checkPaused(ctx context.Context, ph phase, runs []*run) {
	if len(runs) == 0 {
		return
	}
	held := map[*run]splitOf{}
	for _, r := range runs {
		if ph.newCluster {
			// The pending applications run, yet the Services do not switch.
			gomega.Eventually(func() bool { s := simulatorOf(r.ns, r.green); return s != nil && s.AllRunning() }).Should(gomega.BeTrue(), "applications of %s", r.green)
		} else {
			// A step recorded before the pause still reaches the route, nothing else does.
			s := split(ctx, r)()
			gomega.Eventually(rstest.RouteWeight(ctx, k8s, r.ns, name, r.green)).Should(gomega.BeElementOf(s.PendingTraffic, pendingOffRoute(s)), "route of %s", r.ns)
		}
		held[r] = split(ctx, r)()
	}
	gomega.Consistently(func(g gomega.Gomega) {
		for _, r := range runs {
			g.Expect(split(ctx, r)()).To(gomega.Equal(held[r]), "paused in %s", r.ns)
			g.Expect(rstest.ActiveName(ctx, k8s, r.ns, name)()).To(gomega.Equal(r.blue), "paused in %s", r.ns)
			if ph.newCluster {
				g.Expect(selectorOf(ctx, r.ns)).To(gomega.Equal(r.blue), "no switch while paused in %s", r.ns)
			} else {
				g.Expect(rstest.RouteWeight(ctx, k8s, r.ns, name, r.green)()).To(gomega.BeElementOf(held[r].PendingTraffic, pendingOffRoute(held[r])), "route of %s", r.ns)
			}
		}
	}, 3*time.Second, 200*time.Millisecond).Should(gomega.Succeed(), "three intervals pass without a step")
	for _, r := range runs {
		gomega.Expect(condition(ctx, r, rayv1.UpgradeAction)).To(gomega.Equal("True/" + rayv1.UpgradePaused))
		gomega.Expect(rstest.ConditionMessage(ctx, k8s, r.ns, name, rayv1.UpgradeInProgress)).To(gomega.ContainSubstring("paused by raygate.ray.io/upgrade-action=pause"))
		if !r.restarted {
			gomega.Eventually(rstest.Events(ctx, k8s, r.ns, name)).Should(gomega.ContainSubstring("Normal UpgradePaused: the upgrade to RayCluster " + r.green + " is paused"))
		}
	}
}

// pendingOffRoute is the pending cluster's weight when it is not a backend (-1) if that
// is what its share may look like: 0% and not on the route yet.
func pendingOffRoute(s splitOf) int32 {
	if s.PendingTraffic == 0 {
		return -1
	}
	return s.PendingTraffic
}

// checkEnd waits for the run's end state and checks it through the status, conditions,
// route weights (or the serve Service) and events.
func checkEnd(ctx context.Context, ph phase, r *run) {
	want := r.want(ph)
	to := r.blue
	if want == endPromoted {
		to = r.green
	}
	desc := fmt.Sprintf("%s in %s ends %s", r.label, r.ns, want)
	gomega.Eventually(func() []string {
		st := getService(ctx, r.ns, name).Status
		return []string{st.ActiveServiceStatus.RayClusterName, st.PendingServiceStatus.RayClusterName}
	}, 90*time.Second).Should(gomega.Equal([]string{to, ""}), desc)
	if ph.newCluster {
		gomega.Eventually(func() string { return selectorOf(ctx, r.ns) }).Should(gomega.Equal(to), desc)
	} else {
		gomega.Eventually(rstest.RouteWeights(ctx, k8s, r.ns, name)).Should(gomega.Equal(map[string]int32{to: 100}), desc)
	}
	gomega.Eventually(rstest.ClusterNames(ctx, k8s, r.ns)).Should(gomega.ConsistOf(to), desc)
	gomega.Expect(condition(ctx, r, rayv1.RayServiceReady)).To(gomega.Equal("True/NonZeroServeEndpoints"), desc)
	gomega.Expect(condition(ctx, r, rayv1.RollbackInProgress)).NotTo(gomega.HavePrefix("True/"), desc)
	last := r.first
	if r.second != "" {
		last = r.second
	}
	switch {
	case last == rayv1.UpgradeActionAbort && !r.reverted:
		// The aborted spec is still the spec: it is held, and the condition says so (once
		// the pass after the one that dropped the pending cluster wrote it; runPhase checks
		// that it stays).
		gomega.Eventually(func() string { return condition(ctx, r, rayv1.UpgradeAction) }).Should(gomega.Equal("True/"+rayv1.UpgradeAborted), desc)
	default:
		// An action for an upgrade that ended is inert.
		gomega.Eventually(func() string { return condition(ctx, r, rayv1.UpgradeAction) }).Should(gomega.BeEmpty(), desc)
	}
	events := rstest.Events(ctx, k8s, r.ns, name)
	if r.second != "" || !r.restarted {
		gomega.Eventually(events).Should(gomega.ContainSubstring("Normal "+reasonOf[last]+": the upgrade to RayCluster "+r.green), desc)
	}
	if r.second != "" && !r.restarted {
		gomega.Expect(events()).To(gomega.ContainSubstring("Normal UpgradePaused: the upgrade to RayCluster "+r.green+" is paused"), desc)
	}
}

var reasonOf = map[string]string{
	rayv1.UpgradeActionPause: rayv1.UpgradePaused, rayv1.UpgradeActionResume: rayv1.UpgradeResumed,
	rayv1.UpgradeActionAbort: rayv1.UpgradeAborting, rayv1.UpgradeActionPromote: rayv1.UpgradePromoting,
}

// selectorOf is the cluster the RayService's serve Service selects.
func selectorOf(ctx context.Context, ns string) string {
	return rstest.Selector(ctx, k8s, ns, rayspec.ServeServiceName(name))
}
