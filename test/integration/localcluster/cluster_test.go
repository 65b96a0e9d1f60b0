package localcluster

import (
	"context"
	"net/netip"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/raygate/raygate/internal/testenv/load"
)

func namespace(ctx context.Context) string {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "lc-"}}
	Expect(cluster.Client.Create(ctx, ns)).To(Succeed())
	return ns.Name
}

func deployment(ns, name string, replicas int32) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				// kwok's general stages honour the grace period like a kubelet; keep it short.
				Spec: corev1.PodSpec{TerminationGracePeriodSeconds: ptr.To[int64](1), Containers: []corev1.Container{{
					Name: "web", Image: "nginx:1.27",
					Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 80}},
				}}},
			},
		},
	}
}

func podsOf(ctx context.Context, ns, app string) func() []corev1.Pod {
	return func() []corev1.Pod {
		var pods corev1.PodList
		Expect(cluster.Client.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels{"app": app})).To(Succeed())
		return pods.Items
	}
}

func podReady(p corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

var _ = Describe("a Deployment on the local cluster", func() {
	It("gets Running, Ready pods with IPs on kwok nodes, and its pods are garbage-collected with it", func(ctx context.Context) {
		ns := namespace(ctx)
		d := deployment(ns, "web", 3)
		Expect(cluster.Client.Create(ctx, d)).To(Succeed())

		var pods []corev1.Pod
		Eventually(func(g Gomega) {
			pods = podsOf(ctx, ns, "web")()
			g.Expect(pods).To(HaveLen(3))
			for _, p := range pods {
				g.Expect(p.Status.Phase).To(Equal(corev1.PodRunning), p.Name)
				g.Expect(podReady(p)).To(BeTrue(), p.Name)
				g.Expect(p.Status.PodIP).NotTo(BeEmpty(), p.Name)
			}
		}, 60*time.Second, 250*time.Millisecond).Should(Succeed())

		ips := map[string]bool{}
		for _, p := range pods {
			Expect(cluster.Nodes).To(ContainElement(p.Spec.NodeName), "scheduled on a kwok node")
			ip := netip.MustParseAddr(p.Status.PodIP)
			var node corev1.Node
			Expect(cluster.Client.Get(ctx, client.ObjectKey{Name: p.Spec.NodeName}, &node)).To(Succeed())
			Expect(netip.MustParsePrefix(node.Spec.PodCIDR).Contains(ip)).To(BeTrue(), "pod IP %s within its node's pod CIDR %s", ip, node.Spec.PodCIDR)
			ips[p.Status.PodIP] = true
		}
		Expect(ips).To(HaveLen(3), "every pod has its own IP")

		Eventually(func(g Gomega) {
			g.Expect(cluster.Client.Get(ctx, client.ObjectKeyFromObject(d), d)).To(Succeed())
			g.Expect(d.Status.ReadyReplicas).To(Equal(int32(3)))
		}, 30*time.Second, 250*time.Millisecond).Should(Succeed(), "the deployment controller sees the ready pods")

		Expect(cluster.Client.Delete(ctx, d)).To(Succeed())
		Eventually(podsOf(ctx, ns, "web"), 60*time.Second, 250*time.Millisecond).Should(BeEmpty(), "pods garbage-collected with their Deployment")
		Eventually(func(g Gomega) {
			var rs appsv1.ReplicaSetList
			g.Expect(cluster.Client.List(ctx, &rs, client.InNamespace(ns))).To(Succeed())
			g.Expect(rs.Items).To(BeEmpty())
		}, 30*time.Second, 250*time.Millisecond).Should(Succeed(), "ReplicaSet garbage-collected")
	})

	It("gives a Service's pods loopback IPs, which the API server refuses in EndpointSlices, so clients resolve the Service to its pods", func(ctx context.Context) {
		ns := namespace(ctx)
		Expect(cluster.Client.Create(ctx, deployment(ns, "api", 2))).To(Succeed())
		svc := &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: "api", Namespace: ns},
			Spec: corev1.ServiceSpec{
				Selector: map[string]string{"app": "api"},
				Ports:    []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromString("http")}},
			},
		}
		Expect(cluster.Client.Create(ctx, svc)).To(Succeed())
		Expect(svc.Spec.ClusterIP).NotTo(BeEmpty())

		var ready []string
		Eventually(func(g Gomega) {
			ready = nil
			for _, p := range podsOf(ctx, ns, "api")() {
				if podReady(p) && p.Status.PodIP != "" {
					g.Expect(netip.MustParseAddr(p.Status.PodIP).IsLoopback()).To(BeTrue(), "pod IP %s", p.Status.PodIP)
					ready = append(ready, p.Status.PodIP)
				}
			}
			g.Expect(ready).To(HaveLen(2))
		}, 60*time.Second, 250*time.Millisecond).Should(Succeed())
		var pods corev1.PodList
		Expect(cluster.Client.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels{"app": "api"})).To(Succeed())
		Expect(load.PodAddresses(svc, pods.Items, "http")).To(HaveLen(2), "what kube-proxy would program")

		slice := &discoveryv1.EndpointSlice{
			ObjectMeta:  metav1.ObjectMeta{Name: "api-by-hand", Namespace: ns, Labels: map[string]string{discoveryv1.LabelServiceName: "api"}},
			AddressType: discoveryv1.AddressTypeIPv4,
			Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{ready[0]}}},
		}
		err := cluster.Client.Create(ctx, slice)
		Expect(err).To(MatchError(ContainSubstring("may not be in the loopback range")))
	})
})
