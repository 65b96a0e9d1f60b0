package rayservice

import (
	"context"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/test/builders"
	"github.com/raygate/raygate/test/integration/internal/rstest"
	"github.com/raygate/raygate/test/integration/rayservice/internal/rsenv"
)

var _ = Describe("NewCluster (blue/green)", func() {
	const name = "fruit"

	It("serves from the first cluster, then switches to a new cluster once its applications run and deletes the old one after the delay", func(ctx context.Context) {
		ns := world.NewNamespace(ctx)
		checker := world.WatchInvariants(ctx, ns)
		Expect(k8s.Create(ctx, builders.RayService(name, ns).DeletionDelay(3).Obj())).To(Succeed())

		By("serving from the first cluster")
		blue := world.WaitServing(ctx, ns, name)
		st := world.RayService(ctx, ns, name).Status
		Expect(st.ActiveServiceStatus.Applications).To(HaveKeyWithValue("fruit", HaveField("Status", rayv1.ApplicationStatusRunning)))
		Expect(st.NumServeEndpoints).To(BeNumerically("==", 2), "the head and one worker")
		Expect(st.ServiceStatus).To(Equal(rayv1.Running))
		Expect(world.Condition(ctx, ns, name, rayv1.UpgradeInProgress)()).To(Equal("False/NoPendingCluster"))
		Expect(world.SelectorOf(ctx, ns, name+"-serve-svc")()).To(Equal(blue))
		Expect(world.SelectorOf(ctx, ns, name+"-head-svc")()).To(Equal(blue))
		firstConfig := world.Simulator(ns, blue).Submissions()
		Expect(firstConfig).To(HaveLen(1))
		rc := world.RayCluster(ctx, ns, blue)
		Expect(rc.Annotations).To(HaveKey(rayv1.ServeConfigHashKey))
		Expect(rc.Annotations).To(HaveKeyWithValue(rayv1.NumWorkerGroupsKey, "1"))
		Expect(rc.Labels).To(HaveKeyWithValue(rayv1.OriginatedFromCRDLabelKey, "RayService"))

		By("making no API write when reconciling the converged RayService")
		Eventually(func() int32 { return world.RayService(ctx, ns, name).Status.NumServeEndpoints }).Should(BeNumerically("==", 2))
		Eventually(world.Idle).Should(BeTrue())
		world.Manager.Writes.Reset()
		before := rsenv.ReconcileCount()
		world.Update(ctx, ns, name, func(s *rayv1.RayService) { s.Annotations = map[string]string{"touched": "yes"} })
		Eventually(func() bool { return rsenv.ReconcileCount() > before }).Should(BeTrue(), "touching an annotation must trigger a reconcile")
		Eventually(world.Idle).Should(BeTrue())
		// Only this namespace counts: other specs' old clusters may still be due for deletion.
		Expect(world.Manager.Writes.SnapshotIn(ns)).To(BeEmpty())

		By("changing the image and the serve config together")
		world.Update(ctx, ns, name, func(s *rayv1.RayService) {
			rstest.SetImage(s, "rayproject/ray:2.53.0")
			s.Spec.ServeConfigV2 = strings.Replace(builders.DefaultServeConfig, "num_replicas: 2", "num_replicas: 3", 1)
		})
		Eventually(world.PendingName(ctx, ns, name)).ShouldNot(BeEmpty())
		green := world.PendingName(ctx, ns, name)()
		Expect(world.Condition(ctx, ns, name, rayv1.UpgradeInProgress)()).To(HavePrefix("True/"))

		By("switching the Services, then promoting")
		Eventually(world.ActiveName(ctx, ns, name)).Should(Equal(green))
		Expect(world.SelectorOf(ctx, ns, name+"-serve-svc")()).To(Equal(green))
		Expect(world.SelectorOf(ctx, ns, name+"-head-svc")()).To(Equal(green))
		Eventually(world.Condition(ctx, ns, name, rayv1.UpgradeInProgress)).Should(Equal("False/NoPendingCluster"))
		Expect(world.Simulator(ns, blue).Submissions()).To(HaveLen(1), "the old cluster never got the new config")
		Expect(world.Simulator(ns, green).Submissions()[0].ConfigWithoutTargetCapacity()).To(ContainSubstring(`"num_replicas":3`))

		By("keeping the old cluster for the deletion delay, recorded on it")
		Eventually(world.DeleteAfterOf(ctx, ns, blue)).ShouldNot(BeEmpty())
		at, err := time.Parse(time.RFC3339, world.DeleteAfterOf(ctx, ns, blue)())
		Expect(err).NotTo(HaveOccurred())
		Expect(world.ClusterNames(ctx, ns)()).To(ContainElement(blue))
		Eventually(world.ClusterNames(ctx, ns)).ShouldNot(ContainElement(blue))
		Expect(time.Now()).To(BeTemporally(">=", at))
		Eventually(world.Events(ctx, ns, name)).Should(ContainSubstring("PromotedPendingCluster"))
		Expect(checker.Events()).NotTo(BeEmpty())
	})

	It("replaces the pending cluster when the spec changes while it is being prepared", func(ctx context.Context) {
		ns := world.NewNamespace(ctx)
		world.WatchInvariants(ctx, ns)
		Expect(k8s.Create(ctx, builders.RayService(name, ns).DeletionDelay(1).Obj())).To(Succeed())
		blue := world.WaitServing(ctx, ns, name)

		By("starting an upgrade whose pods never become ready")
		Expect(kubelet.SetBehavior(ctx, func(p *corev1.Pod) bool {
			return p.Namespace == ns && p.Spec.Containers[0].Image == "rayproject/ray:stuck"
		}, 1 /* NotReady */)).To(Succeed())
		world.Update(ctx, ns, name, func(s *rayv1.RayService) { rstest.SetImage(s, "rayproject/ray:stuck") })
		Eventually(world.PendingName(ctx, ns, name)).ShouldNot(BeEmpty())
		stuck := world.PendingName(ctx, ns, name)()
		Consistently(world.ActiveName(ctx, ns, name), time.Second).Should(Equal(blue))

		By("changing the spec again: a fresh pending cluster replaces it")
		world.Update(ctx, ns, name, func(s *rayv1.RayService) { rstest.SetImage(s, "rayproject/ray:2.54.0") })
		Eventually(world.ActiveName(ctx, ns, name)).ShouldNot(Equal(blue))
		Expect(world.ActiveName(ctx, ns, name)()).NotTo(Equal(stuck))
		Eventually(world.ClusterNames(ctx, ns)).Should(ConsistOf(world.ActiveName(ctx, ns, name)()))
		Eventually(world.Events(ctx, ns, name)).Should(ContainSubstring("replaced"))
	})

	It("drops the pending cluster when the spec goes back to the active one", func(ctx context.Context) {
		ns := world.NewNamespace(ctx)
		world.WatchInvariants(ctx, ns)
		Expect(k8s.Create(ctx, builders.RayService(name, ns).Obj())).To(Succeed())
		blue := world.WaitServing(ctx, ns, name)
		Expect(kubelet.SetBehavior(ctx, func(p *corev1.Pod) bool {
			return p.Namespace == ns && p.Spec.Containers[0].Image == "rayproject/ray:stuck"
		}, 1)).To(Succeed())
		world.Update(ctx, ns, name, func(s *rayv1.RayService) { rstest.SetImage(s, "rayproject/ray:stuck") })
		Eventually(world.PendingName(ctx, ns, name)).ShouldNot(BeEmpty())
		world.Update(ctx, ns, name, func(s *rayv1.RayService) { rstest.SetImage(s, builders.DefaultImage) })
		Eventually(world.PendingName(ctx, ns, name)).Should(BeEmpty())
		Eventually(world.ClusterNames(ctx, ns)).Should(ConsistOf(blue))
		Expect(world.ActiveName(ctx, ns, name)()).To(Equal(blue))
		Expect(world.Condition(ctx, ns, name, rayv1.RayServiceReady)()).To(Equal("True/NonZeroServeEndpoints"))
	})

	It("keeps a Gateway route left from the incremental strategy on the active cluster", func(ctx context.Context) {
		ns := world.NewNamespace(ctx)
		world.WatchInvariants(ctx, ns)
		Expect(k8s.Create(ctx, builders.RayService(name, ns).Incremental(100, 100, 1, rsenv.GatewayClass).DeletionDelay(1).Obj())).To(Succeed())
		blue := world.WaitServing(ctx, ns, name)
		Eventually(world.RouteWeightsOf(ctx, ns, name)).Should(Equal(map[string]int32{blue: 100}))

		world.Update(ctx, ns, name, func(s *rayv1.RayService) {
			s.Spec.UpgradeStrategy = &rayv1.RayServiceUpgradeStrategy{Type: ptr.To(rayv1.NewCluster)}
		})
		world.Update(ctx, ns, name, func(s *rayv1.RayService) { rstest.SetImage(s, "rayproject/ray:2.53.0") })
		Eventually(world.ActiveName(ctx, ns, name)).ShouldNot(Equal(blue))
		green := world.ActiveName(ctx, ns, name)()
		Eventually(world.RouteWeightsOf(ctx, ns, name)).Should(Equal(map[string]int32{green: 100}))
		Eventually(world.ClusterNames(ctx, ns)).Should(ConsistOf(green))
	})
})
