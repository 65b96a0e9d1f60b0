package actions

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/testenv/framework"
	"github.com/raygate/raygate/test/builders"
	"github.com/raygate/raygate/test/integration/internal/rstest"
	"github.com/raygate/raygate/test/integration/rayservice/internal/rsenv"
)

// actionReasons are the reason labels of a RayService's raygate_service_upgrade_action series.
func actionReasons(ns, name string) func() []string {
	return func() []string {
		labels, _, err := framework.MetricSeries("raygate_service_upgrade_action", ns, name)
		Expect(err).NotTo(HaveOccurred())
		var out []string
		for _, l := range labels {
			out = append(out, l["reason"])
		}
		return out
	}
}

var _ = Describe("Upgrade actions", func() {
	const name = "ctl"

	It("pauses an incremental upgrade mid-shift, holds capacity and traffic, and resumes its pacing", func(ctx context.Context) {
		ns := world.NewNamespace(ctx)
		checker := world.WatchInvariants(ctx, ns)
		blue, green := world.MidShift(ctx, ns, name, 50, 10, 1, 20)

		world.SetAction(ctx, ns, name, rayv1.UpgradeActionPause, green)
		Eventually(world.Condition(ctx, ns, name, rayv1.UpgradeAction)).Should(Equal("True/UpgradePaused"))
		Eventually(func() string { return world.ConditionMessage(ctx, ns, name, rayv1.UpgradeInProgress) }).Should(ContainSubstring("paused by raygate.ray.io/upgrade-action=pause"))
		held := world.PendingTraffic(ctx, ns, name)()
		Eventually(world.RouteWeight(ctx, ns, name, green)).Should(Equal(held), "a step recorded before the pause still takes effect")
		st := world.RayService(ctx, ns, name).Status
		Consistently(func() rayv1.RayServiceStatuses {
			s := world.RayService(ctx, ns, name).Status
			return rayv1.RayServiceStatuses{ActiveServiceStatus: rayv1.RayServiceStatus{TargetCapacity: s.ActiveServiceStatus.TargetCapacity, TrafficRoutedPercent: s.ActiveServiceStatus.TrafficRoutedPercent},
				PendingServiceStatus: rayv1.RayServiceStatus{TargetCapacity: s.PendingServiceStatus.TargetCapacity, TrafficRoutedPercent: s.PendingServiceStatus.TrafficRoutedPercent}}
		}, 3*time.Second).Should(Equal(rayv1.RayServiceStatuses{
			ActiveServiceStatus:  rayv1.RayServiceStatus{TargetCapacity: st.ActiveServiceStatus.TargetCapacity, TrafficRoutedPercent: st.ActiveServiceStatus.TrafficRoutedPercent},
			PendingServiceStatus: rayv1.RayServiceStatus{TargetCapacity: st.PendingServiceStatus.TargetCapacity, TrafficRoutedPercent: st.PendingServiceStatus.TrafficRoutedPercent},
		}), "three intervals pass without a step")
		Expect(world.RouteWeight(ctx, ns, name, green)()).To(Equal(held))
		Eventually(world.Events(ctx, ns, name)).Should(ContainSubstring("Normal UpgradePaused: the upgrade to RayCluster " + green + " is paused"))
		Eventually(actionReasons(ns, name)).Should(ConsistOf("UpgradePaused"))

		By("resuming: the pacing goes on from where it stopped")
		world.SetAction(ctx, ns, name, rayv1.UpgradeActionResume, "")
		Eventually(world.Condition(ctx, ns, name, rayv1.UpgradeAction)).Should(Equal("False/UpgradeResumed"))
		Eventually(world.ActiveName(ctx, ns, name), time.Minute).Should(Equal(green))
		steps := rsenv.TrafficSteps(checker, green)
		for i := 1; i < len(steps); i++ {
			Expect(steps[i]-steps[i-1]).To(BeNumerically("<=", 10), "one step at a time after resume: %v", steps)
		}
		Eventually(world.Condition(ctx, ns, name, rayv1.UpgradeAction)).Should(BeEmpty(), "an action for a finished upgrade is inert")
		Eventually(actionReasons(ns, name)).Should(BeEmpty())
		Eventually(world.ClusterNames(ctx, ns)).Should(ConsistOf(green))
		Expect(blue).NotTo(Equal(green))
	})

	It("promotes an incremental upgrade mid-shift: the pending cluster gets all capacity before all traffic", func(ctx context.Context) {
		ns := world.NewNamespace(ctx)
		checker := world.WatchInvariants(ctx, ns)
		// A slow pacing: 80% of traffic left in 10% steps every 5 s would take 40 s more.
		_, green := world.MidShift(ctx, ns, name, 50, 10, 5, 10)

		promoted := time.Now()
		world.SetAction(ctx, ns, name, rayv1.UpgradeActionPromote, green)
		Eventually(world.ActiveName(ctx, ns, name), 20*time.Second).Should(Equal(green))
		Expect(time.Since(promoted)).To(BeNumerically("<", 20*time.Second))
		Eventually(world.Events(ctx, ns, name)).Should(ContainSubstring("Normal UpgradePromoting: the upgrade to RayCluster " + green + " is promoted"))
		var caps []float64
		for _, s := range world.Simulator(ns, green).Submissions() {
			if s.TargetCapacity != nil && (len(caps) == 0 || caps[len(caps)-1] != *s.TargetCapacity) {
				caps = append(caps, *s.TargetCapacity)
			}
		}
		Expect(caps).To(Equal([]float64{0, 50, 100}), "capacity grows to 100%% at once")
		Eventually(func() []int32 { return rsenv.TrafficSteps(checker, green) }).Should(HaveExactElements(int32(0), int32(10), int32(100)))
		Eventually(world.ClusterNames(ctx, ns)).Should(ConsistOf(green))
	})

	It("aborts an incremental upgrade across an operator restart between recording and carrying it out, walks back step by step and holds the spec", func(ctx context.Context) {
		ns := world.NewNamespace(ctx)
		checker := world.WatchInvariants(ctx, ns)
		blue, green := world.MidShift(ctx, ns, name, 50, 10, 1, 20)

		By("recording the abort while the gateway controller holds the last step, so nothing can be carried out yet")
		gw.Pause(true)
		DeferCleanup(func() { gw.Pause(false) }) // the gateway controller is the suite's: never leave it paused
		// The next step (or the one just applied) waits for the gateway controller.
		Eventually(func() string { return world.ConditionMessage(ctx, ns, name, rayv1.UpgradeInProgress) }).Should(ContainSubstring("waiting for the last step to take effect"))
		world.SetAction(ctx, ns, name, rayv1.UpgradeActionAbort, green)
		Eventually(world.Condition(ctx, ns, name, rayv1.UpgradeAction)).Should(Equal("True/UpgradeAborting"))
		Expect(world.RayCluster(ctx, ns, blue).Annotations).To(HaveKey(rayv1.AbortedSpecHashKey), "recorded on the active cluster before it is carried out")
		Expect(world.RayService(ctx, ns, name).Status.PendingServiceStatus.RayClusterName).To(Equal(green))
		world.RestartManager(0)
		gw.Pause(false)

		By("walking traffic and capacity back, then dropping the pending cluster")
		Eventually(world.PendingName(ctx, ns, name), time.Minute).Should(BeEmpty())
		Expect(world.ActiveName(ctx, ns, name)()).To(Equal(blue))
		steps := rsenv.TrafficSteps(checker, green)
		for i := 1; i < len(steps); i++ {
			Expect(steps[i-1]-steps[i]).To(BeNumerically("<=", 10), "back in steps of 10: %v", steps)
		}
		Eventually(world.Condition(ctx, ns, name, rayv1.UpgradeAction)).Should(Equal("True/UpgradeAborted"))
		Eventually(world.ClusterNames(ctx, ns)).Should(ConsistOf(blue))
		Consistently(world.ClusterNames(ctx, ns), 2*time.Second).Should(ConsistOf(blue), "no new cluster for the aborted spec")
		Eventually(rsenv.Upgrades(map[string]string{"strategy": string(rayv1.NewClusterWithIncrementalUpgrade), "result": "rolled_back"})).Should(BeNumerically(">=", 1))

		By("resume retries the aborted upgrade")
		world.SetAction(ctx, ns, name, rayv1.UpgradeActionResume, "")
		Eventually(world.ActiveName(ctx, ns, name), time.Minute).ShouldNot(Equal(blue))
		Expect(world.RayCluster(ctx, ns, world.ActiveName(ctx, ns, name)()).Spec.HeadGroupSpec.Template.Spec.Containers[0].Image).To(Equal("rayproject/ray:2.53.0"))
	})

	It("pauses a blue/green switch, promotes it, and aborts the next upgrade", func(ctx context.Context) {
		ns := world.NewNamespace(ctx)
		world.WatchInvariants(ctx, ns)
		Expect(k8s.Create(ctx, builders.RayService(name, ns).DeletionDelay(1).Obj())).To(Succeed())
		blue := world.WaitServing(ctx, ns, name)
		world.Update(ctx, ns, name, func(s *rayv1.RayService) { rstest.SetImage(s, "rayproject/ray:2.53.0") })
		Eventually(world.PendingName(ctx, ns, name)).ShouldNot(BeEmpty())
		green := world.PendingName(ctx, ns, name)()
		world.SetAction(ctx, ns, name, rayv1.UpgradeActionPause, green)
		Eventually(world.Condition(ctx, ns, name, rayv1.UpgradeAction)).Should(Equal("True/UpgradePaused"))
		Eventually(world.Simulator(ns, green).AllRunning).Should(BeTrue())
		Consistently(world.SelectorOf(ctx, ns, name+"-serve-svc"), 2*time.Second).Should(Equal(blue), "no switch while paused, though the new applications run")
		Expect(world.ActiveName(ctx, ns, name)()).To(Equal(blue))

		world.SetAction(ctx, ns, name, rayv1.UpgradeActionPromote, green)
		Eventually(world.ActiveName(ctx, ns, name)).Should(Equal(green))
		Eventually(world.SelectorOf(ctx, ns, name+"-serve-svc")).Should(Equal(green))

		By("aborting the next upgrade: the pending cluster never served and is dropped")
		world.Update(ctx, ns, name, func(s *rayv1.RayService) { rstest.SetImage(s, "rayproject/ray:2.54.0") })
		Eventually(world.PendingName(ctx, ns, name)).ShouldNot(BeEmpty())
		third := world.PendingName(ctx, ns, name)()
		world.SetAction(ctx, ns, name, rayv1.UpgradeActionAbort, third)
		Eventually(world.PendingName(ctx, ns, name)).Should(BeEmpty())
		Eventually(world.Condition(ctx, ns, name, rayv1.UpgradeAction)).Should(Equal("True/UpgradeAborted"))
		Eventually(world.ClusterNames(ctx, ns)).Should(ConsistOf(green))
		Consistently(world.ClusterNames(ctx, ns), 2*time.Second).Should(ConsistOf(green))
		Expect(world.SelectorOf(ctx, ns, name+"-serve-svc")()).To(Equal(green))
	})
})

