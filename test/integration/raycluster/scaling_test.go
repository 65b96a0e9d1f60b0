package raycluster

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/test/builders"
	"github.com/raygate/raygate/test/integration/internal/rctest"
)

var _ = Describe("scaling", func() {
	It("scales a worker group up and down, clamped to [minReplicas, maxReplicas]", func(ctx context.Context) {
		ns := world.NewNamespace(ctx)
		Expect(k8s.Create(ctx, builders.RayCluster("scale", ns).Obj())).To(Succeed())
		world.WaitReady(ctx, ns, "scale")

		world.Update(ctx, ns, "scale", func(rc *rayv1.RayCluster) { rc.Spec.WorkerGroupSpecs[0].Replicas = ptr.To[int32](4) })
		Eventually(world.PodCount(ctx, ns, "scale", "workers")).Should(Equal(4))
		Eventually(world.Status(ctx, ns, "scale")).Should(WithTransform(func(s rayv1.RayClusterStatus) int32 { return s.ReadyWorkerReplicas }, BeEquivalentTo(4)))
		Expect(world.Get(ctx, ns, "scale").Status.DesiredWorkerReplicas).To(BeEquivalentTo(4))

		world.Update(ctx, ns, "scale", func(rc *rayv1.RayCluster) { rc.Spec.WorkerGroupSpecs[0].Replicas = ptr.To[int32](1) })
		Eventually(world.PodCount(ctx, ns, "scale", "workers")).Should(Equal(1))
		Consistently(world.PodCount(ctx, ns, "scale", "workers"), time.Second).Should(Equal(1), "no extra deletes or creates from a stale cache")

		world.Update(ctx, ns, "scale", func(rc *rayv1.RayCluster) { rc.Spec.WorkerGroupSpecs[0].Replicas = ptr.To[int32](30) })
		Eventually(world.PodCount(ctx, ns, "scale", "workers")).Should(Equal(10), "replicas above maxReplicas are clamped")
		Consistently(world.PodCount(ctx, ns, "scale", "workers"), time.Second).Should(Equal(10))
		Eventually(world.Events(ctx, ns, "scale")).Should(ContainElement(ContainSubstring("Normal DeletedWorkerPod")))
	})

	It("deletes the workers listed in workersToDelete, then clears the list", func(ctx context.Context) {
		ns := world.NewNamespace(ctx)
		rc := builders.RayCluster("wtd", ns).WorkerGroups(builders.WorkerGroup("workers", 3)).Obj()
		Expect(k8s.Create(ctx, rc)).To(Succeed())
		world.WaitReady(ctx, ns, "wtd")
		victim := world.WorkerPods(ctx, ns, "wtd", "workers")[1].Name

		world.Update(ctx, ns, "wtd", func(rc *rayv1.RayCluster) {
			rc.Spec.WorkerGroupSpecs[0].Replicas = ptr.To[int32](2)
			rc.Spec.WorkerGroupSpecs[0].ScaleStrategy.WorkersToDelete = []string{victim, "not-a-pod-of-this-cluster"}
		})
		Eventually(func() []string { return rctest.Names(world.WorkerPods(ctx, ns, "wtd", "workers")) }).Should(And(HaveLen(2), Not(ContainElement(victim))))
		Eventually(func() []string {
			return world.Get(ctx, ns, "wtd").Spec.WorkerGroupSpecs[0].ScaleStrategy.WorkersToDelete
		}).Should(BeEmpty())
		Consistently(world.PodCount(ctx, ns, "wtd", "workers"), time.Second).Should(Equal(2))
	})
})

var _ = Describe("the in-tree autoscaler", func() {
	It("gets a sidecar and least-privilege RBAC, and decides which workers go", func(ctx context.Context) {
		ns := world.NewNamespace(ctx)
		rc := builders.RayCluster("auto", ns).Autoscaling().WorkerGroups(builders.WorkerGroup("workers", 2)).Obj()
		Expect(k8s.Create(ctx, rc)).To(Succeed())
		world.WaitReady(ctx, ns, "auto")

		head := world.HeadPods(ctx, ns, "auto")[0]
		Expect(head.Spec.Containers).To(HaveLen(2))
		Expect(head.Spec.Containers[1].Name).To(Equal("autoscaler"))
		Expect(head.Spec.ServiceAccountName).To(Equal("auto"))
		sa := &corev1.ServiceAccount{}
		Expect(k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: "auto"}, sa)).To(Succeed())
		role := &rbacv1.Role{}
		Expect(k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: "auto"}, role)).To(Succeed())
		Expect(role.Rules).To(ConsistOf(
			rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "list", "watch", "patch"}},
			rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"pods/resize"}, Verbs: []string{"patch"}},
			rbacv1.PolicyRule{APIGroups: []string{"ray.io"}, Resources: []string{"rayclusters"}, ResourceNames: []string{"auto"}, Verbs: []string{"get", "patch"}},
		))
		rb := &rbacv1.RoleBinding{}
		Expect(k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: "auto"}, rb)).To(Succeed())
		Expect(rb.Subjects).To(Equal([]rbacv1.Subject{{Kind: "ServiceAccount", Name: "auto", Namespace: ns}}))
		Expect(rb.RoleRef).To(Equal(rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "auto"}))

		By("a lower replica count alone removes nothing: the autoscaler names the workers")
		world.Update(ctx, ns, "auto", func(rc *rayv1.RayCluster) { rc.Spec.WorkerGroupSpecs[0].Replicas = ptr.To[int32](1) })
		Consistently(world.PodCount(ctx, ns, "auto", "workers"), 2*time.Second).Should(Equal(2))

		By("workersToDelete removes the named worker")
		victim := world.WorkerPods(ctx, ns, "auto", "workers")[0].Name
		world.Update(ctx, ns, "auto", func(rc *rayv1.RayCluster) {
			rc.Spec.WorkerGroupSpecs[0].ScaleStrategy.WorkersToDelete = []string{victim}
		})
		Eventually(func() []string { return rctest.Names(world.WorkerPods(ctx, ns, "auto", "workers")) }).Should(And(HaveLen(1), Not(ContainElement(victim))))
		Eventually(func() []string {
			return world.Get(ctx, ns, "auto").Spec.WorkerGroupSpecs[0].ScaleStrategy.WorkersToDelete
		}).Should(BeEmpty())

		By("converged with the autoscaler objects, a reconcile writes nothing")
		Eventually(world.Status(ctx, ns, "auto")).Should(WithTransform(func(s rayv1.RayClusterStatus) int32 { return s.ReadyWorkerReplicas }, BeEquivalentTo(1)))
		world.ExpectQuiet()
		before := rctest.ReconcileCount()
		world.Update(ctx, ns, "auto", func(rc *rayv1.RayCluster) { rc.Labels = map[string]string{"touch": "1"} })
		Eventually(rctest.ReconcileCount).Should(BeNumerically(">", before))
		Consistently(world.WritesIn(ns), 2*time.Second).Should(BeEmpty())
	})
})
