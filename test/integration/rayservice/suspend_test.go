package rayservice

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/rayspec"
	"github.com/raygate/raygate/internal/validation"
	"github.com/raygate/raygate/test/builders"
	"github.com/raygate/raygate/test/integration/rayservice/internal/rsenv"
)

var _ = Describe("spec.suspend", func() {
	const name = "sleepy"

	// servicesLeft lists which of the given Services still exist.
	servicesLeft := func(ctx context.Context, ns string, names ...string) func() []string {
		return func() []string {
			var left []string
			for _, n := range names {
				err := k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: n}, &corev1.Service{})
				if !apierrors.IsNotFound(err) {
					left = append(left, n)
				}
			}
			return left
		}
	}

	It("deletes the clusters and Services, reports Suspended, and serves again from a new cluster on resume", func(ctx context.Context) {
		ns := world.NewNamespace(ctx)
		Expect(k8s.Create(ctx, builders.RayService(name, ns).Obj())).To(Succeed())
		first := world.WaitServing(ctx, ns, name)
		owned := []string{rayspec.ServiceHeadServiceName(name), rayspec.ServeServiceName(name)}
		Expect(servicesLeft(ctx, ns, owned...)()).To(ConsistOf(owned))

		By("suspending")
		world.Update(ctx, ns, name, func(s *rayv1.RayService) { s.Spec.Suspend = true })
		Eventually(world.Condition(ctx, ns, name, rayv1.RayServiceSuspended)).Should(Equal("True/SuspendComplete"))
		Expect(world.ClusterNames(ctx, ns)()).To(BeEmpty())
		Expect(servicesLeft(ctx, ns, owned...)()).To(BeEmpty())
		svc := world.RayService(ctx, ns, name)
		Expect(svc.Status.ObservedGeneration).To(Equal(svc.Generation))
		Expect(svc.Status.ActiveServiceStatus.RayClusterName).To(BeEmpty())
		Expect(svc.Status.NumServeEndpoints).To(BeZero())
		for _, c := range []rayv1.RayServiceConditionType{rayv1.RayServiceSuspending, rayv1.RayServiceReady, rayv1.UpgradeInProgress} {
			Expect(world.Condition(ctx, ns, name, c)()).To(Equal("False/SuspendComplete"), string(c))
		}
		Eventually(world.Events(ctx, ns, name)).Should(And(
			ContainSubstring("Normal Suspending: spec.suspend is true"),
			ContainSubstring("Normal Suspended: every RayCluster and Service of the RayService was deleted")))

		By("changing the spec while suspended: observed, nothing created")
		world.Update(ctx, ns, name, func(s *rayv1.RayService) {
			s.Annotations = map[string]string{"x": "y"}
			s.Spec.ExcludeHeadPodFromServeSvc = true
		})
		Eventually(func() bool { s := world.RayService(ctx, ns, name); return s.Status.ObservedGeneration == s.Generation }).Should(BeTrue())
		Consistently(world.ClusterNames(ctx, ns), time.Second).Should(BeEmpty())

		By("resuming")
		world.Update(ctx, ns, name, func(s *rayv1.RayService) { s.Spec.Suspend = false })
		second := world.WaitServing(ctx, ns, name)
		Expect(second).NotTo(Equal(first))
		Expect(world.Condition(ctx, ns, name, rayv1.RayServiceSuspended)()).To(Equal("False/RayServiceResumed"))
		Expect(world.SelectorOf(ctx, ns, rayspec.ServeServiceName(name))()).To(Equal(second))
		Eventually(world.Events(ctx, ns, name)).Should(ContainSubstring("Normal Resumed"))
	})

	It("finishes a suspension that started even when spec.suspend turns false meanwhile", func(ctx context.Context) {
		ns := world.NewNamespace(ctx)
		Expect(k8s.Create(ctx, builders.RayService(name, ns).Obj())).To(Succeed())
		first := world.WaitServing(ctx, ns, name)
		const blocker = "test.raygate.ray.io/block"
		rc := world.RayCluster(ctx, ns, first)
		rc.Finalizers = append(rc.Finalizers, blocker)
		Expect(k8s.Update(ctx, rc)).To(Succeed())

		world.Update(ctx, ns, name, func(s *rayv1.RayService) { s.Spec.Suspend = true })
		Eventually(world.Condition(ctx, ns, name, rayv1.RayServiceSuspending)).Should(Equal("True/SuspendInProgress"))
		world.Update(ctx, ns, name, func(s *rayv1.RayService) { s.Spec.Suspend = false })
		Consistently(world.Condition(ctx, ns, name, rayv1.RayServiceSuspending), 2*time.Second).Should(Equal("True/SuspendInProgress"))
		Expect(world.ClusterNames(ctx, ns)()).To(BeEmpty(), "the cluster is being deleted and no new one is made")

		By("letting the deletion finish")
		Eventually(func() error {
			rc := world.RayCluster(ctx, ns, first)
			rc.Finalizers = nil
			return k8s.Update(ctx, rc)
		}).Should(Succeed())
		second := world.WaitServing(ctx, ns, name)
		Expect(second).NotTo(Equal(first))
		Expect(world.Condition(ctx, ns, name, rayv1.RayServiceSuspended)()).To(Equal("False/RayServiceResumed"))
	})

	// Run as the chart's ServiceAccount: the deletions need delete on gateways and httproutes
	// in the generated ClusterRole, and a refused one fails the spec (suite.Start).
	It("deletes the Gateway and HTTPRoute of an incremental RayService and reports Suspended", func(ctx context.Context) {
		ns := world.NewNamespace(ctx)
		Expect(k8s.Create(ctx, builders.RayService(name, ns).Incremental(20, 5, 1, rsenv.GatewayClass).Obj())).To(Succeed())
		world.WaitServing(ctx, ns, name)
		gateway := types.NamespacedName{Namespace: ns, Name: rayspec.GatewayName(name)}
		httpRoute := types.NamespacedName{Namespace: ns, Name: rayspec.HTTPRouteName(name)}
		Eventually(func() error { return k8s.Get(ctx, gateway, &gwv1.Gateway{}) }).Should(Succeed())
		Eventually(func() error { return k8s.Get(ctx, httpRoute, &gwv1.HTTPRoute{}) }).Should(Succeed())

		world.Update(ctx, ns, name, func(s *rayv1.RayService) { s.Spec.Suspend = true })
		Eventually(world.Condition(ctx, ns, name, rayv1.RayServiceSuspended)).Should(Equal("True/SuspendComplete"))
		Expect(apierrors.IsNotFound(k8s.Get(ctx, gateway, &gwv1.Gateway{}))).To(BeTrue(), "the Gateway is deleted")
		Expect(apierrors.IsNotFound(k8s.Get(ctx, httpRoute, &gwv1.HTTPRoute{}))).To(BeTrue(), "the HTTPRoute is deleted")
		Expect(world.ClusterNames(ctx, ns)()).To(BeEmpty())
		Expect(world.Events(ctx, ns, name)()).NotTo(ContainSubstring("Warning"))
	})

	It("creates nothing for a RayService created suspended", func(ctx context.Context) {
		ns := world.NewNamespace(ctx)
		svc := builders.RayService(name, ns).Obj()
		svc.Spec.Suspend = true
		Expect(k8s.Create(ctx, svc)).To(Succeed())
		Eventually(world.Condition(ctx, ns, name, rayv1.RayServiceSuspended)).Should(Equal("True/SuspendComplete"))
		Consistently(world.ClusterNames(ctx, ns), time.Second).Should(BeEmpty())
		Expect(servicesLeft(ctx, ns, rayspec.ServiceHeadServiceName(name), rayspec.ServeServiceName(name))()).To(BeEmpty())

		world.Update(ctx, ns, name, func(s *rayv1.RayService) { s.Spec.Suspend = false })
		world.WaitServing(ctx, ns, name)
	})
})

