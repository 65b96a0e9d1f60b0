package raycluster

import (
	"context"
	"slices"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/testenv/framework"
	"github.com/raygate/raygate/test/builders"
	"github.com/raygate/raygate/test/integration/internal/rctest"
)

var _ = Describe("status writes while workers turn ready one by one", func() {
	// workersOf matches the worker pods of ns, all of them or only those named.
	workersOf := func(ns string, names ...string) func(p *corev1.Pod) bool {
		return func(p *corev1.Pod) bool {
			return p.Namespace == ns && p.Labels[rayv1.NodeTypeLabelKey] == "worker" && (len(names) == 0 || slices.Contains(names, p.Name))
		}
	}
	running := func(p corev1.Pod) bool { return p.Status.Phase == corev1.PodRunning }
	ready := func(p corev1.Pod) bool {
		return slices.ContainsFunc(p.Status.Conditions, func(c corev1.PodCondition) bool {
			return c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue
		})
	}

	It("writes a first bring-up's pod progress together with the ready state, which is written at once", func(ctx context.Context) {
		ns := world.NewNamespace(ctx)
		Expect(kubelet.SetBehavior(ctx, workersOf(ns), framework.NotReady)).To(Succeed())
		DeferCleanup(kubelet.ResetBehaviors)
		world.ExpectQuiet()
		Expect(k8s.Create(ctx, builders.RayCluster("bring-up", ns).WorkerGroups(builders.WorkerGroup("w", 3)).Obj())).To(Succeed())

		By("the head ready and the workers running, not ready: the progress waits")
		Eventually(func() []corev1.Pod { return world.WorkerPods(ctx, ns, "bring-up", "w") }).Should(And(HaveLen(3), HaveEach(Satisfy(running))))
		Eventually(func() []corev1.Pod { return world.HeadPods(ctx, ns, "bring-up") }).Should(ContainElement(Satisfy(ready)))
		Consistently(func() int { return world.WritesIn(ns)()["patch rayclusters/status"] }, 6*time.Second).Should(Equal(1), "only the first status: the short wait is 5 s")
		Expect(world.Get(ctx, ns, "bring-up").Status.State).To(BeEmpty())

		By("the workers turning ready make the cluster ready: one write, well before the bring-up wait is over")
		Expect(kubelet.SetBehavior(ctx, workersOf(ns), framework.Ready)).To(Succeed())
		Eventually(world.Status(ctx, ns, "bring-up"), 15*time.Second).Should(And(
			HaveField("State", Equal(rayv1.Ready)), HaveField("ReadyWorkerReplicas", BeEquivalentTo(3)),
			rctest.HaveCondition(rayv1.HeadPodReady, "True", rayv1.HeadPodRunningAndReady)))
		Expect(world.WritesIn(ns)()["patch rayclusters/status"]).To(Equal(2))
	})

	It("shows a stalled bring-up's progress once its pods have stopped moving for the bring-up wait", func(ctx context.Context) {
		ns := world.NewNamespace(ctx)
		Expect(kubelet.SetBehavior(ctx, func(p *corev1.Pod) bool { return p.Namespace == ns }, framework.NotReady)).To(Succeed())
		DeferCleanup(kubelet.ResetBehaviors)
		Expect(k8s.Create(ctx, builders.RayCluster("stalled", ns).WorkerGroups(builders.WorkerGroup("w", 2)).Obj())).To(Succeed())
		Eventually(func() []corev1.Pod { return world.WorkerPods(ctx, ns, "stalled", "w") }).Should(And(HaveLen(2), HaveEach(Satisfy(running))))
		Eventually(func() []corev1.Pod { return world.HeadPods(ctx, ns, "stalled") }).Should(ContainElement(Satisfy(running)))
		Consistently(func() int { return world.WritesIn(ns)()["patch rayclusters/status"] }, 10*time.Second).Should(Equal(1),
			"only the first status: the pods' start-up steps wait")

		By("the head turning ready while the workers never do: its progress is written 30 s after that last step")
		movedLast := time.Now()
		Expect(kubelet.SetBehavior(ctx, func(p *corev1.Pod) bool {
			return p.Namespace == ns && p.Labels[rayv1.NodeTypeLabelKey] == "head"
		}, framework.Ready)).To(Succeed())
		Eventually(world.Status(ctx, ns, "stalled"), 45*time.Second, time.Second).Should(
			rctest.HaveCondition(rayv1.HeadPodReady, "True", rayv1.HeadPodRunningAndReady))
		Expect(time.Since(movedLast)).To(BeNumerically(">=", 29*time.Second), "written before the pods were quiet for the bring-up wait")
		Expect(world.Get(ctx, ns, "stalled").Status.State).To(BeEmpty())
		Expect(world.WritesIn(ns)()["patch rayclusters/status"]).To(Equal(2))
	})

	It("coalesces a provisioned cluster's count changes into one write", func(ctx context.Context) {
		ns := world.NewNamespace(ctx)
		Expect(k8s.Create(ctx, builders.RayCluster("one-by-one", ns).WorkerGroups(builders.WorkerGroup("w", 1)).Obj())).To(Succeed())
		world.WaitReady(ctx, ns, "one-by-one")
		first := world.WorkerPods(ctx, ns, "one-by-one", "w")
		Expect(first).To(HaveLen(1))
		Expect(kubelet.SetBehavior(ctx, func(p *corev1.Pod) bool { return workersOf(ns)(p) && p.Name != first[0].Name }, framework.NotReady)).To(Succeed())
		DeferCleanup(kubelet.ResetBehaviors)
		world.Update(ctx, ns, "one-by-one", func(rc *rayv1.RayCluster) { rc.Spec.WorkerGroupSpecs[0].Replicas = ptr.To[int32](3) })
		Eventually(world.Status(ctx, ns, "one-by-one")).Should(And(
			HaveField("AvailableWorkerReplicas", BeEquivalentTo(3)),
			HaveField("ReadyWorkerReplicas", BeEquivalentTo(1))))
		world.ExpectQuiet()

		By("two workers turning ready cost one status write, not one each")
		var added []string
		for _, p := range world.WorkerPods(ctx, ns, "one-by-one", "w") {
			if p.Name != first[0].Name {
				added = append(added, p.Name)
			}
		}
		Expect(added).To(HaveLen(2))
		Expect(kubelet.SetBehavior(ctx, workersOf(ns, added...), framework.Ready)).To(Succeed())
		Eventually(world.Status(ctx, ns, "one-by-one")).Should(HaveField("ReadyWorkerReplicas", BeEquivalentTo(3)))
		Expect(world.WritesIn(ns)()).To(Equal(map[string]int{"patch rayclusters/status": 1}))
	})
})
