package gateway

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/raygate/raygate/internal/testenv/traefik"
	"github.com/raygate/raygate/test/integration/internal/rstest"
)

const (
	servicePort = 8000
	// requests is how many requests a split is measured over; Traefik's weighted round
	// robin is deterministic, so the split may stray from the weights only by a few
	// requests at the start of the cycle.
	requests = 500
	// splitTolerance is the largest accepted distance between the measured share of a
	// backend and its weight's share.
	splitTolerance = 0.03
)

var _ = Describe("Traefik", func() {
	It("writes Gateway and HTTPRoute status itself and splits requests by the route's weights", func(ctx context.Context) {
		ns := rstest.NewNamespace(ctx, k8s, "gw-")
		backend(ctx, ns, "a")
		backend(ctx, ns, "b")
		Expect(k8s.Create(ctx, gateway(ns))).To(Succeed())
		retireGateway(ns, "gw", "route")
		Expect(k8s.Create(ctx, route(ns, map[string]int32{"a": 80, "b": 20}))).To(Succeed())

		By("Traefik accepting the GatewayClass, the Gateway and the HTTPRoute")
		Eventually(func(g Gomega) {
			var gc gwv1.GatewayClass
			g.Expect(k8s.Get(ctx, client.ObjectKey{Name: className}, &gc)).To(Succeed())
			g.Expect(meta.IsStatusConditionTrue(gc.Status.Conditions, string(gwv1.GatewayClassConditionStatusAccepted))).To(BeTrue(), "GatewayClass Accepted")
		}).Should(Succeed())
		waitProgrammed(ctx, ns)
		var gw gwv1.Gateway
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "gw"}, &gw)).To(Succeed())
		Expect(gw.Status.Addresses).To(ContainElement(HaveField("Value", tr.Host)), "the Gateway's address is where Traefik listens")

		By("sending requests through Traefik")
		counts := send(ctx, requests)
		GinkgoWriter.Printf("80/20 route: %v\n", counts)
		Expect(counts["failed"]).To(BeZero())
		Expect(float64(counts["a"]) / requests).To(BeNumerically("~", 0.8, splitTolerance))
		Expect(float64(counts["b"]) / requests).To(BeNumerically("~", 0.2, splitTolerance))

		By("moving every request to b")
		var rt gwv1.HTTPRoute
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "route"}, &rt)).To(Succeed())
		rt.Spec = route(ns, map[string]int32{"a": 0, "b": 100}).Spec
		Expect(k8s.Update(ctx, &rt)).To(Succeed())
		Eventually(func() map[string]int { return send(ctx, 20) }).Should(Equal(map[string]int{"b": 20}))
	})

	It("routes to the loopback IP of a pod the Service selects (LoopbackEndpoints publishes it)", func(ctx context.Context) {
		ns := rstest.NewNamespace(ctx, k8s, "gw-")
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "a") }))
		DeferCleanup(srv.Close)
		port := int32(srv.Listener.Addr().(*net.TCPAddr).Port)
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "serve-0", Labels: map[string]string{"app": "a"}},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "x", Ports: []corev1.ContainerPort{{Name: "serve", ContainerPort: port}}}}},
		}
		Expect(k8s.Create(ctx, pod)).To(Succeed())
		pod.Status = corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "127.0.0.1", PodIPs: []corev1.PodIP{{IP: "127.0.0.1"}},
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}
		Expect(k8s.Status().Update(ctx, pod)).To(Succeed())
		Expect(k8s.Create(ctx, &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "a"},
			Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "a"},
				Ports: []corev1.ServicePort{{Name: "http", Port: servicePort, TargetPort: intstr.FromString("serve")}}},
		})).To(Succeed())
		Expect(k8s.Create(ctx, gateway(ns))).To(Succeed())
		retireGateway(ns, "gw", "route")
		Expect(k8s.Create(ctx, route(ns, map[string]int32{"a": 100}))).To(Succeed())
		waitProgrammed(ctx, ns)
		Expect(send(ctx, 20)).To(Equal(map[string]int{"a": 20}))

		By("the pod turning unready")
		pod.Status.Conditions[0].Status = corev1.ConditionFalse
		Expect(k8s.Status().Update(ctx, pod)).To(Succeed())
		Eventually(func() int { return send(ctx, 1)["a"] }).Should(BeZero())
	})

	It("reports a route whose backend Service is missing as not resolved", func(ctx context.Context) {
		ns := rstest.NewNamespace(ctx, k8s, "gw-")
		backend(ctx, ns, "a")
		Expect(k8s.Create(ctx, gateway(ns))).To(Succeed())
		retireGateway(ns, "gw", "route")
		Expect(k8s.Create(ctx, route(ns, map[string]int32{"a": 50, "missing": 50}))).To(Succeed())
		Eventually(func(g Gomega) {
			var rt gwv1.HTTPRoute
			g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "route"}, &rt)).To(Succeed())
			g.Expect(rt.Status.Parents).To(HaveLen(1))
			g.Expect(string(rt.Status.Parents[0].ControllerName)).To(Equal(traefik.ControllerName))
			c := meta.FindStatusCondition(rt.Status.Parents[0].Conditions, string(gwv1.RouteConditionResolvedRefs))
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
			g.Expect(c.Reason).To(Equal(string(gwv1.RouteReasonBackendNotFound)))
		}).Should(Succeed())
	})
})