var _ = Describe("spec.managedBy", func() {
	It("leaves a RayService managed by MultiKueue alone and refuses unknown managers", func(ctx context.Context) {
		ns := world.NewNamespace(ctx)
		svc := builders.RayService("remote", ns).Obj()
		svc.Spec.ManagedBy = ptr.To(validation.MultiKueueManager)
		Expect(k8s.Create(ctx, svc)).To(Succeed())
		Consistently(func() rayv1.RayServiceStatuses { return world.RayService(ctx, ns, "remote").Status }, 2*time.Second).Should(BeZero())
		Expect(world.ClusterNames(ctx, ns)()).To(BeEmpty())

		By("refusing a manager that is neither raygate (KubeRay's name) nor MultiKueue")
		bad := builders.RayService("other", ns).Obj()
		bad.Spec.ManagedBy = ptr.To("example.com/operator")
		Expect(k8s.Create(ctx, bad)).To(MatchError(ContainSubstring("the managedBy field value must be either 'ray.io/kuberay-operator' or 'kueue.x-k8s.io/multikueue'")))

		By("refusing to change it")
		mine := builders.RayService("mine", ns).Obj()
		mine.Spec.ManagedBy = ptr.To("ray.io/kuberay-operator")
		Expect(k8s.Create(ctx, mine)).To(Succeed())
		world.WaitServing(ctx, ns, "mine")
		mine = world.RayService(ctx, ns, "mine")
		mine.Spec.ManagedBy = ptr.To(validation.MultiKueueManager)
		Expect(k8s.Update(ctx, mine)).To(MatchError(ContainSubstring("the managedBy field is immutable")))
	})
})
