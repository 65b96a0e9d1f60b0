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
)

var _ = Describe("NewCluster (blue/green)", func() {
	const name = "fruit"

	It("serves from the first cluster, then switches to a new cluster once its applications run and deletes the old one after the delay", func(ctx context.Context) {
		ns := newNamespace(ctx)
		checker := watchInvariants(ctx, ns)
		Expect(k8s.Create(ctx, builders.RayService(name, ns).DeletionDelay(3).Obj())).To(Succeed())

		By("serving from the first cluster")
		blue := waitServing(ctx, ns, name)
		st := getService(ctx, ns, name).Status
		Expect(st.ActiveServiceStatus.Applications).To(HaveKeyWithValue("fruit", HaveField("Status", rayv1.ApplicationStatusRunning)))
		Expect(st.NumServeEndpoints).To(BeNumerically("==", 2), "the head and one worker")
		Expect(st.ServiceStatus).To(Equal(rayv1.Running))
		Expect(condition(ctx, ns, name, rayv1.UpgradeInProgress)()).To(Equal("False/NoPendingCluster"))
		Expect(selectorOf(ctx, ns, name+"-serve-svc")()).To(Equal(blue))
		Expect(selectorOf(ctx, ns, name+"-head-svc")()).To(Equal(blue))
		firstConfig := simulatorOf(ns, blue).Submissions()
		Expect(firstConfig).To(HaveLen(1))
		rc := getCluster(ctx, ns, blue)
		Expect(rc.Annotations).To(HaveKey(rayv1.ServeConfigHashKey))
		Expect(rc.Annotations).To(HaveKeyWithValue(rayv1.NumWorkerGroupsKey, "1"))
		Expect(rc.Labels).To(HaveKeyWithValue(rayv1.OriginatedFromCRDLabelKey, "RayService"))

		By("making no API write when reconciling the converged RayService")
		Eventually(func() int32 { return getService(ctx, ns, name).Status.NumServeEndpoints }).Should(BeNumerically("==", 2))
		Eventually(idle).Should(BeTrue())
		mgr.Writes.Reset()
		before := reconcileCount()
		update(ctx, ns, name, func(s *rayv1.RayService) { s.Annotations = map[string]string{"touched": "yes"} })
		Eventually(func() bool { return reconcileCount() > before }).Should(BeTrue(), "touching an annotation must trigger a reconcile")
		Eventually(idle).Should(BeTrue())
		// Only this namespace counts: other specs' old clusters may still be due for deletion.
		Expect(mgr.Writes.SnapshotIn(ns)).To(BeEmpty())

		By("changing the image and the serve config together")
		update(ctx, ns, name, func(s *rayv1.RayService) {
			setImage(s, "rayproject/ray:2.53.0")
			s.Spec.ServeConfigV2 = strings.Replace(builders.DefaultServeConfig, "num_replicas: 2", "num_replicas: 3", 1)
		})
		Eventually(pendingName(ctx, ns, name)).ShouldNot(BeEmpty())
		green := pendingName(ctx, ns, name)()
		Expect(condition(ctx, ns, name, rayv1.UpgradeInProgress)()).To(HavePrefix("True/"))

		By("switching the Services, then promoting")
		Eventually(activeName(ctx, ns, name)).Should(Equal(green))
		Expect(selectorOf(ctx, ns, name+"-serve-svc")()).To(Equal(green))
		Expect(selectorOf(ctx, ns, name+"-head-svc")()).To(Equal(green))
		Eventually(condition(ctx, ns, name, rayv1.UpgradeInProgress)).Should(Equal("False/NoPendingCluster"))
		Expect(simulatorOf(ns, blue).Submissions()).To(HaveLen(1), "the old cluster never got the new config")
		Expect(simulatorOf(ns, green).Submissions()[0].ConfigWithoutTargetCapacity()).To(ContainSubstring(`"num_replicas":3`))

		By("keeping the old cluster for the deletion delay, recorded on it")
		Eventually(deleteAfterOf(ctx, ns, blue)).ShouldNot(BeEmpty())
		at, err := time.Parse(time.RFC3339, deleteAfterOf(ctx, ns, blue)())
		Expect(err).NotTo(HaveOccurred())
		Expect(clusterNames(ctx, ns)()).To(ContainElement(blue))
		Eventually(clusterNames(ctx, ns)).ShouldNot(ContainElement(blue))
		Expect(time.Now()).To(BeTemporally(">=", at))
		Eventually(events(ctx, ns, name)).Should(ContainSubstring("PromotedPendingCluster"))
		Expect(checker.Events()).NotTo(BeEmpty())
	})

	It("replaces the pending cluster when the spec changes while it is being prepared", func(ctx context.Context) {
		ns := newNamespace(ctx)
		watchInvariants(ctx, ns)
		Expect(k8s.Create(ctx, builders.RayService(name, ns).DeletionDelay(1).Obj())).To(Succeed())
		blue := waitServing(ctx, ns, name)

		By("starting an upgrade whose pods never become ready")
		Expect(kubelet.SetBehavior(ctx, func(p *corev1.Pod) bool {
			return p.Namespace == ns && p.Spec.Containers[0].Image == "rayproject/ray:stuck"
		}, 1 /* NotReady */)).To(Succeed())
		update(ctx, ns, name, func(s *rayv1.RayService) { setImage(s, "rayproject/ray:stuck") })
		Eventually(pendingName(ctx, ns, name)).ShouldNot(BeEmpty())
		stuck := pendingName(ctx, ns, name)()
		Consistently(activeName(ctx, ns, name), time.Second).Should(Equal(blue))

		By("changing the spec again: a fresh pending cluster replaces it")
		update(ctx, ns, name, func(s *rayv1.RayService) { setImage(s, "rayproject/ray:2.54.0") })
		Eventually(activeName(ctx, ns, name)).ShouldNot(Equal(blue))
		Expect(activeName(ctx, ns, name)()).NotTo(Equal(stuck))
		Eventually(clusterNames(ctx, ns)).Should(ConsistOf(activeName(ctx, ns, name)()))
		Eventually(events(ctx, ns, name)).Should(ContainSubstring("replaced"))
	})

	It("drops the pending cluster when the spec goes back to the active one", func(ctx context.Context) {
		ns := newNamespace(ctx)
		watchInvariants(ctx, ns)
		Expect(k8s.Create(ctx, builders.RayService(name, ns).Obj())).To(Succeed())
		blue := waitServing(ctx, ns, name)
		Expect(kubelet.SetBehavior(ctx, func(p *corev1.Pod) bool {
			return p.Namespace == ns && p.Spec.Containers[0].Image == "rayproject/ray:stuck"
		}, 1)).To(Succeed())
		update(ctx, ns, name, func(s *rayv1.RayService) { setImage(s, "rayproject/ray:stuck") })
		Eventually(pendingName(ctx, ns, name)).ShouldNot(BeEmpty())
		update(ctx, ns, name, func(s *rayv1.RayService) { setImage(s, builders.DefaultImage) })
		Eventually(pendingName(ctx, ns, name)).Should(BeEmpty())
		Eventually(clusterNames(ctx, ns)).Should(ConsistOf(blue))
		Expect(activeName(ctx, ns, name)()).To(Equal(blue))
		Expect(condition(ctx, ns, name, rayv1.RayServiceReady)()).To(Equal("True/NonZeroServeEndpoints"))
	})

	It("keeps a Gateway route left from the incremental strategy on the active cluster", func(ctx context.Context) {
		ns := newNamespace(ctx)
		watchInvariants(ctx, ns)
		Expect(k8s.Create(ctx, builders.RayService(name, ns).Incremental(100, 100, 1, gatewayClass).DeletionDelay(1).Obj())).To(Succeed())
		blue := waitServing(ctx, ns, name)
		Eventually(routeWeightsOf(ctx, ns, name)).Should(Equal(map[string]int32{blue: 100}))

		update(ctx, ns, name, func(s *rayv1.RayService) {
			s.Spec.UpgradeStrategy = &rayv1.RayServiceUpgradeStrategy{Type: ptr.To(rayv1.NewCluster)}
		})
		update(ctx, ns, name, func(s *rayv1.RayService) { setImage(s, "rayproject/ray:2.53.0") })
		Eventually(activeName(ctx, ns, name)).ShouldNot(Equal(blue))
		green := activeName(ctx, ns, name)()
		Eventually(routeWeightsOf(ctx, ns, name)).Should(Equal(map[string]int32{green: 100}))
		Eventually(clusterNames(ctx, ns)).Should(ConsistOf(green))
	})
})
