package raycluster

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/testenv/framework"
	"github.com/raygate/raygate/test/builders"
	"github.com/raygate/raygate/test/integration/internal/rctest"
)

var _ = Describe("unhealthy pods", func() {
	It("replaces a failed head pod", func(ctx context.Context) {
		ns := world.NewNamespace(ctx)
		Expect(k8s.Create(ctx, builders.RayCluster("hf", ns).Obj())).To(Succeed())
		world.WaitReady(ctx, ns, "hf")
		old := world.HeadPods(ctx, ns, "hf")[0].Name
		Expect(kubelet.FailPod(ctx, ns, old)).To(Succeed())
		Eventually(func() []string { return rctest.Names(world.HeadPods(ctx, ns, "hf")) }).Should(And(HaveLen(1), Not(ContainElement(old))))
		Eventually(world.Status(ctx, ns, "hf")).Should(rctest.HaveCondition(rayv1.HeadPodReady, metav1.ConditionTrue, rayv1.HeadPodRunningAndReady))
		Eventually(world.Events(ctx, ns, "hf")).Should(ContainElement(And(ContainSubstring("Normal DeletedHeadPod"), ContainSubstring("terminal phase Failed"))))
	})

	It("replaces a worker whose Ray container exited under restartPolicy Never, and leaves it to the kubelet otherwise", func(ctx context.Context) {
		ns := world.NewNamespace(ctx)
		never := builders.WorkerGroup("never", 1)
		never.Template.Spec.RestartPolicy = corev1.RestartPolicyNever
		always := builders.WorkerGroup("always", 1)
		always.Template.Spec.RestartPolicy = corev1.RestartPolicyAlways
		Expect(k8s.Create(ctx, builders.RayCluster("rcx", ns).WorkerGroups(never, always).Obj())).To(Succeed())
		world.WaitReady(ctx, ns, "rcx")
		n := world.WorkerPods(ctx, ns, "rcx", "never")[0].Name
		a := world.WorkerPods(ctx, ns, "rcx", "always")[0].Name
		Expect(kubelet.TerminateRayContainer(ctx, ns, n, 1)).To(Succeed())
		Expect(kubelet.TerminateRayContainer(ctx, ns, a, 1)).To(Succeed())
		Eventually(func() []string { return rctest.Names(world.WorkerPods(ctx, ns, "rcx", "never")) }).Should(And(HaveLen(1), Not(ContainElement(n))))
		Consistently(func() []string { return rctest.Names(world.WorkerPods(ctx, ns, "rcx", "always")) }, time.Second).Should(Equal([]string{a}))
	})

	It("does not restart the head of a provisioned cluster annotated disable-provisioned-head-restart", func(ctx context.Context) {
		ns := world.NewNamespace(ctx)
		rc := builders.RayCluster("skip", ns).Annotation(rayv1.DisableProvisionedHeadRestartKey, "true").Obj()
		Expect(k8s.Create(ctx, rc)).To(Succeed())
		world.WaitReady(ctx, ns, "skip")
		Expect(kubelet.DeletePod(ctx, ns, world.HeadPods(ctx, ns, "skip")[0].Name)).To(Succeed())
		Eventually(world.Status(ctx, ns, "skip")).Should(rctest.HaveCondition(rayv1.HeadPodReady, metav1.ConditionFalse, rayv1.HeadPodNotFound))
		Consistently(func() int { return len(world.HeadPods(ctx, ns, "skip")) }, 2*time.Second).Should(BeZero())
		Eventually(world.Events(ctx, ns, "skip")).Should(ContainElement(ContainSubstring("Normal SkippedHeadPodRestart")))
	})

	It("reports more than one head pod and deletes neither", func(ctx context.Context) {
		ns := world.NewNamespace(ctx)
		Expect(k8s.Create(ctx, builders.RayCluster("two", ns).Obj())).To(Succeed())
		world.WaitReady(ctx, ns, "two")
		extra := world.HeadPods(ctx, ns, "two")[0].DeepCopy()
		// Controlled by the cluster (a pod that only carries its labels does not count).
		extra.ObjectMeta = metav1.ObjectMeta{Name: "two-extra-head", Namespace: ns, Labels: extra.Labels, OwnerReferences: extra.OwnerReferences}
		extra.Status = corev1.PodStatus{}
		Expect(k8s.Create(ctx, extra)).To(Succeed())

		Eventually(world.Status(ctx, ns, "two")).Should(And(
			rctest.HaveCondition(rayv1.RayClusterReplicaFailure, metav1.ConditionTrue, rayv1.MultipleHeadPods),
			rctest.HaveCondition(rayv1.HeadPodReady, metav1.ConditionFalse, rayv1.MultipleHeadPods),
			WithTransform(func(s rayv1.RayClusterStatus) string { return s.Reason }, ContainSubstring("2 head pods found"))))
		Consistently(func() int { return len(world.HeadPods(ctx, ns, "two")) }, time.Second).Should(Equal(2), "raygate never picks a head to delete")
		Eventually(world.Events(ctx, ns, "two")).Should(ContainElement(ContainSubstring("Warning MultipleHeadPods")))

		Expect(k8s.Delete(ctx, extra)).To(Succeed())
		Eventually(world.Status(ctx, ns, "two")).Should(And(
			WithTransform(func(s rayv1.RayClusterStatus) *metav1.Condition {
				return rctest.Condition(s, rayv1.RayClusterReplicaFailure)
			}, BeNil()),
			rctest.HaveCondition(rayv1.HeadPodReady, metav1.ConditionTrue, rayv1.HeadPodRunningAndReady)))
	})

	It("reports the head container's own reason, e.g. ImagePullBackOff", func(ctx context.Context) {
		ns := world.NewNamespace(ctx)
		Expect(kubelet.SetBehavior(ctx, func(p *corev1.Pod) bool { return p.Namespace == ns && p.Labels[rayv1.NodeTypeLabelKey] == "head" }, framework.ImagePullBackOff)).To(Succeed())
		DeferCleanup(kubelet.ResetBehaviors)
		Expect(k8s.Create(ctx, builders.RayCluster("pull", ns).Image("rayproject/ray:no-such-tag").Obj())).To(Succeed())
		Eventually(world.Status(ctx, ns, "pull")).Should(And(
			rctest.HaveCondition(rayv1.HeadPodReady, metav1.ConditionFalse, "ImagePullBackOff"),
			rctest.HaveCondition(rayv1.RayClusterProvisioned, metav1.ConditionFalse, rayv1.RayClusterPodsProvisioning)))
		Expect(rctest.Condition(world.Get(ctx, ns, "pull").Status, rayv1.HeadPodReady).Message).To(ContainSubstring("no-such-tag"))
	})
})