func plugin(ctx context.Context, ns string, args ...string) string {
	out, err := rstest.Plugin(ctx, env.Kubeconfig, ns, args...)
	Expect(err).NotTo(HaveOccurred())
	return out
}

var _ = Describe("kubectl raygate", func() {
	const name = "plugged"

	It("shows an upgrade, pauses it, says why it waits, and promotes it", func(ctx context.Context) {
		ns := world.NewNamespace(ctx)
		world.WatchInvariants(ctx, ns)
		blue, green := world.MidShift(ctx, ns, name, 20, 5, 2, 10)
		Expect(plugin(ctx, ns, "pause", name)).To(Equal("rayservice.ray.io/" + name + ": pause requested for pending RayCluster " + green + "\n"))
		Eventually(world.Condition(ctx, ns, name, rayv1.UpgradeAction)).Should(Equal("True/UpgradePaused"))
		Eventually(func() string { return plugin(ctx, ns, "why", name) }).Should(ContainSubstring("paused by raygate.ray.io/upgrade-action=pause"))

		status := plugin(ctx, ns, "status", name)
		Expect(status).To(ContainSubstring("Action:    pause " + green + " (UpgradePaused)\n"))
		Expect(status).To(ContainSubstring("Next step: none while paused\n"))
		Expect(status).To(MatchRegexp(`(?m)^active +` + blue + ` +\d+% +\d+% +\d+% `))
		Expect(status).To(MatchRegexp(`(?m)^pending +` + green + ` +\d+% +\d+% +\d+% +\d+/\d+ +fruit RUNNING`))

		Expect(plugin(ctx, ns, "promote", name)).To(Equal("rayservice.ray.io/" + name + ": promote requested for pending RayCluster " + green + "\n"))
		Eventually(world.ActiveName(ctx, ns, name)).Should(Equal(green))
		Eventually(func() string { return plugin(ctx, ns, "status", name) }).Should(ContainSubstring("Action:    promote " + green + " (not in effect)\n"))
	})
})
