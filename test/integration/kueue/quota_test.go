package kueue

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
)

// flavorsOf lists the flavor node label each pod is bound to by its node selector.
func flavorsOf(pods []corev1.Pod) []string {
	out := make([]string, 0, len(pods))
	for _, p := range pods {
		out = append(out, p.Spec.NodeSelector[flavorLabel])
	}
	return out
}

// setCPUQuota is a JSON patch of the CPU quota of a ClusterQueue made by newQueue.
func setCPUQuota(cpu string) string {
	return `[{"op":"replace","path":"/spec/resourceGroups/0/flavors/0/resources/0/nominalQuota","value":"` + cpu + `"}]`
}

var _ = Describe("RayClusters queued by Kueue", func() {
	It("keeps a cluster over quota suspended with no pods, and starts it once quota frees", func(ctx context.Context) {
		ns := newQueue(ctx, "ray", "4")

		By("a cluster that fits (2 CPUs of 4) is admitted and started on the flavor's nodes")
		Expect(kubectlOK(ctx, rayCluster("first", ns, 1, queued("ray", ""), ""), "apply", "-f", "-")).To(Equal("raycluster.ray.io/first created\n"))
		Eventually(workloadCondition(ctx, ns, "first", "Admitted")).Should(HavePrefix("True Admitted:"))
		Eventually(clusterState(ctx, ns, "first")).Should(Equal("false ready False"))
		Expect(flavorsOf(clusterPods(ctx, ns, "first")())).To(Equal([]string{flavor, flavor}), "Kueue's node selector reaches the pods")

		By("a cluster that does not fit next to it (3 more CPUs) waits, suspended, and raygate creates nothing for it")
		expectQuiet()
		Expect(kubectlOK(ctx, rayCluster("second", ns, 2, queued("ray", ""), ""), "apply", "-f", "-")).To(Equal("raycluster.ray.io/second created\n"))
		Eventually(workloadCondition(ctx, ns, "second", "QuotaReserved")).Should(Equal(
			"False Pending: couldn't assign flavors to pod set workers: insufficient unused quota for cpu in flavor on-demand, 1 more needed"))
		Eventually(clusterState(ctx, ns, "second")).Should(Equal("true suspended True"), "raygate has seen the suspended cluster")
		Eventually(func() (bool, error) { return mgr.Idle("raycluster") }).Should(BeTrue())
		GinkgoWriter.Printf("raygate's writes for the suspended cluster: %v\n", mgr.Writes.SnapshotIn(ns))
		Expect(mgr.Writes.SnapshotIn(ns)).NotTo(HaveKey("create pods"))
		Expect(clusterPods(ctx, ns, "second")()).To(BeEmpty())

		By("once the ClusterQueue has room (the admin raises its quota), Kueue admits the second cluster and raygate starts it")
		Expect(kubectlOK(ctx, "", "patch", "clusterqueue", ns, "--type=json", "-p", setCPUQuota("5"))).To(Equal("clusterqueue.kueue.x-k8s.io/" + ns + " patched\n"))
		Eventually(workloadCondition(ctx, ns, "second", "Admitted")).Should(HavePrefix("True Admitted:"))
		Eventually(clusterState(ctx, ns, "second")).Should(Equal("false ready False"))
		Expect(flavorsOf(clusterPods(ctx, ns, "second")())).To(Equal([]string{flavor, flavor, flavor}))
	})

	It("suspends a preempted cluster, whose pods raygate removes, and starts the preemptor", func(ctx context.Context) {
		ns := newQueue(ctx, "ray", "3")
		kubectlOK(ctx, rayCluster("low", ns, 1, queued("ray", "low"), ""), "apply", "-f", "-")
		Eventually(clusterState(ctx, ns, "low")).Should(Equal("false ready False"))
		Expect(clusterPods(ctx, ns, "low")()).To(HaveLen(2))

		kubectlOK(ctx, rayCluster("high", ns, 1, queued("ray", "high"), ""), "apply", "-f", "-")
		Eventually(workloadCondition(ctx, ns, "low", "Evicted")).Should(HavePrefix("True Preempted: Preempted to accommodate a workload"))
		Eventually(clusterPods(ctx, ns, "low")).Should(BeEmpty())
		Eventually(clusterState(ctx, ns, "low")).Should(Equal("true suspended True"))
		Expect(getCluster(ctx, ns, "low").Spec.HeadGroupSpec.Template.Spec.NodeSelector).To(BeEmpty(), "Kueue restores the templates it changed at admission")

		Eventually(clusterState(ctx, ns, "high")).Should(Equal("false ready False"))
		Expect(flavorsOf(clusterPods(ctx, ns, "high")())).To(Equal([]string{flavor, flavor}))
		Eventually(workloadCondition(ctx, ns, "low", "QuotaReserved")).Should(HavePrefix("False Pending:"), "the preempted cluster waits in the queue again")
	})

	It("leaves a cluster managed by MultiKueue alone, even once Kueue unsuspends it", func(ctx context.Context) {
		ns := newQueue(ctx, "ray", "4")
		expectQuiet()
		manifest := rayCluster("remote", ns, 1, queued("ray", ""), "managedBy: kueue.x-k8s.io/multikueue")
		Expect(kubectlOK(ctx, manifest, "apply", "-f", "-")).To(Equal("raycluster.ray.io/remote created\n"))
		Eventually(func() *bool { return getCluster(ctx, ns, "remote").Spec.Suspend }).Should(HaveValue(BeFalse()), "Kueue admitted it")

		// raygate sees the events of a cluster created later only after this one's; once it
		// has handled that one and is idle, it has decided about this one too.
		other := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "kq-"}}
		Expect(k8s.Create(ctx, other)).To(Succeed())
		kubectlOK(ctx, rayCluster("local", other.Name, 0, nil, ""), "apply", "-f", "-")
		Eventually(clusterState(ctx, other.Name, "local")).Should(Equal("unset ready False"))
		Eventually(func() (bool, error) { return mgr.Idle("raycluster") }).Should(BeTrue())

		Expect(mgr.Writes.SnapshotIn(ns)).To(BeEmpty(), "no pods, Services, events or status writes")
		Expect(getCluster(ctx, ns, "remote").Status).To(Equal(rayv1.RayClusterStatus{}))
		Expect(clusterPods(ctx, ns, "remote")()).To(BeEmpty())
	})
})
