package incremental

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/test/builders"
)

var _ = Describe("a target_capacity written in serveConfigV2", func() {
	const name = "capacity"

	It("reaches the dashboard with NewCluster, and a change of it alone resubmits the config to the serving cluster", func(ctx context.Context) {
		ns := world.NewNamespace(ctx)
		world.WatchInvariants(ctx, ns)
		svc := builders.RayService(name, ns).Obj()
		svc.Spec.ServeConfigV2 = "target_capacity: 50\n" + builders.DefaultServeConfig
		Expect(k8s.Create(ctx, svc)).To(Succeed())
		blue := world.WaitServing(ctx, ns, name)
		subs := world.Simulator(ns, blue).Submissions()
		Expect(subs).To(HaveLen(1))
		Expect(subs[0].TargetCapacity).To(HaveValue(BeNumerically("==", 50)))

		By("changing only target_capacity")
		world.Update(ctx, ns, name, func(s *rayv1.RayService) {
			s.Spec.ServeConfigV2 = "target_capacity: 80\n" + builders.DefaultServeConfig
		})
		Eventually(world.Simulator(ns, blue).Submissions).Should(HaveLen(2))
		subs = world.Simulator(ns, blue).Submissions()
		Expect(subs[1].TargetCapacity).To(HaveValue(BeNumerically("==", 80)))
		Expect(subs[1].ConfigWithoutTargetCapacity()).To(Equal(subs[0].ConfigWithoutTargetCapacity()))
		Consistently(world.ClusterNames(ctx, ns), time.Second).Should(ConsistOf(blue), "no new cluster")

		By("removing it")
		world.Update(ctx, ns, name, func(s *rayv1.RayService) { s.Spec.ServeConfigV2 = builders.DefaultServeConfig })
		Eventually(world.Simulator(ns, blue).Submissions).Should(HaveLen(3))
		Expect(world.Simulator(ns, blue).Submissions()[2]).To(HaveField("TargetCapacity", BeNil()))
		Expect(world.ClusterNames(ctx, ns)()).To(ConsistOf(blue))
		Eventually(world.Condition(ctx, ns, name, rayv1.RayServiceReady)).Should(Equal("True/NonZeroServeEndpoints"))
	})
})
