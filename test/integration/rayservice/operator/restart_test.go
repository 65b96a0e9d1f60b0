package operator

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/testenv/framework"
	"github.com/raygate/raygate/test/builders"
	"github.com/raygate/raygate/test/integration/internal/rstest"
)

var _ = Describe("Operator restarts", func() {
	const name = "restart"

	It("resumes a NewCluster upgrade at each phase without resubmitting, forgetting or hurrying anything", func(ctx context.Context) {
		ns := world.NewNamespace(ctx)
		world.WatchInvariants(ctx, ns)
		Expect(k8s.Create(ctx, builders.RayService(name, ns).DeletionDelay(4).Obj())).To(Succeed())
		blue := world.WaitServing(ctx, ns, name)
		world.RestartManager(0)
		Consistently(func() int { return len(world.Simulator(ns, blue).Submissions()) }, time.Second).Should(Equal(1), "a restart resubmits nothing")

		By("restarting while the pending cluster is prepared")
		// Its pods stay unready until the operator restarted: with pods ready at once, the
		// restart could otherwise fall between the dashboard accepting the config and the
		// pass recording it, which no restart can survive without sending it again.
		preparing := func(p *corev1.Pod) bool {
			return p.Namespace == ns && p.Spec.Containers[0].Image == "rayproject/ray:2.53.0"
		}
		Expect(kubelet.SetBehavior(ctx, preparing, framework.NotReady)).To(Succeed())
		world.Update(ctx, ns, name, func(s *rayv1.RayService) { rstest.SetImage(s, "rayproject/ray:2.53.0") })
		Eventually(world.PendingName(ctx, ns, name)).ShouldNot(BeEmpty())
		green := world.PendingName(ctx, ns, name)()
		world.RestartManager(500 * time.Millisecond)
		Expect(kubelet.SetBehavior(ctx, preparing, framework.Ready)).To(Succeed())
		Eventually(world.ActiveName(ctx, ns, name)).Should(Equal(green))
		Expect(world.PendingName(ctx, ns, name)()).To(BeEmpty())
		Expect(world.ClusterNames(ctx, ns)()).To(ConsistOf(blue, green), "no second pending cluster was created")
		Expect(world.Simulator(ns, green).Submissions()).To(HaveLen(1))

		By("restarting during the deletion delay: the recorded time is kept")
		Eventually(world.DeleteAfterOf(ctx, ns, blue)).ShouldNot(BeEmpty())
		deleteAfter := world.DeleteAfterOf(ctx, ns, blue)()
		world.RestartManager(0)
		Expect(world.DeleteAfterOf(ctx, ns, blue)()).To(Equal(deleteAfter))
		Eventually(world.ClusterNames(ctx, ns)).Should(ConsistOf(green))
	})

	It("resubmits the serve config when the head restarts and the dashboard lost the applications", func(ctx context.Context) {
		ns := world.NewNamespace(ctx)
		world.WatchInvariants(ctx, ns)
		Expect(k8s.Create(ctx, builders.RayService(name, ns).Obj())).To(Succeed())
		blue := world.WaitServing(ctx, ns, name)
		Expect(world.Simulator(ns, blue).Submissions()).To(HaveLen(1))

		world.Simulator(ns, blue).Restart()
		var pods corev1.PodList
		Expect(k8s.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels{rayv1.ClusterLabelKey: blue, rayv1.NodeTypeLabelKey: "head"})).To(Succeed())
		Expect(pods.Items).To(HaveLen(1))
		Expect(kubelet.DeletePod(ctx, ns, pods.Items[0].Name)).To(Succeed())

		Eventually(func() int { return len(world.Simulator(ns, blue).Submissions()) }).Should(Equal(2))
		Eventually(world.Simulator(ns, blue).AllRunning).Should(BeTrue())
		Eventually(world.Condition(ctx, ns, name, rayv1.RayServiceReady)).Should(Equal("True/NonZeroServeEndpoints"))
		Expect(world.ActiveName(ctx, ns, name)()).To(Equal(blue))
		Eventually(world.Events(ctx, ns, name)).Should(ContainSubstring("the dashboard reports no Serve applications"))
	})
})

var _ = Describe("Operator upgrades", func() {
	It("re-stamps a cluster built by another raygate version instead of replacing it", func(ctx context.Context) {
		const name = "stamped"
		ns := world.NewNamespace(ctx)
		world.WatchInvariants(ctx, ns)
		Expect(k8s.Create(ctx, builders.RayService(name, ns).Obj())).To(Succeed())
		blue := world.WaitServing(ctx, ns, name)
		hash := world.RayCluster(ctx, ns, blue).Annotations[rayv1.HashWithoutReplicasAndWorkersToDeleteKey]

		By("pretending an older raygate hashed the spec differently")
		rc := world.RayCluster(ctx, ns, blue)
		rc.Annotations[rayv1.HashWithoutReplicasAndWorkersToDeleteKey] = "hash-from-an-older-version"
		rc.Annotations[rayv1.KubeRayVersionKey] = "v0.0.1"
		Expect(k8s.Update(ctx, rc)).To(Succeed())

		Eventually(func() string {
			return world.RayCluster(ctx, ns, blue).Annotations[rayv1.HashWithoutReplicasAndWorkersToDeleteKey]
		}).Should(Equal(hash))
		Expect(world.RayCluster(ctx, ns, blue).Annotations[rayv1.KubeRayVersionKey]).NotTo(Equal("v0.0.1"))
		Consistently(world.ClusterNames(ctx, ns), time.Second).Should(ConsistOf(blue))
		Expect(world.PendingName(ctx, ns, name)()).To(BeEmpty())
		Eventually(world.Events(ctx, ns, name)).Should(ContainSubstring("re-stamped RayCluster " + blue))
	})
})

