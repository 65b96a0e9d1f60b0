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
)

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
		setGate(features.RayMultiHostIndexing, true)
		ns := newNamespace(ctx)
		g := builders.WorkerGroup("tpu", 2)
		g.NumOfHosts = 2
		Expect(k8s.Create(ctx, builders.RayCluster("mh", ns).WorkerGroups(g).Obj())).To(Succeed())
		waitReady(ctx, ns, "mh")

		reps := replicasOf(workerPods(ctx, ns, "mh", "tpu"))
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
		for _, p := range workerPods(ctx, ns, "mh", "tpu") {
			if p.Labels[rayv1.WorkerReplicaNameLabelKey] == lost {
				victim = p.Name
			}
		}
		Expect(kubelet.DeletePod(ctx, ns, victim)).To(Succeed())
		Eventually(func() map[string][]string { return replicasOf(workerPods(ctx, ns, "mh", "tpu")) }).Should(And(
			HaveLen(2), Not(HaveKey(lost)), ContainElement(ConsistOf("0/0", "0/1")), ContainElement(ConsistOf("1/0", "1/1"))))
		waitReady(ctx, ns, "mh")

		By("scaling down removes a whole replica")
		updateCluster(ctx, ns, "mh", func(rc *rayv1.RayCluster) { rc.Spec.WorkerGroupSpecs[0].Replicas = ptr.To[int32](1) })
		Eventually(func() map[string][]string { return replicasOf(workerPods(ctx, ns, "mh", "tpu")) }).Should(And(
			HaveLen(1), ContainElement(ConsistOf("0/0", "0/1"))))
		Consistently(podCount(ctx, ns, "mh", "tpu"), time.Second).Should(Equal(2))
	})
})