// backend starts an HTTP server on loopback that answers with its name, and a Service and an
// EndpointSlice that point at it, as a serve Service points at its pods. The API server
// refuses loopback addresses in IPv4 EndpointSlices; written as an FQDN slice, the address
// passes validation, and Traefik dials it as it would a pod IP (it does not look at the
// address type).
func backend(ctx context.Context, ns, name string) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, name)
	}))
	DeferCleanup(srv.Close)
	host, portStr, err := net.SplitHostPort(srv.Listener.Addr().String())
	Expect(err).NotTo(HaveOccurred())
	port, err := strconv.ParseInt(portStr, 10, 32)
	Expect(err).NotTo(HaveOccurred())
	Expect(k8s.Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "http", Port: servicePort}}},
	})).To(Succeed())
	Expect(k8s.Create(ctx, &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{discoveryv1.LabelServiceName: name}},
		AddressType: discoveryv1.AddressTypeFQDN,
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("http"), Port: ptr.To(int32(port)), Protocol: ptr.To(corev1.ProtocolTCP)}},
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{host}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}}},
	})).To(Succeed())
}

func gateway(ns string) *gwv1.Gateway {
	return &gwv1.Gateway{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "gw"},
		Spec: gwv1.GatewaySpec{
			GatewayClassName: className,
			Listeners:        []gwv1.Listener{{Name: "http", Protocol: gwv1.HTTPProtocolType, Port: gwv1.PortNumber(tr.Port)}},
		},
	}
}

// route is an HTTPRoute for "/" on the Gateway with one weighted backend per Service.
func route(ns string, weights map[string]int32) *gwv1.HTTPRoute {
	var refs []gwv1.HTTPBackendRef
	for _, name := range []string{"a", "b", "missing"} {
		if w, ok := weights[name]; ok {
			refs = append(refs, gwv1.HTTPBackendRef{BackendRef: gwv1.BackendRef{
				BackendObjectReference: gwv1.BackendObjectReference{Name: gwv1.ObjectName(name), Port: ptr.To(gwv1.PortNumber(servicePort))},
				Weight:                 ptr.To(w),
			}})
		}
	}
	return &gwv1.HTTPRoute{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "route"},
		Spec: gwv1.HTTPRouteSpec{
			CommonRouteSpec: gwv1.CommonRouteSpec{ParentRefs: []gwv1.ParentReference{{Name: "gw"}}},
			Rules: []gwv1.HTTPRouteRule{{
				Matches:     []gwv1.HTTPRouteMatch{{Path: &gwv1.HTTPPathMatch{Type: ptr.To(gwv1.PathMatchPathPrefix), Value: ptr.To("/")}}},
				BackendRefs: refs,
			}},
		},
	}
}

// waitProgrammed waits until Traefik says the Gateway is accepted and programmed, the route
// accepted with its references resolved, and the route serves requests.
func waitProgrammed(ctx context.Context, ns string) {
	Eventually(func(g Gomega) {
		var gw gwv1.Gateway
		g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "gw"}, &gw)).To(Succeed())
		for _, t := range []gwv1.GatewayConditionType{gwv1.GatewayConditionAccepted, gwv1.GatewayConditionProgrammed} {
			g.Expect(meta.IsStatusConditionTrue(gw.Status.Conditions, string(t))).To(BeTrue(), "Gateway %s", t)
		}
		var rt gwv1.HTTPRoute
		g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "route"}, &rt)).To(Succeed())
		g.Expect(rt.Status.Parents).To(HaveLen(1))
		g.Expect(string(rt.Status.Parents[0].ControllerName)).To(Equal(traefik.ControllerName))
		for _, t := range []gwv1.RouteConditionType{gwv1.RouteConditionAccepted, gwv1.RouteConditionResolvedRefs} {
			c := meta.FindStatusCondition(rt.Status.Parents[0].Conditions, string(t))
			g.Expect(c).NotTo(BeNil(), "HTTPRoute %s", t)
			g.Expect(c.Status).To(Equal(metav1.ConditionTrue), "HTTPRoute %s: %s", t, c.Message)
			g.Expect(c.ObservedGeneration).To(Equal(rt.Generation))
		}
	}).Should(Succeed())
	// Status is written when the configuration is built; the router serves a moment later.
	Eventually(func() int { return send(ctx, 1)["failed"] }).Should(BeZero())
}

// send sends n requests through Traefik one after another and counts the answers by
// backend name; "failed" counts errors and non-200 answers.
func send(ctx context.Context, n int) map[string]int {
	hc := &http.Client{Timeout: 2 * time.Second}
	counts := map[string]int{}
	for range n {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, tr.URL()+"/", nil)
		Expect(err).NotTo(HaveOccurred())
		resp, err := hc.Do(req)
		if err != nil {
			counts["failed"]++
			continue
		}
		body, err := io.ReadAll(io.LimitReader(resp.Body, 64))
		_ = resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK {
			counts["failed"]++
			continue
		}
		counts[string(body)]++
	}
	return counts
}
