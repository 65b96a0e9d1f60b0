package gateway

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/testenv/traefik"
	"github.com/raygate/raygate/test/builders"
	"github.com/raygate/raygate/test/integration/internal/rstest"
)

// sharedGatewayNamespace holds the Traefik Gateway RayServices attach to.
const sharedGatewayNamespace = "gw-shared"

var _ = Describe("a shared Traefik Gateway", func() {
	It("reports the real implementation's NotAllowedByListeners as RouteAccepted and moves no traffic", func(ctx context.Context) {
		shared := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: sharedGatewayNamespace}}
		if err := k8s.Create(ctx, shared); err != nil && !apierrors.IsAlreadyExists(err) {
			Expect(err).NotTo(HaveOccurred())
		}
		// No allowedRoutes: Same, so routes from other namespaces are refused.
		g := &gwv1.Gateway{
			ObjectMeta: metav1.ObjectMeta{Namespace: sharedGatewayNamespace, Name: "same-only"},
			Spec: gwv1.GatewaySpec{GatewayClassName: className, Listeners: []gwv1.Listener{{
				Name: "http", Protocol: gwv1.HTTPProtocolType, Port: gwv1.PortNumber(tr.Port),
			}}},
		}
		Expect(k8s.Create(ctx, g)).To(Succeed())
		DeferCleanup(func(ctx context.Context) { Expect(client.IgnoreNotFound(k8s.Delete(ctx, g))).To(Succeed()) })

		ns := rstest.NewNamespace(ctx, k8s, "gwshared-")
		const name = "fruit"
		svc := builders.RayService(name, ns).Incremental(100, 25, 2, className).DeletionDelay(2).Obj()
		// A hostname of its own, so once admitted the route never competes for the requests
		// other specs send to "/" on the same entry point.
		svc.Annotations = map[string]string{rayv1.SharedGatewayKey: sharedGatewayNamespace + "/" + g.Name, rayv1.RouteHostnamesKey: "fruit.shared.example"}
		DeferCleanup(func(ctx context.Context) { // runs after the RayService is gone
			rt := &gwv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name + "-httproute"}}
			Expect(client.IgnoreNotFound(k8s.Delete(ctx, rt))).To(Succeed())
		})
		retireRayService(ns, name)
		Expect(k8s.Create(ctx, svc)).To(Succeed())
		rstest.WaitServing(ctx, k8s, ns, name)

		Eventually(rstest.Condition(ctx, k8s, ns, name, "RouteAccepted"), 2*time.Minute).Should(Equal("False/NotAllowedByListeners"))
		rt := &gwv1.HTTPRoute{}
		Expect(k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: name + "-httproute"}, rt)).To(Succeed())
		Expect(rt.Status.Parents).NotTo(BeEmpty())
		Expect(string(rt.Status.Parents[0].ControllerName)).To(Equal(traefik.ControllerName))
		Expect(rstest.ConditionMessage(ctx, k8s, ns, name, "RouteAccepted")).To(ContainSubstring("Gateway " + sharedGatewayNamespace + "/same-only does not accept HTTPRoute " + name + "-httproute (NotAllowedByListeners"))

		rstest.Update(ctx, k8s, ns, name, func(s *rayv1.RayService) { rstest.SetImage(s, "rayproject/ray:2.53.0") })
		Eventually(rstest.PendingName(ctx, k8s, ns, name)).ShouldNot(BeEmpty())
		Consistently(func() int32 {
			return ptr.Deref(rstest.Get(ctx, k8s, ns, name).Status.PendingServiceStatus.TrafficRoutedPercent, 0)
		}, "6s", "200ms").Should(BeZero())

		By("the Gateway's owner admitting every namespace")
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(g), g)).To(Succeed())
		g.Spec.Listeners[0].AllowedRoutes = &gwv1.AllowedRoutes{Namespaces: &gwv1.RouteNamespaces{From: ptr.To(gwv1.NamespacesFromAll)}}
		Expect(k8s.Update(ctx, g)).To(Succeed())
		Eventually(rstest.Condition(ctx, k8s, ns, name, "RouteAccepted"), 2*time.Minute).Should(Equal("True/Accepted"))
	})
})
