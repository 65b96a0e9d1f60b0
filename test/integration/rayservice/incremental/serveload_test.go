package incremental

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/testenv/load"
	"github.com/raygate/raygate/test/builders"
	"github.com/raygate/raygate/test/integration/internal/rstest"
	"github.com/raygate/raygate/test/integration/rayservice/internal/rsenv"
)

var _ = Describe("in-cluster clients of the serve Service", func() {
	const name = "incluster"

	It("see 0 failed requests through an incremental upgrade, resolving the Service to its ready pods' simulated Serve proxies", func(ctx context.Context) {
		ns := world.NewNamespace(ctx)
		world.WatchInvariants(ctx, ns)
		Expect(k8s.Create(ctx, builders.RayService(name, ns).Incremental(100, 25, 1, rsenv.GatewayClass).DeletionDelay(2).Obj())).To(Succeed())
		blue := world.WaitServing(ctx, ns, name)

		// The ready pods the Service selects, as kube-proxy would program them (the API server
		// refuses the simulated pods' loopback IPs in EndpointSlices).
		target := load.ServicePods(k8s, ns, name+"-serve-svc", "serve", 100*time.Millisecond)
		opts := load.Options{Target: target, Path: "/fruit", Rate: 40, Workers: 4, MaxRequests: 4000, MaxDuration: 90 * time.Second, Timeout: 2 * time.Second}
		By("waiting for the serve Service's endpoints to answer")
		Eventually(func(g Gomega) {
			rep, err := load.Once(ctx, load.Options{Target: target, Path: opts.Path, MaxRequests: 1})
			g.Expect(err).NotTo(HaveOccurred())
			s := rep.Summary()
			g.Expect(s.Failed).To(BeZero(), "%v", s.Errors)
			g.Expect(s.ByCluster).To(HaveKey(ns + "/" + blue))
		}).Should(Succeed())

		By("sending steady load while the upgrade moves capacity and traffic")
		run, err := load.Start(ctx, opts)
		Expect(err).NotTo(HaveOccurred())
		started := time.Now()
		world.Update(ctx, ns, name, func(s *rayv1.RayService) { rstest.SetImage(s, "rayproject/ray:2.53.0") })
		Eventually(world.PendingName(ctx, ns, name)).ShouldNot(BeEmpty())
		green := world.PendingName(ctx, ns, name)()
		Eventually(world.ActiveName(ctx, ns, name), time.Minute).Should(Equal(green))
		Eventually(world.ClusterNames(ctx, ns), time.Minute).Should(ConsistOf(green), "the old cluster is deleted after the deletion delay")
		// A little load after the old cluster is gone: its pods' listeners closed.
		mark, before := time.Since(started), len(run.Report().Results)
		Eventually(func() int { return len(run.Report().Results) }).Should(BeNumerically(">", before+20))
		rep := run.Stop()

		GinkgoWriter.Printf("serve Service load during the upgrade %s -> %s:\n%s", blue, green, rep.Table(time.Second))
		s := rep.Summary()
		Expect(s.Failed).To(BeZero(), "failed requests: %v", s.Errors)
		Expect(s.Sent).To(BeNumerically(">=", 100))
		Expect(s.ByCluster).To(HaveKey(ns+"/"+blue), "the old cluster answered before the switch")
		Expect(s.ByCluster).To(HaveKey(ns+"/"+green), "the new cluster answered after it")
		last := rep.Between(mark, time.Hour)
		Expect(last.Sent).To(BeNumerically(">", 0))
		Expect(last.Share(ns+"/"+green)).To(Equal(1.0), "after promotion only the new cluster answers: %s", last)
	})
})