var _ = Describe("a failed pod creation", func() {
	It("sets ReplicaFailure with a Warning event, and removes it once pods can be created", func(ctx context.Context) {
		ns := world.NewNamespace(ctx)
		quota := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "two-pods", Namespace: ns},
			Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("2")}}}
		Expect(k8s.Create(ctx, quota)).To(Succeed())
		// No quota controller runs in envtest: publish the quota's status as it would.
		quota.Status = corev1.ResourceQuotaStatus{Hard: quota.Spec.Hard, Used: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("0")}}
		Expect(k8s.Status().Update(ctx, quota)).To(Succeed())

		Expect(k8s.Create(ctx, builders.RayCluster("quota", ns).WorkerGroups(builders.WorkerGroup("workers", 3)).Obj())).To(Succeed())
		Eventually(world.Status(ctx, ns, "quota")).Should(rctest.HaveCondition(rayv1.RayClusterReplicaFailure, metav1.ConditionTrue, rayv1.FailedCreateWorkerPod))
		Expect(world.Get(ctx, ns, "quota").Status.Reason).To(ContainSubstring("exceeded quota"))
		Eventually(world.Events(ctx, ns, "quota")).Should(ContainElement(And(ContainSubstring("Warning FailedToCreateWorkerPod"), ContainSubstring("exceeded quota"))))

		Expect(k8s.Delete(ctx, quota)).To(Succeed())
		Eventually(world.Status(ctx, ns, "quota"), 30*time.Second).Should(And(rctest.StateIs(rayv1.Ready),
			WithTransform(func(s rayv1.RayClusterStatus) *metav1.Condition {
				return rctest.Condition(s, rayv1.RayClusterReplicaFailure)
			}, BeNil()),
			WithTransform(func(s rayv1.RayClusterStatus) string { return s.Reason }, BeEmpty())))
	})
})

var _ = Describe("an invalid RayCluster stored without the webhook", func() {
	It("gets reason ValidationFailed and a Warning event, and no pods", func(ctx context.Context) {
		ns := world.NewNamespace(ctx)
		bad := builders.RayCluster("bad", ns).Obj()
		bad.Spec.WorkerGroupSpecs[0].MinReplicas = ptr.To[int32](5)
		bad.Spec.WorkerGroupSpecs[0].MaxReplicas = ptr.To[int32](2)
		Expect(k8s.Create(ctx, bad)).To(Succeed())
		Eventually(world.Status(ctx, ns, "bad")).Should(WithTransform(func(s rayv1.RayClusterStatus) string { return s.Reason },
			And(HavePrefix(rayv1.ValidationFailed+": "), ContainSubstring("spec.workerGroupSpecs[0].maxReplicas"))))
		Eventually(world.Events(ctx, ns, "bad")).Should(ContainElement(And(ContainSubstring("Warning ValidationFailed"), ContainSubstring("maxReplicas"))))
		Consistently(func() int { return len(world.Pods(ctx, ns, "bad")) }, time.Second).Should(BeZero())

		By("fixing the spec lets the controller act")
		world.Update(ctx, ns, "bad", func(rc *rayv1.RayCluster) { rc.Spec.WorkerGroupSpecs[0].MaxReplicas = ptr.To[int32](10) })
		world.WaitReady(ctx, ns, "bad")
		Expect(world.Get(ctx, ns, "bad").Status.Reason).To(BeEmpty())
	})

	It("leaves a cluster managed by another controller alone", func(ctx context.Context) {
		ns := world.NewNamespace(ctx)
		rc := builders.RayCluster("kueue", ns).Obj()
		rc.Spec.ManagedBy = ptr.To("kueue.x-k8s.io/multikueue")
		Expect(k8s.Create(ctx, rc)).To(Succeed())
		Consistently(func() int { return len(world.Pods(ctx, ns, "kueue")) }, 2*time.Second).Should(BeZero())
		Expect(world.Get(ctx, ns, "kueue").Status.ObservedGeneration).To(BeZero(), "its status belongs to the other controller")
	})
})
