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
		ns := newNamespace(ctx)
		Expect(k8s.Create(ctx, builders.RayService(name, ns).Obj())).To(Succeed())
		first := waitServing(ctx, ns, name)
		owned := []string{rayspec.ServiceHeadServiceName(name), rayspec.ServeServiceName(name)}
		Expect(servicesLeft(ctx, ns, owned...)()).To(ConsistOf(owned))

		By("suspending")
		update(ctx, ns, name, func(s *rayv1.RayService) { s.Spec.Suspend = true })
		Eventually(condition(ctx, ns, name, rayv1.RayServiceSuspended)).Should(Equal("True/SuspendComplete"))
		Expect(clusterNames(ctx, ns)()).To(BeEmpty())
		Expect(servicesLeft(ctx, ns, owned...)()).To(BeEmpty())
		svc := getService(ctx, ns, name)
		Expect(svc.Status.ObservedGeneration).To(Equal(svc.Generation))
		Expect(svc.Status.ActiveServiceStatus.RayClusterName).To(BeEmpty())
		Expect(svc.Status.NumServeEndpoints).To(BeZero())
		for _, c := range []rayv1.RayServiceConditionType{rayv1.RayServiceSuspending, rayv1.RayServiceReady, rayv1.UpgradeInProgress} {
			Expect(condition(ctx, ns, name, c)()).To(Equal("False/SuspendComplete"), string(c))
		}
		Eventually(events(ctx, ns, name)).Should(And(
			ContainSubstring("Normal Suspending: spec.suspend is true"),
			ContainSubstring("Normal Suspended: every RayCluster and Service of the RayService was deleted")))

		By("changing the spec while suspended: observed, nothing created")
		update(ctx, ns, name, func(s *rayv1.RayService) {
			s.Annotations = map[string]string{"x": "y"}
			s.Spec.ExcludeHeadPodFromServeSvc = true
		})
		Eventually(func() bool { s := getService(ctx, ns, name); return s.Status.ObservedGeneration == s.Generation }).Should(BeTrue())
		Consistently(clusterNames(ctx, ns), time.Second).Should(BeEmpty())

		By("resuming")
		update(ctx, ns, name, func(s *rayv1.RayService) { s.Spec.Suspend = false })
		second := waitServing(ctx, ns, name)
		Expect(second).NotTo(Equal(first))
		Expect(condition(ctx, ns, name, rayv1.RayServiceSuspended)()).To(Equal("False/RayServiceResumed"))
		Expect(selectorOf(ctx, ns, rayspec.ServeServiceName(name))()).To(Equal(second))
		Eventually(events(ctx, ns, name)).Should(ContainSubstring("Normal Resumed"))
	})

	It("finishes a suspension that started even when spec.suspend turns false meanwhile", func(ctx context.Context) {
		ns := newNamespace(ctx)
		Expect(k8s.Create(ctx, builders.RayService(name, ns).Obj())).To(Succeed())
		first := waitServing(ctx, ns, name)
		const blocker = "test.raygate.ray.io/block"
		rc := getCluster(ctx, ns, first)
		rc.Finalizers = append(rc.Finalizers, blocker)
		Expect(k8s.Update(ctx, rc)).To(Succeed())

		update(ctx, ns, name, func(s *rayv1.RayService) { s.Spec.Suspend = true })
		Eventually(condition(ctx, ns, name, rayv1.RayServiceSuspending)).Should(Equal("True/SuspendInProgress"))
		update(ctx, ns, name, func(s *rayv1.RayService) { s.Spec.Suspend = false })
		Consistently(condition(ctx, ns, name, rayv1.RayServiceSuspending), 2*time.Second).Should(Equal("True/SuspendInProgress"))
		Expect(clusterNames(ctx, ns)()).To(BeEmpty(), "the cluster is being deleted and no new one is made")

		By("letting the deletion finish")
		Eventually(func() error {
			rc := getCluster(ctx, ns, first)
			rc.Finalizers = nil
			return k8s.Update(ctx, rc)
		}).Should(Succeed())
		second := waitServing(ctx, ns, name)
		Expect(second).NotTo(Equal(first))
		Expect(condition(ctx, ns, name, rayv1.RayServiceSuspended)()).To(Equal("False/RayServiceResumed"))
	})

	// Run as the chart's ServiceAccount: the deletions need delete on gateways and httproutes
	// in the generated ClusterRole, and a refused one fails the spec (suite.Start).
	It("deletes the Gateway and HTTPRoute of an incremental RayService and reports Suspended", func(ctx context.Context) {
		ns := newNamespace(ctx)
		Expect(k8s.Create(ctx, builders.RayService(name, ns).Incremental(20, 5, 1, gatewayClass).Obj())).To(Succeed())
		waitServing(ctx, ns, name)
		gateway := types.NamespacedName{Namespace: ns, Name: rayspec.GatewayName(name)}
		httpRoute := types.NamespacedName{Namespace: ns, Name: rayspec.HTTPRouteName(name)}
		Eventually(func() error { return k8s.Get(ctx, gateway, &gwv1.Gateway{}) }).Should(Succeed())
		Eventually(func() error { return k8s.Get(ctx, httpRoute, &gwv1.HTTPRoute{}) }).Should(Succeed())

		update(ctx, ns, name, func(s *rayv1.RayService) { s.Spec.Suspend = true })
		Eventually(condition(ctx, ns, name, rayv1.RayServiceSuspended)).Should(Equal("True/SuspendComplete"))
		Expect(apierrors.IsNotFound(k8s.Get(ctx, gateway, &gwv1.Gateway{}))).To(BeTrue(), "the Gateway is deleted")
		Expect(apierrors.IsNotFound(k8s.Get(ctx, httpRoute, &gwv1.HTTPRoute{}))).To(BeTrue(), "the HTTPRoute is deleted")
		Expect(clusterNames(ctx, ns)()).To(BeEmpty())
		Expect(events(ctx, ns, name)()).NotTo(ContainSubstring("Warning"))
	})

	It("creates nothing for a RayService created suspended", func(ctx context.Context) {
		ns := newNamespace(ctx)
		svc := builders.RayService(name, ns).Obj()
		svc.Spec.Suspend = true
		Expect(k8s.Create(ctx, svc)).To(Succeed())
		Eventually(condition(ctx, ns, name, rayv1.RayServiceSuspended)).Should(Equal("True/SuspendComplete"))
		Consistently(clusterNames(ctx, ns), time.Second).Should(BeEmpty())
		Expect(servicesLeft(ctx, ns, rayspec.ServiceHeadServiceName(name), rayspec.ServeServiceName(name))()).To(BeEmpty())

		update(ctx, ns, name, func(s *rayv1.RayService) { s.Spec.Suspend = false })
		waitServing(ctx, ns, name)
	})
})

