package admission

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/test/integration/internal/rstest"
)

func plugin(ctx context.Context, args ...string) (string, error) {
	return rstest.Plugin(ctx, env.Kubeconfig, "default", args...)
}

var _ = Describe("Upgrade actions at admission", func() {
	It("refuses an action with no upgrade to act on, an unknown one, or one aimed at another cluster, with the reason", func(ctx context.Context) {
		_, stderr, err := kubectl(ctx, rayService("steered"), "apply", "-f", "-")
		Expect(err).NotTo(HaveOccurred(), stderr)

		By("promote while no upgrade runs")
		_, err = plugin(ctx, "promote", "steered")
		Expect(err).To(MatchError(`admission webhook "vrayservice.ray.io" denied the request: RayService.ray.io "steered" is invalid: ` +
			`metadata.annotations[raygate.ray.io/upgrade-action]: Invalid value: "promote": no upgrade is running: the RayService has no pending RayCluster to promote`))
		svc, err := getService(ctx, "steered")
		Expect(err).NotTo(HaveOccurred())
		Expect(svc.Annotations).NotTo(HaveKey(rayv1.UpgradeActionKey), "a refused action is not stored")

		By("an upgrade in flight")
		svc.Status.ActiveServiceStatus.RayClusterName = "steered-aaaaa"
		svc.Status.PendingServiceStatus.RayClusterName = "steered-bbbbb"
		Expect(env.Client.Status().Update(ctx, svc)).To(Succeed())

		_, stderr, err = kubectl(ctx, "", "annotate", "rayservice", "steered", rayv1.UpgradeActionKey+"=rollback")
		Expect(err).To(HaveOccurred())
		Expect(stderr).To(Equal(`The RayService "steered" is invalid: metadata.annotations[raygate.ray.io/upgrade-action]: Unsupported value: "rollback": supported values: "pause", "resume", "abort", "promote"` + "\n"))

		_, err = plugin(ctx, "abort", "steered", "--target", "steered-zzzzz")
		Expect(err).To(MatchError(ContainSubstring(`metadata.annotations[raygate.ray.io/upgrade-target]: Invalid value: "steered-zzzzz": ` +
			`RayCluster steered-zzzzz is not the pending cluster of this RayService (the upgrade in flight is to steered-bbbbb)`)))

		out, err := plugin(ctx, "pause", "steered")
		Expect(err).NotTo(HaveOccurred())
		Expect(out).To(Equal("rayservice.ray.io/steered: pause requested for pending RayCluster steered-bbbbb\n"))
		svc, err = getService(ctx, "steered")
		Expect(err).NotTo(HaveOccurred())
		Expect(svc.Annotations).To(HaveKeyWithValue(rayv1.UpgradeActionKey, "pause"))
		Expect(svc.Annotations).To(HaveKeyWithValue(rayv1.UpgradeTargetKey, "steered-bbbbb"))

		out, err = plugin(ctx, "resume", "steered")
		Expect(err).NotTo(HaveOccurred())
		Expect(out).To(Equal("rayservice.ray.io/steered: resume requested\n"))
		svc, err = getService(ctx, "steered")
		Expect(err).NotTo(HaveOccurred())
		Expect(svc.Annotations).NotTo(HaveKey(rayv1.UpgradeTargetKey))
	})
})
