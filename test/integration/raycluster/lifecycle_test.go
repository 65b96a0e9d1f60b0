package raycluster

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/features"
	"github.com/raygate/raygate/test/builders"
	"github.com/raygate/raygate/test/integration/internal/rctest"
)

var _ = Describe("suspend", func() {
	It("goes Suspending → Suspended with no pods, then resumes", func(ctx context.Context) {
		ns := world.NewNamespace(ctx)
		Expect(k8s.Create(ctx, builders.RayCluster("sus", ns).Obj())).To(Succeed())
		world.WaitReady(ctx, ns, "sus")

		// A finalizer holds the head pod while it terminates, so the Suspending step lasts.
		head := world.HeadPods(ctx, ns, "sus")[0]
		Expect(k8s.Patch(ctx, &head, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":["test.raygate.ray.io/hold"]}}`)))).To(Succeed())

		world.Update(ctx, ns, "sus", func(rc *rayv1.RayCluster) { rc.Spec.Suspend = ptr.To(true) })
		suspending := And(
			rctest.HaveCondition(rayv1.RayClusterSuspending, metav1.ConditionTrue, string(rayv1.RayClusterSuspending)),
			rctest.HaveCondition(rayv1.RayClusterSuspended, metav1.ConditionFalse, string(rayv1.RayClusterSuspended)))
		Eventually(world.Status(ctx, ns, "sus")).Should(suspending)
		Eventually(func() []corev1.Pod { return world.Pods(ctx, ns, "sus") }).Should(BeEmpty(), "every pod is terminating")
		Consistently(world.Status(ctx, ns, "sus"), time.Second).Should(suspending, "Suspended only once no pod is left")

		Expect(k8s.Patch(ctx, &head, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`)))).To(Succeed())
		Eventually(world.Status(ctx, ns, "sus")).Should(And(rctest.StateIs(rayv1.Suspended),
			rctest.HaveCondition(rayv1.RayClusterSuspended, metav1.ConditionTrue, string(rayv1.RayClusterSuspended)),
			rctest.HaveCondition(rayv1.RayClusterSuspending, metav1.ConditionFalse, string(rayv1.RayClusterSuspending)),
			rctest.HaveCondition(rayv1.RayClusterProvisioned, metav1.ConditionFalse, rayv1.RayClusterPodsProvisioning)))
		Eventually(world.Events(ctx, ns, "sus")).Should(ContainElement(ContainSubstring("Normal DeletedAllPods")))
		Consistently(func() int { return len(world.Pods(ctx, ns, "sus")) }, time.Second).Should(BeZero(), "a suspended cluster gets no pods")

		world.Update(ctx, ns, "sus", func(rc *rayv1.RayCluster) { rc.Spec.Suspend = ptr.To(false) })
		world.WaitReady(ctx, ns, "sus")
		Expect(world.Get(ctx, ns, "sus").Status).To(rctest.HaveCondition(rayv1.RayClusterSuspended, metav1.ConditionFalse, string(rayv1.RayClusterSuspended)))
		Expect(world.Pods(ctx, ns, "sus")).To(HaveLen(2))
	})

	It("follows spec.suspend directly when RayClusterStatusConditions is off", func(ctx context.Context) {
		rctest.SetGate(features.RayClusterStatusConditions, false)
		ns := world.NewNamespace(ctx)
		Expect(k8s.Create(ctx, builders.RayCluster("nogate", ns).Obj())).To(Succeed())
		Eventually(world.Status(ctx, ns, "nogate")).Should(rctest.StateIs(rayv1.Ready))
		Expect(world.Get(ctx, ns, "nogate").Status.Conditions).To(BeEmpty())
		world.Update(ctx, ns, "nogate", func(rc *rayv1.RayCluster) { rc.Spec.Suspend = ptr.To(true) })
		Eventually(world.Status(ctx, ns, "nogate")).Should(rctest.StateIs(rayv1.Suspended))
		Expect(world.Pods(ctx, ns, "nogate")).To(BeEmpty())
		Expect(world.Get(ctx, ns, "nogate").Status.Conditions).To(BeEmpty())
		world.Update(ctx, ns, "nogate", func(rc *rayv1.RayCluster) { rc.Spec.Suspend = ptr.To(false) })
		Eventually(func() int { return len(world.Pods(ctx, ns, "nogate")) }).Should(Equal(2))
	})

	It("suspends a single worker group", func(ctx context.Context) {
		ns := world.NewNamespace(ctx)
		rc := builders.RayCluster("gsus", ns).WorkerGroups(builders.WorkerGroup("a", 2), builders.WorkerGroup("b", 1)).Obj()
		Expect(k8s.Create(ctx, rc)).To(Succeed())
		world.WaitReady(ctx, ns, "gsus")
		world.Update(ctx, ns, "gsus", func(rc *rayv1.RayCluster) { rc.Spec.WorkerGroupSpecs[0].Suspend = ptr.To(true) })
		Eventually(world.PodCount(ctx, ns, "gsus", "a")).Should(BeZero())
		Consistently(world.PodCount(ctx, ns, "gsus", "b"), time.Second).Should(Equal(1))
		Expect(world.HeadPods(ctx, ns, "gsus")).To(HaveLen(1))
		Expect(world.Get(ctx, ns, "gsus").Status.DesiredWorkerReplicas).To(BeEquivalentTo(1))
	})
})

var _ = Describe("the Recreate upgrade strategy", func() {
	It("recreates every pod on an image change but not on a replicas change", func(ctx context.Context) {
		ns := world.NewNamespace(ctx)
		Expect(k8s.Create(ctx, builders.RayCluster("rec", ns).Recreate().Obj())).To(Succeed())
		world.WaitReady(ctx, ns, "rec")
		oldHead := world.HeadPods(ctx, ns, "rec")[0]
		oldWorker := world.WorkerPods(ctx, ns, "rec", "workers")[0]
		hash := oldHead.Annotations[rayv1.HashWithoutReplicasAndWorkersToDeleteKey]
		Expect(hash).NotTo(BeEmpty())
		Expect(oldHead.Annotations).To(HaveKeyWithValue(rayv1.KubeRayVersionKey, "dev"))

		By("more replicas: the existing pods stay")
		world.Update(ctx, ns, "rec", func(rc *rayv1.RayCluster) { rc.Spec.WorkerGroupSpecs[0].Replicas = ptr.To[int32](2) })
		Eventually(world.PodCount(ctx, ns, "rec", "workers")).Should(Equal(2))
		Consistently(func() []string { return rctest.Names(world.Pods(ctx, ns, "rec")) }, time.Second).Should(ContainElements(oldHead.Name, oldWorker.Name))

		By("a new image: every pod is replaced")
		world.Update(ctx, ns, "rec", func(rc *rayv1.RayCluster) {
			rc.Spec.HeadGroupSpec.Template.Spec.Containers[0].Image = "rayproject/ray:2.53.0"
			rc.Spec.WorkerGroupSpecs[0].Template.Spec.Containers[0].Image = "rayproject/ray:2.53.0"
		})
		Eventually(func() []string { return rctest.Names(world.Pods(ctx, ns, "rec")) }).ShouldNot(ContainElements(oldHead.Name))
		world.WaitReady(ctx, ns, "rec")
		Eventually(func() []string { return rctest.Names(world.Pods(ctx, ns, "rec")) }).Should(HaveLen(3))
		for _, p := range world.Pods(ctx, ns, "rec") {
			Expect(p.Spec.Containers[0].Image).To(Equal("rayproject/ray:2.53.0"), p.Name)
		}
		newHead := world.HeadPods(ctx, ns, "rec")[0]
		Expect(newHead.Annotations[rayv1.HashWithoutReplicasAndWorkersToDeleteKey]).NotTo(Equal(hash))
		Consistently(func() int { return len(world.Pods(ctx, ns, "rec")) }, time.Second).Should(Equal(3))
	})

	It("re-stamps a head pod built by another operator version instead of recreating it", func(ctx context.Context) {
		ns := world.NewNamespace(ctx)
		Expect(k8s.Create(ctx, builders.RayCluster("old", ns).Recreate().Obj())).To(Succeed())
		world.WaitReady(ctx, ns, "old")
		head := world.HeadPods(ctx, ns, "old")[0]
		hash := head.Annotations[rayv1.HashWithoutReplicasAndWorkersToDeleteKey]
		head.Annotations[rayv1.KubeRayVersionKey] = "v0.9.0"
		head.Annotations[rayv1.HashWithoutReplicasAndWorkersToDeleteKey] = "hash-computed-by-v0.9.0"
		Expect(k8s.Update(ctx, &head)).To(Succeed())

		Eventually(func() map[string]string { return world.HeadPods(ctx, ns, "old")[0].Annotations }).Should(And(
			HaveKeyWithValue(rayv1.KubeRayVersionKey, "dev"), HaveKeyWithValue(rayv1.HashWithoutReplicasAndWorkersToDeleteKey, hash)))
		Consistently(func() string { return world.HeadPods(ctx, ns, "old")[0].Name }, time.Second).Should(Equal(head.Name))
	})
})
