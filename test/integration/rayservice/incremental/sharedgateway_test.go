package incremental

import (
	"context"
	"maps"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/testenv/invariants"
	"github.com/raygate/raygate/test/builders"
	"github.com/raygate/raygate/test/integration/internal/rstest"
	"github.com/raygate/raygate/test/integration/rayservice/internal/rsenv"
)

// sharedGatewayNamespace holds the Gateways the suite's operator allows RayServices to
// attach to (--allowed-shared-gateways).
const sharedGatewayNamespace = "rs-shared-gateways"

// sharedGateway creates a Gateway of the fake class in sharedGatewayNamespace and waits
// until the gateway controller programmed it.
func sharedGateway(ctx context.Context, name string, allowed *gwv1.AllowedRoutes) *gwv1.Gateway {
	GinkgoHelper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: sharedGatewayNamespace}}
	if err := k8s.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		Expect(err).NotTo(HaveOccurred())
	}
	g := &gwv1.Gateway{
		ObjectMeta: metav1.ObjectMeta{Namespace: sharedGatewayNamespace, Name: name},
		Spec: gwv1.GatewaySpec{GatewayClassName: rsenv.GatewayClass, Listeners: []gwv1.Listener{{
			Name: "web", Protocol: gwv1.HTTPProtocolType, Port: 80, AllowedRoutes: allowed,
		}}},
	}
	Expect(k8s.Create(ctx, g)).To(Succeed())
	DeferCleanup(func(ctx context.Context) { Expect(client.IgnoreNotFound(k8s.Delete(ctx, g))).To(Succeed()) })
	Eventually(func() bool {
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(g), g)).To(Succeed())
		return meta.IsStatusConditionTrue(g.Status.Conditions, string(gwv1.GatewayConditionProgrammed))
	}).Should(BeTrue())
	return g
}

// attached is an incremental RayService on the shared Gateway whose head exposes Serve's
// gRPC port.
func attached(name, ns, gateway string) *rayv1.RayService {
	svc := builders.RayService(name, ns).Incremental(50, 25, 1, rsenv.GatewayClass).DeletionDelay(2).Obj()
	svc.Annotations = map[string]string{
		rayv1.SharedGatewayKey:   sharedGatewayNamespace + "/" + gateway,
		rayv1.RouteHostnamesKey:  "fruit.example.com",
		rayv1.RoutePathPrefixKey: "/fruit",
	}
	head := &svc.Spec.RayClusterSpec.HeadGroupSpec.Template.Spec.Containers[0]
	head.Ports = append(head.Ports, corev1.ContainerPort{Name: "serve-grpc", ContainerPort: 9000})
	return svc
}

func grpcRoute(ctx context.Context, ns, svc string) *gwv1.GRPCRoute {
	rt := &gwv1.GRPCRoute{}
	Expect(k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: svc + "-grpcroute"}, rt)).To(Succeed())
	return rt
}

// grpcSteps are the cluster's successive weights on the GRPCRoute, as observed.
func grpcSteps(c *invariants.Checker, cluster string) []int32 {
	var out []int32
	for _, w := range c.GRPCRouteWeights() {
		if v, ok := w[cluster]; ok && (len(out) == 0 || out[len(out)-1] != v) {
			out = append(out, v)
		}
	}
	return out
}

// gatewaysIn lists the Gateways in a namespace.
func gatewaysIn(ctx context.Context, ns string) func() []string {
	return func() []string {
		var list gwv1.GatewayList
		Expect(k8s.List(ctx, &list, client.InNamespace(ns))).To(Succeed())
		var names []string
		for _, g := range list.Items {
			names = append(names, g.Name)
		}
		return names
	}
}

