package hostile

import (
	"context"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/controllers/raycluster"
	"github.com/raygate/raygate/internal/validation"
	"github.com/raygate/raygate/test/builders"
)

// Pods a tenant plants: the operator's pod rights must never be used on a pod the cluster
// does not control, and a pod template must not make each create in flight hold a huge pod.
// (That at most 64 creates are in flight is measured by a reconcile-level unit test,
// controllers/raycluster/inflight_test.go: this suite's pod bound of 150 per cluster is
// reached in batches of 1, 2, … 64 with or without the cap, so it cannot tell them apart.)
var _ = Describe("A tenant planting pods", func() {
	It("gives pods carrying a victim RayCluster's labels to nobody: they are neither counted nor deleted", func(ctx context.Context) {
		ns := newNamespace(ctx, "planted-")
		// Planted before the victim's cluster exists: a worker and a head with its labels,
		// no owner, and a worker claiming the victim by name with another UID.
		planted := []*corev1.Pod{
			plantedPod(ns, "planted-worker", rayv1.WorkerNode, nil),
			plantedPod(ns, "planted-head", rayv1.HeadNode, nil),
			plantedPod(ns, "planted-owner-by-name", rayv1.WorkerNode, []metav1.OwnerReference{{
				APIVersion: "ray.io/v1", Kind: rayv1.RayClusterKind, Name: "victim", UID: "0d6f0f2c-8a37-4f5e-9a4c-6a1b0a0c0d0e", Controller: ptr.To(true)}}),
		}
		for _, p := range planted {
			Expect(k8s.Create(ctx, p)).To(Succeed())
		}

		By("the victim's cluster gets its own head and both workers, and counts only those")
		wg := builders.WorkerGroup("workers", 2)
		Expect(k8s.Create(ctx, builders.RayCluster("victim", ns).WorkerGroups(wg).Obj())).To(Succeed())
		Eventually(clusterPods(ctx, ns, "victim", true)).Should(HaveLen(3))
		Eventually(clusterStatus(ctx, ns, "victim")).Should(And(
			HaveField("State", rayv1.Ready), HaveField("AvailableWorkerReplicas", int32(2)), HaveField("ReadyWorkerReplicas", int32(2))))
		Eventually(events(ctx, ns, "victim")).Should(ContainSubstring("Warning " + raycluster.EventForeignPods))
		Expect(strings.Count(events(ctx, ns, "victim")(), raycluster.EventForeignPods)).To(Equal(1), "reported once")

		By("scaling to 0 deletes the cluster's workers only")
		updateCluster(ctx, ns, "victim", func(rc *rayv1.RayCluster) { rc.Spec.WorkerGroupSpecs[0].Replicas = ptr.To[int32](0) })
		Eventually(clusterPods(ctx, ns, "victim", true)).Should(HaveLen(1))
		Eventually(clusterStatus(ctx, ns, "victim")).Should(HaveField("AvailableWorkerReplicas", int32(0)))
		expectPlanted(ctx, planted)

		By("suspending deletes the cluster's head only")
		updateCluster(ctx, ns, "victim", func(rc *rayv1.RayCluster) { rc.Spec.Suspend = ptr.To(true) })
		Eventually(clusterPods(ctx, ns, "victim", true)).Should(BeEmpty())
		Consistently(func() []string { return names(clusterPods(ctx, ns, "victim", false)()) }, 2*time.Second).
			Should(ConsistOf("planted-worker", "planted-head", "planted-owner-by-name"))
		expectPlanted(ctx, planted)
	}, SpecTimeout(3*time.Minute))

	It("refuses a pod template over the byte bound at apply, at its path", func(ctx context.Context) {
		ns := newNamespace(ctx, "bigtemplate-")
		huge := corev1.EnvVar{Name: "BLOB", Value: strings.Repeat("x", validation.MaxPodTemplateBytes)}

		rc := builders.RayCluster("huge", ns).WorkerGroups(builders.WorkerGroup("small", 1), builders.WorkerGroup("big", 1)).Obj()
		c := &rc.Spec.WorkerGroupSpecs[1].Template.Spec.Containers[0]
		c.Env = append(c.Env, huge)
		err := k8s.Create(ctx, rc)
		Expect(apierrors.IsInvalid(err)).To(BeTrue(), "%v", err)
		Expect(err.Error()).To(And(ContainSubstring("spec.workerGroupSpecs[1].template: Too long"), ContainSubstring("131072 bytes")))
		Expect(err.Error()).NotTo(ContainSubstring("workerGroupSpecs[0]"))

		svc := builders.RayService("huge", ns).Obj()
		h := &svc.Spec.RayClusterSpec.HeadGroupSpec.Template.Spec.Containers[0]
		h.Env = append(h.Env, huge)
		err = k8s.Create(ctx, svc)
		Expect(apierrors.IsInvalid(err)).To(BeTrue(), "%v", err)
		Expect(err.Error()).To(ContainSubstring("spec.rayClusterConfig.headGroupSpec.template: Too long"))

		By("a template just under the bound is accepted")
		rc = builders.RayCluster("under", ns).Obj()
		c = &rc.Spec.HeadGroupSpec.Template.Spec.Containers[0]
		c.Env = append(c.Env, corev1.EnvVar{Name: "BLOB", Value: strings.Repeat("x", validation.MaxPodTemplateBytes-4096)})
		Expect(k8s.Create(ctx, rc)).To(Succeed())
	})
})

