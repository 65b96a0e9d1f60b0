package gates

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/testenv/framework"
	"github.com/raygate/raygate/test/builders"
	"github.com/raygate/raygate/test/integration/internal/rstest"
	"github.com/raygate/raygate/test/integration/rayservice/internal/rsenv"
)

var _ = Describe("metrics", func() {
	const name = "metered"

	It("exports readiness and upgrade progress, and drops a RayService's series when it is deleted", func(ctx context.Context) {
		ns := world.NewNamespace(ctx)
		Expect(k8s.Create(ctx, builders.RayService(name, ns).Incremental(50, 50, 1, rsenv.GatewayClass).DeletionDelay(1).Obj())).To(Succeed())
		world.WaitServing(ctx, ns, name)
		Eventually(rsenv.Metric("kuberay_service_info", ns, name)).Should(Equal(map[string]float64{"": 1}))
		By("every series carries the RayService's uid, as KubeRay's do")
		uid := string(world.RayService(ctx, ns, name).UID)
		for _, m := range []string{"kuberay_service_info", "kuberay_service_condition_ready", "kuberay_service_condition_upgrade_in_progress"} {
			labels, _, err := framework.MetricSeries(m, ns, name)
			Expect(err).NotTo(HaveOccurred())
			Expect(labels).NotTo(BeEmpty(), m)
			for _, l := range labels {
				Expect(l).To(HaveKeyWithValue("uid", uid), m)
			}
		}
		Eventually(rsenv.Metric("kuberay_service_condition_ready", ns, name)).Should(Equal(map[string]float64{"condition=true": 1}))
		Eventually(rsenv.Metric("kuberay_service_condition_upgrade_in_progress", ns, name)).Should(Equal(map[string]float64{"condition=false": 1}))
		Eventually(rsenv.Metric("raygate_service_traffic_routed_percent", ns, name)).Should(Equal(map[string]float64{"role=active": 100}))

		By("upgrading: the pending cluster's share shows, then goes at promotion")
		promoted := map[string]string{"strategy": string(rayv1.NewClusterWithIncrementalUpgrade), "result": "promoted"}
		before := rsenv.Upgrades(promoted)()
		world.Update(ctx, ns, name, func(s *rayv1.RayService) { rstest.SetImage(s, "rayproject/ray:2.53.0") })
		Eventually(rsenv.Metric("kuberay_service_condition_upgrade_in_progress", ns, name)).Should(Equal(map[string]float64{"condition=true": 1}))
		Eventually(rsenv.Metric("raygate_service_traffic_routed_percent", ns, name)).Should(Equal(map[string]float64{"role=active": 50, "role=pending": 50}))
		Eventually(rsenv.Metric("raygate_service_target_capacity_percent", ns, name)).Should(HaveKey("role=pending"))
		Eventually(world.PendingName(ctx, ns, name)).Should(BeEmpty())
		Eventually(rsenv.Metric("raygate_service_traffic_routed_percent", ns, name)).Should(Equal(map[string]float64{"role=active": 100}))
		Eventually(rsenv.Metric("kuberay_service_condition_upgrade_in_progress", ns, name)).Should(Equal(map[string]float64{"condition=false": 1}))
		Expect(rsenv.Metric("raygate_service_condition_rollback_in_progress", ns, name)()).To(Equal(map[string]float64{"condition=false": 1}))
		// Other specs' RayServices may finish upgrades meanwhile, so at least one more.
		Eventually(rsenv.Upgrades(promoted)).Should(BeNumerically(">=", before+1))

		By("deleting the RayService")
		Expect(k8s.Delete(ctx, world.RayService(ctx, ns, name))).To(Succeed())
		for _, m := range []string{"kuberay_service_info", "kuberay_service_condition_ready", "kuberay_service_condition_upgrade_in_progress",
			"raygate_service_condition_rollback_in_progress", "raygate_service_traffic_routed_percent", "raygate_service_target_capacity_percent"} {
			Eventually(rsenv.Metric(m, ns, name)).Should(BeEmpty(), m)
		}
	})
})
