package gates

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/defaulting"
	"github.com/raygate/raygate/internal/rayspec"
	"github.com/raygate/raygate/test/builders"
	"github.com/raygate/raygate/test/integration/internal/rstest"
)

var _ = Describe("Spec hash stamps", func() {
	const name = "stamps"

	// podUIDs are the UIDs of a cluster's pods, to show none was recreated.
	podUIDs := func(ctx context.Context, ns, cluster string) []string {
		var pods corev1.PodList
		Expect(k8s.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels{rayv1.ClusterLabelKey: cluster})).To(Succeed())
		var out []string
		for _, p := range pods.Items {
			out = append(out, string(p.UID))
		}
		return out
	}
	// restartWithStamp stops the operator, rewrites the cluster's stamp as another operator
	// wrote it, and starts the operator again.
	restartWithStamp := func(ctx context.Context, ns, cluster string, stamp map[string]string) {
		Expect(world.Manager.Stop()).To(Succeed())
		rc := world.RayCluster(ctx, ns, cluster)
		base := rc.DeepCopy()
		delete(rc.Annotations, rayv1.SpecHashKey)
		for k, v := range stamp {
			rc.Annotations[k] = v
		}
		Expect(k8s.Patch(ctx, rc, client.MergeFrom(base))).To(Succeed())
		world.StartManager()
	}
	stampOf := func(ctx context.Context, ns, cluster string) func() map[string]string {
		return func() map[string]string { return world.RayCluster(ctx, ns, cluster).Annotations }
	}
	noUpgrade := func(ctx context.Context, ns, blue string) {
		Consistently(world.ClusterNames(ctx, ns), 2*time.Second).Should(ConsistOf(blue), "no new cluster")
		Expect(world.Condition(ctx, ns, name, rayv1.UpgradeInProgress)()).To(Equal("False/NoPendingCluster"))
		Expect(world.ActiveName(ctx, ns, name)()).To(Equal(blue))
	}

	It("re-stamps, without an upgrade, clusters stamped by an older raygate or by KubeRay, and keeps the running cluster on a tolerations-only change", func(ctx context.Context) {
		ns := world.NewNamespace(ctx)
		world.WatchInvariants(ctx, ns)
		Expect(k8s.Create(ctx, builders.RayService(name, ns).DeletionDelay(1).Obj())).To(Succeed())
		blue := world.WaitServing(ctx, ns, name)
		pods := podUIDs(ctx, ns, blue)
		Expect(pods).NotTo(BeEmpty())
		stored := world.RayService(ctx, ns, name).Spec.RayClusterSpec
		defaulted := *stored.DeepCopy()
		defaulting.RayClusterSpec(&defaulted)
		ourHash, err := rayspec.SpecHash(defaulted)
		Expect(err).NotTo(HaveOccurred())
		kubeRayHash, err := rayspec.KubeRayHash(stored)
		Expect(err).NotTo(HaveOccurred())
		Expect(stampOf(ctx, ns, blue)()).To(And(
			HaveKeyWithValue(rayv1.SpecHashKey, ourHash),
			HaveKeyWithValue(rayv1.HashWithoutReplicasAndWorkersToDeleteKey, kubeRayHash)))

		By("updating the operator from a raygate that stamped its own hash under KubeRay's key")
		oldHash, err := rayspec.HashWithoutReplicas(defaulted)
		Expect(err).NotTo(HaveOccurred())
		restartWithStamp(ctx, ns, blue, map[string]string{
			rayv1.HashWithoutReplicasAndWorkersToDeleteKey: oldHash, rayv1.KubeRayVersionKey: "v0.1.0",
		})
		Eventually(stampOf(ctx, ns, blue)).Should(And(
			HaveKeyWithValue(rayv1.SpecHashKey, ourHash),
			HaveKeyWithValue(rayv1.HashWithoutReplicasAndWorkersToDeleteKey, kubeRayHash)))
		noUpgrade(ctx, ns, blue)
		Eventually(world.Events(ctx, ns, name)).Should(ContainSubstring("stamped by an older raygate"))

		By("taking over a cluster KubeRay stamped")
		restartWithStamp(ctx, ns, blue, map[string]string{
			rayv1.HashWithoutReplicasAndWorkersToDeleteKey: kubeRayHash, rayv1.KubeRayVersionKey: "v1.5.1",
		})
		Eventually(stampOf(ctx, ns, blue)).Should(HaveKeyWithValue(rayv1.SpecHashKey, ourHash))
		noUpgrade(ctx, ns, blue)
		Eventually(world.Events(ctx, ns, name)).Should(ContainSubstring("stamped by KubeRay"))

		By("adding a toleration only")
		world.Update(ctx, ns, name, func(s *rayv1.RayService) {
			s.Spec.RayClusterSpec.HeadGroupSpec.Template.Spec.Tolerations = []corev1.Toleration{{Key: "kueue", Operator: corev1.TolerationOpExists}}
		})
		newKubeRayHash, err := rayspec.KubeRayHash(world.RayService(ctx, ns, name).Spec.RayClusterSpec)
		Expect(err).NotTo(HaveOccurred())
		Expect(newKubeRayHash).NotTo(Equal(kubeRayHash))
		Eventually(stampOf(ctx, ns, blue)).Should(And(
			HaveKeyWithValue(rayv1.SpecHashKey, ourHash),
			HaveKeyWithValue(rayv1.HashWithoutReplicasAndWorkersToDeleteKey, newKubeRayHash)),
			"KubeRay's hash follows the spec, so KubeRay run on this cluster would not upgrade it either")
		noUpgrade(ctx, ns, blue)
		Expect(world.RayCluster(ctx, ns, blue).Spec.HeadGroupSpec.Template.Spec.Tolerations).To(BeEmpty(), "the running cluster keeps its spec")
		Expect(podUIDs(ctx, ns, blue)).To(ConsistOf(pods), "no pod was recreated")
		Expect(world.Simulator(ns, blue).Submissions()).To(HaveLen(1), "nothing was resubmitted")

		By("still upgrading on a real change")
		world.Update(ctx, ns, name, func(s *rayv1.RayService) { rstest.SetImage(s, "rayproject/ray:2.53.0") })
		Eventually(world.PendingName(ctx, ns, name)).ShouldNot(BeEmpty())
		green := world.PendingName(ctx, ns, name)()
		Eventually(world.ActiveName(ctx, ns, name)).Should(Equal(green))
		Expect(world.RayCluster(ctx, ns, green).Spec.HeadGroupSpec.Template.Spec.Tolerations).To(HaveLen(1), "the new cluster has the toleration")
	})
})
