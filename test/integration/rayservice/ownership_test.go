package rayservice

import (
	"context"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/test/builders"
)

// raygate updates or deletes only what a RayService controls, by UID.
var _ = Describe("Objects with a RayService's names", func() {
	It("leaves a foreign serve Service untouched, says so in a condition and one Warning event, and serves once it is gone", func(ctx context.Context) {
		ns := world.NewNamespace(ctx)
		foreign := &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: "fo-serve-svc", Namespace: ns, Labels: map[string]string{"app": "gitops"}},
			Spec:       corev1.ServiceSpec{Selector: map[string]string{"app": "gitops"}, Ports: []corev1.ServicePort{{Name: "http", Port: 80}}},
		}
		Expect(k8s.Create(ctx, foreign)).To(Succeed())
		Expect(k8s.Create(ctx, builders.RayService("fo", ns).Obj())).To(Succeed())

		Eventually(world.Condition(ctx, ns, "fo", rayv1.RayServiceOwnershipConflict)).Should(Equal("True/" + rayv1.ForeignObject))
		Expect(world.ConditionMessage(ctx, ns, "fo", rayv1.RayServiceOwnershipConflict)).To(ContainSubstring(
			"Service fo-serve-svc exists and is not controlled by this RayService (it has no controller)"))
		Expect(world.Condition(ctx, ns, "fo", rayv1.RayServiceReady)()).To(Equal("False/" + rayv1.RayServiceInitializing))
		Eventually(world.Events(ctx, ns, "fo")).Should(ContainSubstring("Warning OwnershipConflict: Service fo-serve-svc exists"))
		Consistently(func() int { return strings.Count(world.Events(ctx, ns, "fo")(), "Warning OwnershipConflict") }, 3*time.Second).Should(Equal(1))
		now := &corev1.Service{}
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(foreign), now)).To(Succeed())
		Expect(now.ResourceVersion).To(Equal(foreign.ResourceVersion), "the foreign Service was written")

		By("the foreign Service goes: the RayService serves, the condition goes")
		Expect(k8s.Delete(ctx, foreign)).To(Succeed())
		Eventually(world.Condition(ctx, ns, "fo", rayv1.RayServiceReady), time.Minute).Should(Equal("True/NonZeroServeEndpoints"))
		Expect(world.Condition(ctx, ns, "fo", rayv1.RayServiceOwnershipConflict)()).To(BeEmpty())
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(foreign), now)).To(Succeed())
		Expect(metav1.GetControllerOf(now).Name).To(Equal("fo"))
	})

	It("gives a Service it controls but an older raygate made (without the cache's label) the label back", func(ctx context.Context) {
		ns := world.NewNamespace(ctx)
		Expect(k8s.Create(ctx, builders.RayService("old", ns).Obj())).To(Succeed())
		world.WaitServing(ctx, ns, "old")
		svc := &corev1.Service{}
		key := types.NamespacedName{Namespace: ns, Name: "old-serve-svc"}
		Expect(k8s.Get(ctx, key, svc)).To(Succeed())
		uid := svc.UID
		Expect(k8s.Patch(ctx, svc, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"labels":{"app.kubernetes.io/created-by":null}}}`)))).To(Succeed())

		Eventually(func() string {
			Expect(k8s.Get(ctx, key, svc)).To(Succeed())
			return svc.Labels[rayv1.KubernetesCreatedByLabelKey]
		}).Should(Equal(rayv1.ComponentName))
		Expect(svc.UID).To(Equal(uid), "relabelled in place, not recreated")
		Expect(world.Condition(ctx, ns, "old", rayv1.RayServiceOwnershipConflict)()).To(BeEmpty())
	})

	It("refuses a stored serve Service override that could point outside the cluster (ExternalName, externalIPs)", func(ctx context.Context) {
		ns := world.NewNamespace(ctx)
		svc := builders.RayService("ext", ns).Obj()
		svc.Spec.ServeService = &corev1.Service{Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "dashboard.other-tenant.svc.cluster.local"}}
		Expect(k8s.Create(ctx, svc)).To(Succeed())
		Eventually(world.Condition(ctx, ns, "ext", rayv1.RayServiceReady)).Should(Equal("False/" + rayv1.ValidationFailed))
		Expect(world.ConditionMessage(ctx, ns, "ext", rayv1.RayServiceReady)).To(ContainSubstring("ExternalName"))
		Consistently(func() bool {
			err := k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: "ext-serve-svc"}, &corev1.Service{})
			return apierrors.IsNotFound(err)
		}, 2*time.Second).Should(BeTrue())
		Expect(world.ClusterNames(ctx, ns)()).To(BeEmpty())
	})

	It("calls only the head pod the cluster controls, at its IP", func(ctx context.Context) {
		ns := world.NewNamespace(ctx)
		Expect(k8s.Create(ctx, builders.RayService("addr", ns).Obj())).To(Succeed())
		active := world.WaitServing(ctx, ns, "addr")
		var pods corev1.PodList
		Expect(k8s.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels{rayv1.ClusterLabelKey: active, rayv1.NodeTypeLabelKey: "head"})).To(Succeed())
		Expect(pods.Items).To(HaveLen(1))
		head := pods.Items[0]
		Expect(metav1.IsControlledBy(&head, world.RayCluster(ctx, ns, active))).To(BeTrue())
		h, ok := dashboards.LastHead(types.NamespacedName{Namespace: ns, Name: active})
		Expect(ok).To(BeTrue())
		Expect(h.Pod).To(Equal(head.UID))
		Expect(h.PodIP).To(Equal(head.Status.PodIP))
		Expect(h.Port).To(Equal(int32(8265)))
	})
})
