package tenancy

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/raygate/raygate/test/builders"
)

// quota creates a ResourceQuota and publishes its status as the quota controller would,
// with what the namespace has used so far (no quota controller runs in this suite, and
// raygate creates no pods here).
func quota(ctx context.Context, ns, name string, hard, used corev1.ResourceList) {
	GinkgoHelper()
	q := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Spec: corev1.ResourceQuotaSpec{Hard: hard}}
	Expect(env.Client.Create(ctx, q)).To(Succeed())
	q.Status = corev1.ResourceQuotaStatus{Hard: hard, Used: used}
	Expect(env.Client.Status().Update(ctx, q)).To(Succeed())
	Eventually(func() (string, error) {
		cached := &corev1.ResourceQuota{}
		err := webhookCache.Get(ctx, client.ObjectKeyFromObject(q), cached)
		return cached.ResourceVersion, err
	}).Should(Equal(q.ResourceVersion), "the webhooks see the quota's status")
}

func resources(kv ...string) corev1.ResourceList {
	l := corev1.ResourceList{}
	for i := 0; i < len(kv); i += 2 {
		l[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return l
}

var _ = Describe("ResourceQuotas at admission", func() {
	It("warns when a cluster's pods do not fit in what a quota has left, and when a change adds pods that do not", func(ctx context.Context) {
		ns := newNamespace(ctx, "team-q", nil)
		quota(ctx, ns, "compute", resources("requests.cpu", "6", "limits.memory", "32Gi", "pods", "10"), resources("requests.cpu", "2", "limits.memory", "4Gi", "pods", "2"))
		quota(ctx, ns, "gpus", resources("requests.nvidia.com/gpu", "4"), resources("requests.nvidia.com/gpu", "0"))

		// A head of 1 CPU and 5 workers of 1 CPU, 1 GPU each.
		rc := builders.RayCluster("ray", "").Obj()
		w := &rc.Spec.WorkerGroupSpecs[0]
		w.Replicas = ptr.To[int32](5)
		w.Template.Spec.Containers[0].Resources.Limits["nvidia.com/gpu"] = resource.MustParse("1")
		stdout, stderr, err := kubectl(ctx, manifest(rc), "apply", "-n", ns, "-f", "-")
		Expect(err).NotTo(HaveOccurred(), stderr)
		Expect(stdout).To(Equal("raycluster.ray.io/ray created\n"), "quotas only warn")
		Expect(stderr).To(Equal(
			`Warning: spec: the cluster's 6 pods do not fit in ResourceQuota "compute": requests.cpu 6, 4 left (hard 6, used 2); the API server will refuse the pods that do not fit when raygate creates them` + "\n" +
				`Warning: spec: the cluster's 6 pods do not fit in ResourceQuota "gpus": requests.nvidia.com/gpu 5, 4 left (hard 4, used 0); the API server will refuse the pods that do not fit when raygate creates them` + "\n"))

		// The stored cluster's pods count in "used" once they exist; a change is measured by
		// what it adds.
		_, stderr, err = kubectl(ctx, "", "-n", ns, "patch", "raycluster", "ray", "--type=json", "-p",
			`[{"op":"replace","path":"/spec/workerGroupSpecs/0/replicas","value":3}]`)
		Expect(err).NotTo(HaveOccurred(), stderr)
		Expect(stderr).To(BeEmpty(), "scaling down adds nothing")
		_, stderr, err = kubectl(ctx, "", "-n", ns, "patch", "raycluster", "ray", "--type=json", "-p",
			`[{"op":"replace","path":"/spec/workerGroupSpecs/0/replicas","value":8}]`)
		Expect(err).NotTo(HaveOccurred(), stderr)
		Expect(stderr).To(Equal(
			`Warning: spec: the pods this change adds do not fit in ResourceQuota "compute": requests.cpu 5, 4 left (hard 6, used 2); the API server will refuse the pods that do not fit when raygate creates them` + "\n" +
				`Warning: spec: the pods this change adds do not fit in ResourceQuota "gpus": requests.nvidia.com/gpu 5, 4 left (hard 4, used 0); the API server will refuse the pods that do not fit when raygate creates them` + "\n"))
	})

	It("warns about a container a cpu or memory quota refuses for not setting it", func(ctx context.Context) {
		ns := newNamespace(ctx, "team-r", nil)
		quota(ctx, ns, "memory", resources("limits.memory", "64Gi"), nil)
		rc := builders.RayCluster("ray", "").Obj()
		rc.Spec.WorkerGroupSpecs[0].Template.Spec.Containers[0].Resources = corev1.ResourceRequirements{}
		_, stderr, err := kubectl(ctx, manifest(rc), "apply", "-n", ns, "-f", "-")
		Expect(err).NotTo(HaveOccurred(), stderr)
		Expect(stderr).To(Equal(`Warning: spec: ResourceQuota "memory" limits limits.memory, so the API server refuses pods with a container that does not set it: ray-worker` + "\n"))
	})

	It("warns when the change that starts a RayService upgrade needs more than the quota has left", func(ctx context.Context) {
		ns := newNamespace(ctx, "team-s", nil)
		// The running cluster (a head and 4 workers, 1 CPU each) uses 5 of 8 CPUs.
		quota(ctx, ns, "compute", resources("requests.cpu", "8"), resources("requests.cpu", "5"))
		svc := builders.RayService("fruit", "").Obj()
		svc.Spec.RayClusterSpec.WorkerGroupSpecs[0].Replicas = ptr.To[int32](4)
		_, stderr, err := kubectl(ctx, manifest(svc), "apply", "-n", ns, "-f", "-")
		Expect(err).NotTo(HaveOccurred(), stderr)

		_, stderr, err = kubectl(ctx, "", "-n", ns, "patch", "rayservice", "fruit", "--type=json", "-p",
			`[{"op":"replace","path":"/spec/rayClusterConfig/workerGroupSpecs/0/replicas","value":5}]`)
		Expect(err).NotTo(HaveOccurred(), stderr)
		Expect(stderr).To(BeEmpty(), "scaling starts no upgrade, and one more worker fits")

		_, stderr, err = kubectl(ctx, "", "-n", ns, "patch", "rayservice", "fruit", "--type=json", "-p",
			`[{"op":"replace","path":"/spec/rayClusterConfig/workerGroupSpecs/0/template/spec/containers/0/image","value":"rayproject/ray:2.53.0"}]`)
		Expect(err).NotTo(HaveOccurred(), stderr)
		Expect(stderr).To(Equal(`Warning: spec.rayClusterConfig: this change starts a NewCluster upgrade, which needs the new cluster's 6 pods next to the current cluster; ` +
			`they do not fit in ResourceQuota "compute": requests.cpu 6, 3 left (hard 8, used 5); the upgrade cannot finish until the quota has room` + "\n"))
	})

	It("counts an incremental upgrade's surge: the new head and maxSurgePercent of the workers", func(ctx context.Context) {
		setGate(true)
		ns := newNamespace(ctx, "team-t", nil)
		quota(ctx, ns, "compute", resources("requests.cpu", "10"), resources("requests.cpu", "9"))
		svc := builders.RayService("fruit", "").Incremental(40, 20, 30, "istio").Obj()
		svc.Spec.RayClusterSpec.WorkerGroupSpecs[0].Replicas = ptr.To[int32](5)
		_, stderr, err := kubectl(ctx, manifest(svc), "apply", "-n", ns, "-f", "-")
		Expect(err).NotTo(HaveOccurred(), stderr)
		_, stderr, err = kubectl(ctx, "", "-n", ns, "patch", "rayservice", "fruit", "--type=json", "-p",
			`[{"op":"replace","path":"/spec/rayClusterConfig/headGroupSpec/template/spec/containers/0/image","value":"rayproject/ray:2.53.0"}]`)
		Expect(err).NotTo(HaveOccurred(), stderr)
		Expect(stderr).To(ContainSubstring(`Warning: spec.rayClusterConfig: this change starts a NewClusterWithIncrementalUpgrade upgrade, which needs up to 3 more pods ` +
			`(the new cluster's head and maxSurgePercent 40% of its workers) next to the current cluster; they do not fit in ResourceQuota "compute": ` +
			`requests.cpu 3500m, 1 left (hard 10, used 9); the upgrade cannot finish until the quota has room` + "\n"))
	})
})