// plantedPod is a pod a tenant creates with a RayCluster's labels.
func plantedPod(ns, name string, nodeType rayv1.RayNodeType, owners []metav1.OwnerReference) *corev1.Pod {
	labels := map[string]string{
		rayv1.ClusterLabelKey: "victim", rayv1.NodeTypeLabelKey: string(nodeType), rayv1.IsRayNodeLabelKey: "yes",
		rayv1.KubernetesCreatedByLabelKey: rayv1.ComponentName, rayv1.KubernetesApplicationNameLabelKey: rayv1.ApplicationName,
	}
	if nodeType == rayv1.WorkerNode {
		labels[rayv1.NodeGroupLabelKey] = "workers"
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels, OwnerReferences: owners},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "ray", Image: "rayproject/ray:2.52.0"}}},
	}
}

// clusterPods lists the pods with a cluster's label that are not being deleted: only those
// the cluster controls (controlled), or all of them.
func clusterPods(ctx context.Context, ns, name string, controlled bool) func() []corev1.Pod {
	return func() []corev1.Pod {
		rc := &rayv1.RayCluster{}
		Expect(k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, rc)).To(Succeed())
		var list corev1.PodList
		Expect(k8s.List(ctx, &list, client.InNamespace(ns), client.MatchingLabels{rayv1.ClusterLabelKey: name})).To(Succeed())
		var out []corev1.Pod
		for _, p := range list.Items {
			if p.DeletionTimestamp == nil && (!controlled || metav1.IsControlledBy(&p, rc)) {
				out = append(out, p)
			}
		}
		return out
	}
}

func names(pods []corev1.Pod) []string {
	out := make([]string, len(pods))
	for i := range pods {
		out[i] = pods[i].Name
	}
	return out
}

func clusterStatus(ctx context.Context, ns, name string) func() rayv1.RayClusterStatus {
	return func() rayv1.RayClusterStatus {
		rc := &rayv1.RayCluster{}
		Expect(k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, rc)).To(Succeed())
		return rc.Status
	}
}

func updateCluster(ctx context.Context, ns, name string, change func(*rayv1.RayCluster)) {
	Eventually(func() error {
		rc := &rayv1.RayCluster{}
		if err := k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, rc); err != nil {
			return err
		}
		change(rc)
		return k8s.Update(ctx, rc)
	}).Should(Succeed())
}

// expectPlanted checks that the planted pods are all still there, unchanged and not being
// deleted.
func expectPlanted(ctx context.Context, planted []*corev1.Pod) {
	GinkgoHelper()
	for _, want := range planted {
		got := &corev1.Pod{}
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(want), got)).To(Succeed(), "planted pod %s", want.Name)
		Expect(got.DeletionTimestamp).To(BeNil(), "planted pod %s is being deleted", want.Name)
		Expect(got.UID).To(Equal(want.UID), "planted pod %s was replaced", want.Name)
	}
}
