package raycluster

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/features"
	"github.com/raygate/raygate/test/builders"
	"github.com/raygate/raygate/test/integration/internal/rctest"
)

// readyPods counts the pods whose Ready condition is true.
func readyPods(ps []corev1.Pod) int {
	n := 0
	for _, p := range ps {
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
				n++
			}
		}
	}
	return n
}

// replicasOf maps replica name → sorted "replica-index/host-index" of its pods.
func replicasOf(ps []corev1.Pod) map[string][]string {
	out := map[string][]string{}
	for _, p := range ps {
		n := p.Labels[rayv1.WorkerReplicaNameLabelKey]
		out[n] = append(out[n], p.Labels[rayv1.WorkerReplicaIndexLabelKey]+"/"+p.Labels[rayv1.ReplicaHostIndexLabelKey])
	}
	return out
}

var _ = Describe("a multi-host worker group (RayMultiHostIndexing)", func() {
	It("is managed in whole replicas with replica and host indices", func(ctx context.Context) {
		rctest.SetGate(features.RayMultiHostIndexing, true)
		ns := world.NewNamespace(ctx)
		g := builders.WorkerGroup("tpu", 2)
		g.NumOfHosts = 2
		Expect(k8s.Create(ctx, builders.RayCluster("mh", ns).WorkerGroups(g).Obj())).To(Succeed())
		world.WaitReady(ctx, ns, "mh")

		reps := replicasOf(world.WorkerPods(ctx, ns, "mh", "tpu"))
		Expect(reps).To(HaveLen(2))
		var lost string
		for name, hosts := range reps {
			Expect(hosts).To(Or(ConsistOf("0/0", "0/1"), ConsistOf("1/0", "1/1")), name)
			if hosts[0][0] == '0' {
				lost = name
			}
		}

		By("losing one pod replaces its whole replica, reusing the free index")
		var victim string
		for _, p := range world.WorkerPods(ctx, ns, "mh", "tpu") {
			if p.Labels[rayv1.WorkerReplicaNameLabelKey] == lost {
				victim = p.Name
			}
		}
		Expect(kubelet.DeletePod(ctx, ns, victim)).To(Succeed())
		Eventually(func() map[string][]string { return replicasOf(world.WorkerPods(ctx, ns, "mh", "tpu")) }).Should(And(
			HaveLen(2), Not(HaveKey(lost)), ContainElement(ConsistOf("0/0", "0/1")), ContainElement(ConsistOf("1/0", "1/1"))))
		// The cluster's state stayed ready through the replacement, so wait for the new
		// replica's pods themselves: scaling down removes a replica that is not ready first.
		Eventually(func() int { return readyPods(world.WorkerPods(ctx, ns, "mh", "tpu")) }).Should(Equal(4))

		By("scaling down removes a whole replica")
		world.Update(ctx, ns, "mh", func(rc *rayv1.RayCluster) { rc.Spec.WorkerGroupSpecs[0].Replicas = ptr.To[int32](1) })
		Eventually(func() map[string][]string { return replicasOf(world.WorkerPods(ctx, ns, "mh", "tpu")) }).Should(And(
			HaveLen(1), ContainElement(ConsistOf("0/0", "0/1"))))
		Consistently(world.PodCount(ctx, ns, "mh", "tpu"), time.Second).Should(Equal(2))
	})
})
