package raycluster

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/raygate/raygate/internal/testenv/framework"
	"github.com/raygate/raygate/test/builders"
)

// series returns the label sets of a metric for one cluster.
func series(metric, ns, cluster string) []map[string]string {
	labels, _, err := framework.MetricSeries(metric, ns, cluster)
	Expect(err).NotTo(HaveOccurred())
	return labels
}

var _ = Describe("metrics", func() {
	It("exports KubeRay's cluster metrics and drops them when the cluster is deleted", func(ctx context.Context) {
		ns := world.NewNamespace(ctx)
		rc := builders.RayCluster("m", ns).Obj()
		Expect(k8s.Create(ctx, rc)).To(Succeed())
		world.WaitReady(ctx, ns, "m")
		uid := string(world.Get(ctx, ns, "m").UID)
		Eventually(func() []map[string]string { return series("kuberay_cluster_info", ns, "m") }).Should(ConsistOf(
			map[string]string{"name": "m", "namespace": ns, "uid": uid, "owner_kind": "None"}))
		Eventually(func() []map[string]string { return series("kuberay_cluster_condition_provisioned", ns, "m") }).Should(ConsistOf(
			map[string]string{"name": "m", "namespace": ns, "uid": uid, "condition": "true"}))
		Expect(series("kuberay_cluster_provisioned_duration_seconds", ns, "m")).To(HaveLen(1))

		Expect(k8s.Delete(ctx, world.Get(ctx, ns, "m"))).To(Succeed())
		for _, name := range []string{"kuberay_cluster_info", "kuberay_cluster_condition_provisioned", "kuberay_cluster_provisioned_duration_seconds"} {
			Eventually(func() []map[string]string { return series(name, ns, "m") }).Should(BeEmpty(), name)
		}
	})
})
