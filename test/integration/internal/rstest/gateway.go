package rstest

import (
	"context"
	"net"
	"strconv"

	"github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/raygate/raygate/internal/rayspec"
)

// GatewayURL waits until the gateway implementation has programmed the RayService's Gateway
// and accepted its HTTPRoute, and returns the listener's address from the Gateway's status.
func GatewayURL(ctx context.Context, c client.Client, ns, name string) string {
	var url string
	gomega.Eventually(func(g gomega.Gomega) {
		var gw gwv1.Gateway
		g.Expect(c.Get(ctx, client.ObjectKey{Namespace: ns, Name: rayspec.GatewayName(name)}, &gw)).To(gomega.Succeed())
		g.Expect(meta.IsStatusConditionTrue(gw.Status.Conditions, string(gwv1.GatewayConditionProgrammed))).To(gomega.BeTrue(), "Gateway Programmed")
		g.Expect(gw.Status.Addresses).NotTo(gomega.BeEmpty())
		g.Expect(gw.Spec.Listeners).To(gomega.HaveLen(1))
		var rt gwv1.HTTPRoute
		g.Expect(c.Get(ctx, client.ObjectKey{Namespace: ns, Name: rayspec.HTTPRouteName(name)}, &rt)).To(gomega.Succeed())
		g.Expect(rt.Status.Parents).To(gomega.HaveLen(1))
		g.Expect(meta.IsStatusConditionTrue(rt.Status.Parents[0].Conditions, string(gwv1.RouteConditionAccepted))).To(gomega.BeTrue(), "HTTPRoute Accepted")
		url = "http://" + net.JoinHostPort(gw.Status.Addresses[0].Value, strconv.Itoa(int(gw.Spec.Listeners[0].Port)))
	}).Should(gomega.Succeed())
	return url
}