var _ = Describe("spec.managedBy", func() {
	It("leaves a RayService managed by MultiKueue alone and refuses unknown managers", func(ctx context.Context) {
		ns := newNamespace(ctx)
		svc := builders.RayService("remote", ns).Obj()
		svc.Spec.ManagedBy = ptr.To(validation.MultiKueueManager)
		Expect(k8s.Create(ctx, svc)).To(Succeed())
		Consistently(func() rayv1.RayServiceStatuses { return getService(ctx, ns, "remote").Status }, 2*time.Second).Should(BeZero())
		Expect(clusterNames(ctx, ns)()).To(BeEmpty())

		By("refusing a manager that is neither raygate (KubeRay's name) nor MultiKueue")
		bad := builders.RayService("other", ns).Obj()
		bad.Spec.ManagedBy = ptr.To("example.com/operator")
		Expect(k8s.Create(ctx, bad)).To(MatchError(ContainSubstring("the managedBy field value must be either 'ray.io/kuberay-operator' or 'kueue.x-k8s.io/multikueue'")))

		By("refusing to change it")
		mine := builders.RayService("mine", ns).Obj()
		mine.Spec.ManagedBy = ptr.To("ray.io/kuberay-operator")
		Expect(k8s.Create(ctx, mine)).To(Succeed())
		waitServing(ctx, ns, "mine")
		mine = getService(ctx, ns, "mine")
		mine.Spec.ManagedBy = ptr.To(validation.MultiKueueManager)
		Expect(k8s.Update(ctx, mine)).To(MatchError(ContainSubstring("the managedBy field is immutable")))
	})
})