var _ = Describe("shared Gateway and GRPCRoute", func() {
	const name = "fruit"

	It("attaches both routes to a Gateway in another namespace; the upgrade completes with no Gateway created, the shared one untouched and the GRPCRoute weighted like the HTTPRoute at every step", func(ctx context.Context) {
		ns := world.NewNamespace(ctx)
		checker := world.WatchInvariants(ctx, ns)
		shared := sharedGateway(ctx, "open-"+ns, &gwv1.AllowedRoutes{Namespaces: &gwv1.RouteNamespaces{From: ptr.To(gwv1.NamespacesFromAll)}})
		sharedRV, sharedLabels := shared.ResourceVersion, maps.Clone(shared.Labels)

		Expect(k8s.Create(ctx, attached(name, ns, shared.Name))).To(Succeed())
		blue := world.WaitServing(ctx, ns, name)
		Eventually(world.Condition(ctx, ns, name, "RouteAccepted")).Should(Equal("True/Accepted"))
		rt := world.Route(ctx, ns, name)
		Expect(rt.Spec.ParentRefs).To(HaveLen(1))
		Expect(string(rt.Spec.ParentRefs[0].Name)).To(Equal(shared.Name))
		Expect(string(*rt.Spec.ParentRefs[0].Namespace)).To(Equal(sharedGatewayNamespace))
		Expect(rt.Spec.Hostnames).To(Equal([]gwv1.Hostname{"fruit.example.com"}))
		Expect(*rt.Spec.Rules[0].Matches[0].Path.Value).To(Equal("/fruit"))
		g := grpcRoute(ctx, ns, name)
		Expect(g.Spec.ParentRefs).To(Equal(rt.Spec.ParentRefs))
		Expect(*g.Spec.Rules[0].BackendRefs[0].Port).To(BeEquivalentTo(9000))
		Expect(gatewaysIn(ctx, ns)()).To(BeEmpty())

		By("upgrading: both routes move together")
		world.Update(ctx, ns, name, func(s *rayv1.RayService) { rstest.SetImage(s, "rayproject/ray:2.53.0") })
		Eventually(world.PendingName(ctx, ns, name)).ShouldNot(BeEmpty())
		green := world.PendingName(ctx, ns, name)()
		Eventually(world.ActiveName(ctx, ns, name), "90s").Should(Equal(green))
		Eventually(world.PendingName(ctx, ns, name)).Should(BeEmpty())
		Expect(world.ActiveName(ctx, ns, name)()).NotTo(Equal(blue))

		httpSteps, grpc := rsenv.TrafficSteps(checker, green), grpcSteps(checker, green)
		Expect(httpSteps).To(ContainElements(int32(25), int32(50), int32(75), int32(100)))
		Expect(grpc).To(Equal(httpSteps), "GRPCRoute steps %v, HTTPRoute steps %v", grpc, httpSteps)
		Expect(gatewaysIn(ctx, ns)()).To(BeEmpty(), "raygate created a Gateway although the RayService attaches to a shared one")

		By("never writing the shared Gateway")
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(shared), shared)).To(Succeed())
		Expect(shared.ResourceVersion).To(Equal(sharedRV))
		Expect(shared.Labels).To(Equal(sharedLabels))
		Expect(shared.OwnerReferences).To(BeEmpty())
	})

	It("reports RouteAccepted False (NotAllowedByListeners) and moves no traffic while the Gateway's allowedRoutes exclude the namespace, and goes on once they admit it", func(ctx context.Context) {
		ns := world.NewNamespace(ctx)
		checker := world.WatchInvariants(ctx, ns)
		closed := sharedGateway(ctx, "closed-"+ns, &gwv1.AllowedRoutes{Namespaces: &gwv1.RouteNamespaces{
			From: ptr.To(gwv1.NamespacesFromSelector), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"shared-gateway-access": "true"}},
		}})
		Expect(k8s.Create(ctx, attached(name, ns, closed.Name))).To(Succeed())
		blue := world.WaitServing(ctx, ns, name)
		Eventually(world.Condition(ctx, ns, name, "RouteAccepted")).Should(Equal("False/NotAllowedByListeners"))
		// The condition turns False with the first route the Gateway refuses (the GRPCRoute's
		// answer can come first) and names the HTTPRoute once its answer is in too.
		Eventually(func() string { return world.ConditionMessage(ctx, ns, name, "RouteAccepted") }).Should(ContainSubstring(
			"Gateway " + sharedGatewayNamespace + "/" + closed.Name + " does not accept HTTPRoute " + name + "-httproute (NotAllowedByListeners: listener web: namespace " + ns + " does not match allowedRoutes.namespaces.selector"))
		Eventually(world.Events(ctx, ns, name)).Should(ContainSubstring("Warning RouteNotAccepted"))

		world.Update(ctx, ns, name, func(s *rayv1.RayService) { rstest.SetImage(s, "rayproject/ray:2.53.0") })
		Eventually(world.PendingName(ctx, ns, name)).ShouldNot(BeEmpty())
		green := world.PendingName(ctx, ns, name)()
		Consistently(world.PendingTraffic(ctx, ns, name), "5s", "200ms").Should(BeEquivalentTo(0))
		Expect(world.Route(ctx, ns, name).Spec.Rules[0].BackendRefs).To(HaveLen(2))
		Expect(rsenv.TrafficSteps(checker, green)).To(Or(BeEmpty(), Equal([]int32{0})))
		Expect(world.ConditionMessage(ctx, ns, name, rayv1.UpgradeInProgress)).To(ContainSubstring("does not accept"))
		Expect(world.ActiveName(ctx, ns, name)()).To(Equal(blue))

		By("the Gateway's owner admitting the namespace")
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(closed), closed)).To(Succeed())
		closed.Spec.Listeners[0].AllowedRoutes.Namespaces = &gwv1.RouteNamespaces{From: ptr.To(gwv1.NamespacesFromAll)}
		Expect(k8s.Update(ctx, closed)).To(Succeed())
		Eventually(world.Condition(ctx, ns, name, "RouteAccepted")).Should(Equal("True/Accepted"))
		Eventually(world.ActiveName(ctx, ns, name), "90s").Should(Equal(green))
		Eventually(world.Events(ctx, ns, name)).Should(ContainSubstring("Normal RouteAccepted"))
	})
})
