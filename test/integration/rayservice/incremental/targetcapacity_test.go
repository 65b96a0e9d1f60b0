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
		ns := newNamespace(ctx)
		watchInvariants(ctx, ns)
		svc := builders.RayService(name, ns).Obj()
		svc.Spec.ServeConfigV2 = "target_capacity: 50\n" + builders.DefaultServeConfig
		Expect(k8s.Create(ctx, svc)).To(Succeed())
		blue := waitServing(ctx, ns, name)
		subs := simulatorOf(ns, blue).Submissions()
		Expect(subs).To(HaveLen(1))
		Expect(subs[0].TargetCapacity).To(HaveValue(BeNumerically("==", 50)))

		By("changing only target_capacity")
		update(ctx, ns, name, func(s *rayv1.RayService) {
			s.Spec.ServeConfigV2 = "target_capacity: 80\n" + builders.DefaultServeConfig
		})
		Eventually(simulatorOf(ns, blue).Submissions).Should(HaveLen(2))
		subs = simulatorOf(ns, blue).Submissions()
		Expect(subs[1].TargetCapacity).To(HaveValue(BeNumerically("==", 80)))
		Expect(subs[1].ConfigWithoutTargetCapacity()).To(Equal(subs[0].ConfigWithoutTargetCapacity()))
		Consistently(clusterNames(ctx, ns), time.Second).Should(ConsistOf(blue), "no new cluster")

		By("removing it")
		update(ctx, ns, name, func(s *rayv1.RayService) { s.Spec.ServeConfigV2 = builders.DefaultServeConfig })
		Eventually(simulatorOf(ns, blue).Submissions).Should(HaveLen(3))
		Expect(simulatorOf(ns, blue).Submissions()[2]).To(HaveField("TargetCapacity", BeNil()))
		Expect(clusterNames(ctx, ns)()).To(ConsistOf(blue))
		Eventually(condition(ctx, ns, name, rayv1.RayServiceReady)).Should(Equal("True/NonZeroServeEndpoints"))
	})
})
