package raycluster

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/test/builders"
	"github.com/raygate/raygate/test/integration/internal/rctest"
)

var _ = Describe("a RayCluster with two worker groups", func() {
	It("converges to Ready with its head Service and status, then makes zero writes", func(ctx context.Context) {
		ns := world.NewNamespace(ctx)
		rc := builders.RayCluster("demo", ns).WorkerGroups(builders.WorkerGroup("cpu", 2), builders.WorkerGroup("small", 1)).Obj()
		Expect(k8s.Create(ctx, rc)).To(Succeed())

		world.WaitReady(ctx, ns, "demo")
		Expect(world.HeadPods(ctx, ns, "demo")).To(HaveLen(1))
		Expect(world.WorkerPods(ctx, ns, "demo", "cpu")).To(HaveLen(2))
		Expect(world.WorkerPods(ctx, ns, "demo", "small")).To(HaveLen(1))

		st := world.Get(ctx, ns, "demo").Status
		head := world.HeadPods(ctx, ns, "demo")[0]
		Expect(st.DesiredWorkerReplicas).To(BeEquivalentTo(3))
		Expect(st.ReadyWorkerReplicas).To(BeEquivalentTo(3))
		Expect(st.AvailableWorkerReplicas).To(BeEquivalentTo(3))
		Expect(st.MinWorkerReplicas).To(BeEquivalentTo(0))
		Expect(st.MaxWorkerReplicas).To(BeEquivalentTo(20))
		Expect(st.DesiredCPU.Cmp(resource.MustParse("4"))).To(Equal(0), "1 head CPU + 3 workers × 1 CPU, got %s", st.DesiredCPU.String())
		Expect(st.DesiredMemory.Cmp(resource.MustParse("5Gi"))).To(Equal(0), "got %s", st.DesiredMemory.String())
		Expect(st.Head.PodName).To(Equal(head.Name))
		Expect(st.Head.PodIP).To(Equal(head.Status.PodIP))
		Expect(st.Head.ServiceIP).To(Equal(head.Status.PodIP), "the head Service is headless, so its IP is the head pod's")
		Expect(st.Head.ServiceName).To(Equal("demo-head-svc"))
		Expect(st.Endpoints).To(Equal(map[string]string{"client": "10001", "dashboard": "8265", "gcs-server": "6379", "metrics": "8080", "serve": "8000"}))
		Expect(st.ObservedGeneration).To(Equal(world.Get(ctx, ns, "demo").Generation))
		Expect(st).To(rctest.HaveCondition(rayv1.HeadPodReady, metav1.ConditionTrue, rayv1.HeadPodRunningAndReady))
		Expect(st).To(rctest.HaveCondition(rayv1.RayClusterSuspended, metav1.ConditionFalse, string(rayv1.RayClusterSuspended)))
		Expect(rctest.Condition(st, rayv1.RayClusterReplicaFailure)).To(BeNil(), "ReplicaFailure is present only on failure")
		Expect(st.StateTransitionTimes).To(HaveKey(rayv1.Ready))

		svc := &corev1.Service{}
		Expect(k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: "demo-head-svc"}, svc)).To(Succeed())
		Expect(svc.Spec.ClusterIP).To(Equal(corev1.ClusterIPNone))
		Expect(svc.Spec.Selector).To(HaveKeyWithValue(rayv1.ClusterLabelKey, "demo"))
		Expect(svc.Spec.Selector).To(HaveKeyWithValue(rayv1.NodeTypeLabelKey, "head"))
		Expect(metav1.IsControlledBy(svc, world.Get(ctx, ns, "demo"))).To(BeTrue())
		Eventually(world.Events(ctx, ns, "demo")).Should(ContainElement(ContainSubstring("Normal CreatedHeadPod")))

		By("one more reconcile of the converged cluster writes nothing")
		world.ExpectQuiet()
		reconciles := rctest.ReconcileCount()
		cur := world.Get(ctx, ns, "demo")
		before := cur.Status.LastUpdateTime
		cur.Labels = map[string]string{"touched": "yes"} // an unrelated change triggers a reconcile
		Expect(k8s.Update(ctx, cur)).To(Succeed())
		Eventually(rctest.ReconcileCount).Should(BeNumerically(">", reconciles), "touching a label must trigger a reconcile")
		Consistently(world.WritesIn(ns), 2*time.Second).Should(BeEmpty())
		Expect(world.Get(ctx, ns, "demo").Status.LastUpdateTime).To(Equal(before))
	})
})
