package gates

import (
	"context"
	"fmt"
	"strings"
	"time"
	"unicode"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/dashboard"
	"github.com/raygate/raygate/internal/testenv/raysim"
	"github.com/raygate/raygate/test/builders"
	"github.com/raygate/raygate/test/integration/internal/rstest"
	"github.com/raygate/raygate/test/integration/rayservice/internal/rsenv"
)

// A tenant controls what its head pods answer. These specs give raygate hostile dashboards
// and check that they get nowhere: the dashboard pool never gives one namespace more than 4
// of its 16 workers, so another tenant's incremental upgrade keeps its pace; redirects are
// never followed; huge and noisy answers end up as short, sanitized messages.
var _ = Describe("Hostile Ray dashboards", Ordered, func() {
	const (
		hungServices = 6
		// interval is the victim's intervalSeconds; a step may come this much later. A due
		// step also waits for one fresh read of the victim's dashboard, made after it came
		// due, which queues behind the pool's other work on a loaded machine.
		interval = 2 * time.Second
		lateness = 3 * time.Second
	)
	var hung, redirecting, huge, noisy string
	var bystander *raysim.Server
	var unattacked time.Duration

	// upgradeVictim creates an incremental RayService in a new namespace, upgrades it and
	// returns how long the upgrade took and when its traffic steps came.
	upgradeVictim := func(ctx context.Context) (time.Duration, []time.Time) {
		victim := world.NewNamespace(ctx)
		checker := world.WatchInvariants(ctx, victim)
		Expect(k8s.Create(ctx, builders.RayService("v", victim).Incremental(50, 25, int32(interval/time.Second), rsenv.GatewayClass).DeletionDelay(1).Obj())).To(Succeed())
		blue := world.WaitServing(ctx, victim, "v")
		start := time.Now()
		world.Update(ctx, victim, "v", func(s *rayv1.RayService) { rstest.SetImage(s, "rayproject/ray:2.53.0") })
		Eventually(world.ActiveName(ctx, victim, "v"), 90*time.Second).ShouldNot(Equal(blue))
		return time.Since(start), rsenv.RouteTimes(checker)
	}

	BeforeAll(func(ctx context.Context) {
		var err error
		bystander, err = raysim.NewServer(types.NamespacedName{Namespace: "elsewhere", Name: "bystander"}, raysim.Options{})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(bystander.Close)
		hung, redirecting, huge, noisy = world.NewNamespace(ctx), world.NewNamespace(ctx), world.NewNamespace(ctx), world.NewNamespace(ctx)
		DeferCleanup(func(ctx context.Context) {
			for _, ns := range []string{hung, redirecting, huge, noisy} {
				var list rayv1.RayServiceList
				Expect(k8s.List(ctx, &list, client.InNamespace(ns))).To(Succeed())
				for i := range list.Items {
					Expect(k8s.Delete(ctx, &list.Items[i])).To(Succeed())
				}
				dashboards.SetNamespaceFault(ns, raysim.Fault{})
			}
		})
	})

	It("times an incremental upgrade with no hostile dashboards around", func(ctx context.Context) {
		unattacked, _ = upgradeVictim(ctx)
	})

	It("never holds more than 4 workers for one namespace; another namespace's incremental upgrade steps on time", func(ctx context.Context) {
		dashboards.SetNamespaceFault(hung, raysim.Fault{Mode: raysim.FaultHang})
		dashboards.SetNamespaceFault(redirecting, raysim.Fault{Mode: raysim.FaultRedirect, Location: bystander.URL() + dashboard.ApplicationsPath})
		dashboards.SetNamespaceFault(huge, raysim.Fault{Mode: raysim.FaultHuge, Bytes: 8 << 20})
		dashboards.SetNamespaceFault(noisy, raysim.Fault{Mode: raysim.FaultNoisy})
		for i := range hungServices {
			Expect(k8s.Create(ctx, builders.RayService(fmt.Sprintf("hung-%d", i), hung).Obj())).To(Succeed())
		}
		for _, ns := range []string{redirecting, huge, noisy} {
			Expect(k8s.Create(ctx, builders.RayService("hostile", ns).Obj())).To(Succeed())
		}

		By("the hung dashboards hold the workers their namespace may have")
		Eventually(func() int64 { return dashboards.MaxConcurrent(hung) }, time.Minute).Should(BeNumerically(">=", 4))

		By("upgrading the victim while they do")
		took, times := upgradeVictim(ctx)
		fmt.Fprintf(GinkgoWriter, "victim upgrade: %v under attack, %v without; traffic steps at %v\n", took, unattacked, times)
		AddReportEntry("victim upgrade", fmt.Sprintf("%v under attack, %v without", took.Round(time.Millisecond), unattacked.Round(time.Millisecond)))
		Expect(took).To(BeNumerically("<=", 2*unattacked+5*time.Second), "the attack slowed the upgrade down")
		Expect(len(times)).To(BeNumerically(">=", 3), "traffic moved in steps")
		for i := 1; i < len(times); i++ {
			Expect(times[i].Sub(times[i-1])).To(BeNumerically("<=", interval+lateness),
				"traffic step %d came %v after the previous one (interval %v)", i, times[i].Sub(times[i-1]), interval)
		}
		Expect(dashboards.MaxConcurrent(hung)).To(BeNumerically("<=", 4), "one namespace's dashboards held more than 4 workers")

		By("the hung RayServices say their dashboards do not answer")
		for i := range hungServices {
			Eventually(func() string {
				return world.ConditionMessage(ctx, hung, fmt.Sprintf("hung-%d", i), rayv1.RayServiceReady)
			}, time.Minute).
				Should(ContainSubstring("no answer within 5s"))
		}
	})

	It("follows no redirect and quotes huge and noisy answers short and sanitized", func(ctx context.Context) {
		Eventually(func() string { return world.ConditionMessage(ctx, redirecting, "hostile", rayv1.RayServiceReady) }, time.Minute).
			Should(ContainSubstring("HTTP 307"))
		Eventually(func() string { return world.ConditionMessage(ctx, huge, "hostile", rayv1.RayServiceReady) }, time.Minute).
			Should(ContainSubstring("raygate reads"))
		Eventually(func() string { return world.ConditionMessage(ctx, noisy, "hostile", rayv1.RayServiceReady) }, time.Minute).
			Should(ContainSubstring("HTTP 500"))
		for _, ns := range []string{redirecting, huge, noisy} {
			msg := world.ConditionMessage(ctx, ns, "hostile", rayv1.RayServiceReady)
			Expect(len(msg)).To(BeNumerically("<", 1024), "the message quotes at most an excerpt")
			Expect(strings.IndexFunc(msg, func(r rune) bool { return unicode.IsControl(r) })).To(Equal(-1), "control characters in %q", msg)
		}
		Expect(bystander.Requests()).To(BeZero(), "a redirect was followed to another dashboard")
	})
})