var _ = Describe("None strategy", func() {
	const name = "inplace"

	It("leaves the running cluster and its pods alone on a rayClusterConfig change, adds appended worker groups, resubmits a changed serve config, and keeps an excluded head out of the serve Service", func(ctx context.Context) {
		ns := world.NewNamespace(ctx)
		world.WatchInvariants(ctx, ns)
		svc := builders.RayService(name, ns).Strategy(rayv1.None).Obj()
		svc.Spec.ExcludeHeadPodFromServeSvc = true
		Expect(k8s.Create(ctx, svc)).To(Succeed())
		blue := world.WaitServing(ctx, ns, name)
		Expect(world.RayService(ctx, ns, name).Status.NumServeEndpoints).To(BeNumerically("==", 1), "the worker only: the head is excluded")
		image := world.RayCluster(ctx, ns, blue).Spec.HeadGroupSpec.Template.Spec.Containers[0].Image
		pods := func() []string {
			var list corev1.PodList
			Expect(k8s.List(ctx, &list, client.InNamespace(ns), client.MatchingLabels{rayv1.ClusterLabelKey: blue})).To(Succeed())
			var uids []string
			for _, p := range list.Items {
				uids = append(uids, string(p.UID))
			}
			return uids
		}
		before := pods()

		By("appending a worker group: added to the running cluster")
		world.Update(ctx, ns, name, func(s *rayv1.RayService) {
			s.Spec.RayClusterSpec.WorkerGroupSpecs = append(s.Spec.RayClusterSpec.WorkerGroupSpecs, builders.WorkerGroup("extra", 1))
		})
		Eventually(func() int { return len(world.RayCluster(ctx, ns, blue).Spec.WorkerGroupSpecs) }).Should(Equal(2))
		Expect(world.ClusterNames(ctx, ns)()).To(ConsistOf(blue))
		Eventually(pods).Should(HaveLen(len(before) + 1))
		Expect(pods()).To(ContainElements(before), "the existing pods are kept")
		before = pods()

		By("changing the image: not applied, as in KubeRay")
		world.Update(ctx, ns, name, func(s *rayv1.RayService) { rstest.SetImage(s, "rayproject/ray:2.53.0") })
		Eventually(world.Events(ctx, ns, name)).Should(ContainSubstring("Normal ClusterSpecNotApplied"))
		Consistently(func() string {
			return world.RayCluster(ctx, ns, blue).Spec.HeadGroupSpec.Template.Spec.Containers[0].Image
		}, time.Second).Should(Equal(image))
		Expect(world.ClusterNames(ctx, ns)()).To(ConsistOf(blue))
		Expect(world.PendingName(ctx, ns, name)()).To(BeEmpty())
		Expect(pods()).To(ConsistOf(before), "no pod was recreated")
		Expect(world.RayCluster(ctx, ns, blue).Spec.WorkerGroupSpecs).To(HaveLen(2))
		Expect(world.Condition(ctx, ns, name, rayv1.RayServiceReady)()).To(Equal("True/NonZeroServeEndpoints"))

		world.Update(ctx, ns, name, func(s *rayv1.RayService) {
			s.Spec.ServeConfigV2 = builders.DefaultServeConfig + "  - name: veggie\n    route_prefix: /veggie\n    import_path: veggie.deployment_graph\n"
		})
		Eventually(func() []string {
			return world.Simulator(ns, blue).Submissions()[len(world.Simulator(ns, blue).Submissions())-1].Applications
		}).
			Should(ConsistOf("fruit", "veggie"))
		Eventually(func() map[string]rayv1.AppStatus {
			return world.RayService(ctx, ns, name).Status.ActiveServiceStatus.Applications
		}).
			Should(HaveKeyWithValue("veggie", HaveField("Status", rayv1.ApplicationStatusRunning)))
		Expect(world.ActiveName(ctx, ns, name)()).To(Equal(blue))
	})
})

var _ = Describe("Invalid specs", func() {
	It("creates nothing for a spec the webhook would reject, and says why", func(ctx context.Context) {
		ns := world.NewNamespace(ctx)
		bad := builders.RayService("bad", ns).ServeConfig("applications: [unclosed").Obj()
		Expect(k8s.Create(ctx, bad)).To(Succeed())
		Eventually(world.Condition(ctx, ns, "bad", rayv1.RayServiceReady)).Should(Equal("False/ValidationFailed"))
		Expect(world.ConditionMessage(ctx, ns, "bad", rayv1.RayServiceReady)).To(ContainSubstring("spec.serveConfigV2"))
		Eventually(world.Events(ctx, ns, "bad")).Should(ContainSubstring("Warning ValidationFailed"))
		Consistently(world.ClusterNames(ctx, ns), time.Second).Should(BeEmpty())

		By("fixing the spec")
		world.Update(ctx, ns, "bad", func(s *rayv1.RayService) { s.Spec.ServeConfigV2 = builders.DefaultServeConfig })
		world.WaitServing(ctx, ns, "bad")
	})
})
