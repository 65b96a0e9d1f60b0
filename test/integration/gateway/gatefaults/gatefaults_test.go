package gatefaults

import (
	"context"
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	raygatev1alpha1 "github.com/raygate/raygate/apis/raygate/v1alpha1"
	"github.com/raygate/raygate/internal/testenv/docqueries"
	"github.com/raygate/raygate/test/integration/gateway/internal/gwenv"
	"github.com/raygate/raygate/test/integration/internal/rstest"
)

// The suite's Prometheus fails mid-upgrade: killed (its port refuses connections), then
// stalled with SIGSTOP (its port accepts connections and nothing answers). As
// docs/rayservice.md says for a gate without an answer, the upgrade waits at its step with
// UpgradeGates False/GatesWaiting and a Warning UpgradeGateWaiting event, and never rolls
// back, even with onFailure: Rollback; it goes on once Prometheus answers again. The gate
// is the documented Traefik 5xx gate on a healthy version.
var _ = Describe("metric gates while Prometheus is killed or stalled", func() {
	It(gwenv.SpecGatesFaulted, func(ctx context.Context) {
		gate := gwenv.GateDoc(gwenv.TraefikGate)
		const queryTimeout = 2
		g := gw.StartGated(ctx, "gwgatefault-", gwenv.GatedOptions{Gates: []docqueries.Example{gate}, OnFailure: raygatev1alpha1.FailureRollback, QueryTimeout: queryTimeout})
		green := g.Green
		traffic := rstest.PendingTraffic(ctx, gw.Client, g.NS, g.Name)
		action := func() string { return rstest.Get(ctx, gw.Client, g.NS, g.Name).Annotations[rayv1.UpgradeActionKey] }
		// Prometheus comes back for the next specs whatever happens here.
		DeferCleanup(func(ctx context.Context) {
			_ = gw.Prom.Resume()
			if _, err := gw.Prom.Query(ctx, "vector(1)"); err != nil {
				Expect(gw.Prom.Restart(ctx)).To(Succeed())
			}
		})

		// holds checks that the upgrade waits at its step for want, the reason a failed query
		// gives, with no action taken, for longer than a step's interval.
		holds := func(fault, want string) int32 {
			GinkgoHelper()
			Eventually(func() string { return g.Conds.Last().State + ": " + g.Conds.Last().Message }, time.Minute).Should(And(
				HavePrefix("False/"+raygatev1alpha1.GatesWaiting),
				ContainSubstring(fmt.Sprintf("gate %q: no answer from Prometheus (", gate.Gate)),
				ContainSubstring(want),
				ContainSubstring("never proceeds ungated nor rolls back")), "UpgradeGates while Prometheus is %s", fault)
			held := traffic()
			Expect(held).To(BeNumerically(">=", 0))
			Consistently(traffic, (gwenv.GateInterval+2)*time.Second, 250*time.Millisecond).Should(Equal(held), "no traffic step while Prometheus is %s", fault)
			Expect(action()).To(BeEmpty(), "no pause or abort while Prometheus is %s", fault)
			Expect(rstest.PendingName(ctx, gw.Client, g.NS, g.Name)()).To(Equal(green))
			return held
		}

		By("Prometheus killed after the first traffic step")
		Eventually(traffic, time.Minute).Should(BeNumerically(">", 0))
		Expect(gw.Prom.Kill()).To(Succeed())
		killedAt := holds("killed", "connection refused")
		Eventually(rstest.Events(ctx, gw.Client, g.NS, g.Name)).Should(MatchRegexp(`Warning UpgradeGateWaiting: UpgradePolicy %s: gate %q: no answer from Prometheus \(.*connection refused`, gwenv.GatePolicy, gate.Gate))

		By("Prometheus restarted on its port: the gate passes and traffic moves on")
		Expect(gw.Prom.Restart(ctx)).To(Succeed())
		Eventually(traffic, time.Minute).Should(BeNumerically(">", killedAt))
		Expect(traffic()).To(BeNumerically("<", 100), "a step left for the stall")

		By("Prometheus stalled (SIGSTOP): queries are accepted and never answered")
		Expect(gw.Prom.Pause()).To(Succeed())
		stalledAt := holds("stalled", "deadline exceeded")
		Expect(stalledAt).To(BeNumerically(">", killedAt))

		By("Prometheus continued: the upgrade completes")
		Expect(gw.Prom.Resume()).To(Succeed())
		Eventually(rstest.ActiveName(ctx, gw.Client, g.NS, g.Name), 2*time.Minute).Should(Equal(green))
		Eventually(rstest.ClusterNames(ctx, gw.Client, g.NS), time.Minute).Should(ConsistOf(green))
		rep, _, conds := g.Stop()
		for _, c := range conds {
			Expect(c.State).NotTo(Equal("False/"+raygatev1alpha1.GateFailed), "a missing answer is never a failed gate: %s", c.Message)
		}
		sum := rep.Summary()
		Expect(sum.Failed).To(BeZero(), "no request failed through Traefik: %v", sum.Errors)
		waits := 0
		for _, c := range conds {
			if c.State == "False/"+raygatev1alpha1.GatesWaiting {
				waits++
			}
		}
		AddReportEntry(fmt.Sprintf("GATE FAULTS %s -> %s: held at %d%% while Prometheus was killed and at %d%% while it was stalled (%d GatesWaiting states), promoted once it answered; sent=%d failed=%d",
			g.Blue, green, killedAt, stalledAt, waits, sum.Sent, sum.Failed))
	})
})
