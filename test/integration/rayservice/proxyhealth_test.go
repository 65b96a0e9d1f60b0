package rayservice

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/rayspec"
	"github.com/raygate/raygate/test/builders"
	"github.com/raygate/raygate/test/integration/internal/rstest"
)

// selectedPods are the ready pods the serve Service selects: what its EndpointSlice lists.
func selectedPods(ctx context.Context, ns, serveSvc string) func() []string {
	return func() []string {
		s := &corev1.Service{}
		if err := k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: serveSvc}, s); err != nil || len(s.Spec.Selector) == 0 {
			return nil
		}
		var pods corev1.PodList
		Expect(k8s.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels(s.Spec.Selector))).To(Succeed())
		var out []string
		for i := range pods.Items {
			if rayspec.Serving(&pods.Items[i]) {
				out = append(out, pods.Items[i].Name)
			}
		}
		return out
	}
}

func headPodOf(ctx context.Context, ns, cluster string) *corev1.Pod {
	var pods corev1.PodList
	Expect(k8s.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels{rayv1.ClusterLabelKey: cluster, rayv1.NodeTypeLabelKey: string(rayv1.HeadNode)})).To(Succeed())
	Expect(pods.Items).To(HaveLen(1))
	return &pods.Items[0]
}

var _ = Describe("Serve proxy health", func() {
	const name = "proxied"

	It("takes the head out of the serve endpoints while its Serve proxy fails its health check, and back when it recovers", func(ctx context.Context) {
		ns := world.NewNamespace(ctx)
		Expect(k8s.Create(ctx, builders.RayService(name, ns).Obj())).To(Succeed())
		active := world.WaitServing(ctx, ns, name)
		head := headPodOf(ctx, ns, active).Name
		serveSvc := rayspec.ServeServiceName(name)
		Eventually(selectedPods(ctx, ns, serveSvc)).Should(ContainElement(head))
		endpoints := world.RayService(ctx, ns, name).Status.NumServeEndpoints
		Expect(endpoints).To(BeNumerically(">=", 2), "the head and at least one worker serve")
		labelOf := func() string { return headPodOf(ctx, ns, active).Labels[rayv1.ServeLabelKey] }
		Expect(labelOf()).To(Equal("true"))
		Expect(world.Simulator(ns, active).ProxyChecks()).To(BeNumerically(">", 0), "the proxy was checked before the head joined")

		By("the head's Serve proxy fails its health check")
		world.Simulator(ns, active).SetProxyHealthy(false)
		// Nothing else changes: the controller notices by checking the proxy again.
		Eventually(labelOf, 20*time.Second).Should(Equal("false"))
		Eventually(selectedPods(ctx, ns, serveSvc)).ShouldNot(ContainElement(head))
		Eventually(func() int32 { return world.RayService(ctx, ns, name).Status.NumServeEndpoints }).Should(Equal(endpoints - 1))
		Expect(world.Condition(ctx, ns, name, rayv1.RayServiceReady)()).To(Equal("True/NonZeroServeEndpoints"), "the workers still serve")
		// The check went where a real head's proxy listens: the head pod's IP, the serve port.
		Eventually(rstest.Events(ctx, k8s, ns, name)).Should(ContainSubstring(
			"Normal UpdatedHeadPodServeLabel: set ray.io/serve=false on head pod " + head + " of RayCluster " + active +
				": its Serve proxy health check failed: GET http://" + headPodOf(ctx, ns, active).Status.PodIP + ":8000/-/healthz: HTTP 503: This node is being drained."))
		Consistently(labelOf, 2*time.Second).Should(Equal("false"))

		By("the proxy recovers")
		world.Simulator(ns, active).SetProxyHealthy(true)
		Eventually(labelOf, 10*time.Second).Should(Equal("true"))
		Eventually(selectedPods(ctx, ns, serveSvc)).Should(ContainElement(head))
		Eventually(func() int32 { return world.RayService(ctx, ns, name).Status.NumServeEndpoints }).Should(Equal(endpoints))
	})

	It("never checks the proxy of a head kept out of the serve endpoints", func(ctx context.Context) {
		ns := world.NewNamespace(ctx)
		svc := builders.RayService(name, ns).Obj()
		svc.Spec.ExcludeHeadPodFromServeSvc = true
		Expect(k8s.Create(ctx, svc)).To(Succeed())
		active := world.WaitServing(ctx, ns, name)
		Expect(headPodOf(ctx, ns, active).Labels[rayv1.ServeLabelKey]).To(Equal("false"))
		h, ok := dashboards.LastHead(types.NamespacedName{Namespace: ns, Name: active})
		Expect(ok).To(BeTrue())
		Expect(h.ServePort).To(Equal(int32(rayspec.DefaultServePort)), "the head's serve port is known")
		Consistently(world.Simulator(ns, active).ProxyChecks, 2*time.Second).Should(BeZero())
		Expect(world.Simulator(ns, active).Requests()).To(BeNumerically(">", 0), "its dashboard was called")
	})
})
