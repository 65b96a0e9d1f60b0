package raycluster

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/testenv/framework"
	"github.com/raygate/raygate/test/builders"
)

var _ = Describe("status writes while workers turn ready one by one", func() {
	It("coalesces count changes into one write and writes the ready state at once", func(ctx context.Context) {
		ns := newNamespace(ctx)
		worker := func(names ...string) func(p *corev1.Pod) bool {
			return func(p *corev1.Pod) bool {
				if p.Namespace != ns || p.Labels[rayv1.NodeTypeLabelKey] != "worker" {
					return false
				}
				if len(names) == 0 {
					return true
				}
				for _, n := range names {
					if p.Name == n {
						return true
					}
				}
				return false
			}
		}
		Expect(kubelet.SetBehavior(ctx, worker(), framework.NotReady)).To(Succeed())
		DeferCleanup(kubelet.ResetBehaviors)
		Expect(k8s.Create(ctx, builders.RayCluster("one-by-one", ns).WorkerGroups(builders.WorkerGroup("w", 3)).Obj())).To(Succeed())
		Eventually(clusterStatus(ctx, ns, "one-by-one")).Should(And(
			HaveField("AvailableWorkerReplicas", BeEquivalentTo(3)),
			HaveField("ReadyWorkerReplicas", BeEquivalentTo(0))))
		expectQuiet()

		By("two workers turning ready cost one status write, not one each")
		pods := workerPods(ctx, ns, "one-by-one", "w")
		Expect(pods).To(HaveLen(3))
		Expect(kubelet.SetBehavior(ctx, worker(pods[0].Name, pods[1].Name), framework.Ready)).To(Succeed())
		Eventually(clusterStatus(ctx, ns, "one-by-one")).Should(HaveField("ReadyWorkerReplicas", BeEquivalentTo(2)))
		Expect(writesIn(ns)()).To(Equal(map[string]int{"patch rayclusters/status": 1}))

		By("the last one makes the cluster ready, written at once")
		Expect(kubelet.SetBehavior(ctx, worker(pods[2].Name), framework.Ready)).To(Succeed())
		Eventually(clusterStatus(ctx, ns, "one-by-one")).Should(And(
			HaveField("State", Equal(rayv1.Ready)), HaveField("ReadyWorkerReplicas", BeEquivalentTo(3))))
		Expect(writesIn(ns)()["patch rayclusters/status"]).To(Equal(2))
	})
})
