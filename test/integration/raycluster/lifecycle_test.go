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
)

var _ = Describe("suspend", func() {
	It("goes Suspending → Suspended with no pods, then resumes", func(ctx context.Context) {
		ns := newNamespace(ctx)
		Expect(k8s.Create(ctx, builders.RayCluster("sus", ns).Obj())).To(Succeed())
		waitReady(ctx, ns, "sus")

		// A finalizer holds the head pod while it terminates, so the Suspending step lasts.
		head := headPods(ctx, ns, "sus")[0]
		Expect(k8s.Patch(ctx, &head, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":["test.raygate.ray.io/hold"]}}`)))).To(Succeed())

		updateCluster(ctx, ns, "sus", func(rc *rayv1.RayCluster) { rc.Spec.Suspend = ptr.To(true) })
		suspending := And(
			haveCondition(rayv1.RayClusterSuspending, metav1.ConditionTrue, string(rayv1.RayClusterSuspending)),
			haveCondition(rayv1.RayClusterSuspended, metav1.ConditionFalse, string(rayv1.RayClusterSuspended)))
		Eventually(clusterStatus(ctx, ns, "sus")).Should(suspending)
		Eventually(func() []corev1.Pod { return pods(ctx, ns, "sus") }).Should(BeEmpty(), "every pod is terminating")
		Consistently(clusterStatus(ctx, ns, "sus"), time.Second).Should(suspending, "Suspended only once no pod is left")

		Expect(k8s.Patch(ctx, &head, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`)))).To(Succeed())
		Eventually(clusterStatus(ctx, ns, "sus")).Should(And(stateIs(rayv1.Suspended),
			haveCondition(rayv1.RayClusterSuspended, metav1.ConditionTrue, string(rayv1.RayClusterSuspended)),
			haveCondition(rayv1.RayClusterSuspending, metav1.ConditionFalse, string(rayv1.RayClusterSuspending)),
			haveCondition(rayv1.RayClusterProvisioned, metav1.ConditionFalse, rayv1.RayClusterPodsProvisioning)))
		Eventually(events(ctx, ns, "sus")).Should(ContainElement(ContainSubstring("Normal DeletedAllPods")))
		Consistently(func() int { return len(pods(ctx, ns, "sus")) }, time.Second).Should(BeZero(), "a suspended cluster gets no pods")

		updateCluster(ctx, ns, "sus", func(rc *rayv1.RayCluster) { rc.Spec.Suspend = ptr.To(false) })
		waitReady(ctx, ns, "sus")
		Expect(getCluster(ctx, ns, "sus").Status).To(haveCondition(rayv1.RayClusterSuspended, metav1.ConditionFalse, string(rayv1.RayClusterSuspended)))
		Expect(pods(ctx, ns, "sus")).To(HaveLen(2))
	})

	It("follows spec.suspend directly when RayClusterStatusConditions is off", func(ctx context.Context) {
		setGate(features.RayClusterStatusConditions, false)
		ns := newNamespace(ctx)
		Expect(k8s.Create(ctx, builders.RayCluster("nogate", ns).Obj())).To(Succeed())
		Eventually(clusterStatus(ctx, ns, "nogate")).Should(stateIs(rayv1.Ready))
		Expect(getCluster(ctx, ns, "nogate").Status.Conditions).To(BeEmpty())
		updateCluster(ctx, ns, "nogate", func(rc *rayv1.RayCluster) { rc.Spec.Suspend = ptr.To(true) })
		Eventually(clusterStatus(ctx, ns, "nogate")).Should(stateIs(rayv1.Suspended))
		Expect(pods(ctx, ns, "nogate")).To(BeEmpty())
		Expect(getCluster(ctx, ns, "nogate").Status.Conditions).To(BeEmpty())
		updateCluster(ctx, ns, "nogate", func(rc *rayv1.RayCluster) { rc.Spec.Suspend = ptr.To(false) })
		Eventually(func() int { return len(pods(ctx, ns, "nogate")) }).Should(Equal(2))
	})

	It("suspends a single worker group", func(ctx context.Context) {
		ns := newNamespace(ctx)
		rc := builders.RayCluster("gsus", ns).WorkerGroups(builders.WorkerGroup("a", 2), builders.WorkerGroup("b", 1)).Obj()
		Expect(k8s.Create(ctx, rc)).To(Succeed())
		waitReady(ctx, ns, "gsus")
		updateCluster(ctx, ns, "gsus", func(rc *rayv1.RayCluster) { rc.Spec.WorkerGroupSpecs[0].Suspend = ptr.To(true) })
		Eventually(podCount(ctx, ns, "gsus", "a")).Should(BeZero())
		Consistently(podCount(ctx, ns, "gsus", "b"), time.Second).Should(Equal(1))
		Expect(headPods(ctx, ns, "gsus")).To(HaveLen(1))
		Expect(getCluster(ctx, ns, "gsus").Status.DesiredWorkerReplicas).To(BeEquivalentTo(1))
	})
})

var _ = Describe("the Recreate upgrade strategy", func() {
	It("recreates every pod on an image change but not on a replicas change", func(ctx context.Context) {
		ns := newNamespace(ctx)
		Expect(k8s.Create(ctx, builders.RayCluster("rec", ns).Recreate().Obj())).To(Succeed())
		waitReady(ctx, ns, "rec")
		oldHead := headPods(ctx, ns, "rec")[0]
		oldWorker := workerPods(ctx, ns, "rec", "workers")[0]
		hash := oldHead.Annotations[rayv1.HashWithoutReplicasAndWorkersToDeleteKey]
		Expect(hash).NotTo(BeEmpty())
		Expect(oldHead.Annotations).To(HaveKeyWithValue(rayv1.KubeRayVersionKey, "dev"))

		By("more replicas: the existing pods stay")
		updateCluster(ctx, ns, "rec", func(rc *rayv1.RayCluster) { rc.Spec.WorkerGroupSpecs[0].Replicas = ptr.To[int32](2) })
		Eventually(podCount(ctx, ns, "rec", "workers")).Should(Equal(2))
		Consistently(func() []string { return names(pods(ctx, ns, "rec")) }, time.Second).Should(ContainElements(oldHead.Name, oldWorker.Name))

		By("a new image: every pod is replaced")
		updateCluster(ctx, ns, "rec", func(rc *rayv1.RayCluster) {
			rc.Spec.HeadGroupSpec.Template.Spec.Containers[0].Image = "rayproject/ray:2.53.0"
			rc.Spec.WorkerGroupSpecs[0].Template.Spec.Containers[0].Image = "rayproject/ray:2.53.0"
		})
		Eventually(func() []string { return names(pods(ctx, ns, "rec")) }).ShouldNot(ContainElements(oldHead.Name))
		waitReady(ctx, ns, "rec")
		Eventually(func() []string { return names(pods(ctx, ns, "rec")) }).Should(HaveLen(3))
		for _, p := range pods(ctx, ns, "rec") {
			Expect(p.Spec.Containers[0].Image).To(Equal("rayproject/ray:2.53.0"), p.Name)
		}
		newHead := headPods(ctx, ns, "rec")[0]
		Expect(newHead.Annotations[rayv1.HashWithoutReplicasAndWorkersToDeleteKey]).NotTo(Equal(hash))
		Consistently(func() int { return len(pods(ctx, ns, "rec")) }, time.Second).Should(Equal(3))
	})

	It("re-stamps a head pod built by another operator version instead of recreating it", func(ctx context.Context) {
		ns := newNamespace(ctx)
		Expect(k8s.Create(ctx, builders.RayCluster("old", ns).Recreate().Obj())).To(Succeed())
		waitReady(ctx, ns, "old")
		head := headPods(ctx, ns, "old")[0]
		hash := head.Annotations[rayv1.HashWithoutReplicasAndWorkersToDeleteKey]
		head.Annotations[rayv1.KubeRayVersionKey] = "v0.9.0"
		head.Annotations[rayv1.HashWithoutReplicasAndWorkersToDeleteKey] = "hash-computed-by-v0.9.0"
		Expect(k8s.Update(ctx, &head)).To(Succeed())

		Eventually(func() map[string]string { return headPods(ctx, ns, "old")[0].Annotations }).Should(And(
			HaveKeyWithValue(rayv1.KubeRayVersionKey, "dev"), HaveKeyWithValue(rayv1.HashWithoutReplicasAndWorkersToDeleteKey, hash)))
		Consistently(func() string { return headPods(ctx, ns, "old")[0].Name }, time.Second).Should(Equal(head.Name))
	})
})
