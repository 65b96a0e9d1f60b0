package batchscheduler

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
)

// pluginsSample is shaped like KubeRay's scheduler-plugins sample: a RayCluster labelled for
// gang scheduling.
const pluginsSample = `apiVersion: ray.io/v1
kind: RayCluster
metadata:
  name: test-podgroup-0
  labels:
    ray.io/gang-scheduling-enabled: "true"
spec:
  rayVersion: "2.46.0"
  headGroupSpec:
    rayStartParams: {}
    template:
      spec:
        containers:
        - name: ray-head
          image: rayproject/ray:2.46.0
          resources:
            limits: {cpu: "1", memory: 2Gi}
            requests: {cpu: "1", memory: 2Gi}
  workerGroupSpecs:
  - groupName: worker
    rayStartParams: {}
    replicas: 2
    minReplicas: 2
    maxReplicas: 2
    template:
      spec:
        containers:
        - name: ray-worker
          image: rayproject/ray:2.46.0
          resources:
            limits: {cpu: "1", memory: 1Gi}
            requests: {cpu: "1", memory: 1Gi}
`

// The scheduler-plugins CRD is installed only in this container's second spec: the first
// runs raygate before it exists.
var _ = Describe("raygate --batch-scheduler=scheduler-plugins", Ordered, func() {
	var ns string
	const name = "test-podgroup-0"

	BeforeAll(func(ctx context.Context) { ns = newNamespace(ctx) })

	It("reports a missing PodGroup CRD on the cluster and creates no pods, without crashing", func(ctx context.Context) {
		startRaygate("scheduler-plugins")
		Expect(apply(ctx, ns, pluginsSample)).NotTo(ContainSubstring("Warning"))

		Eventually(events(ctx, ns, name)).Should(ContainElement(
			"Warning FailedToSyncPodGroup: No pods are created: the PodGroup CRD is not installed: podgroups.scheduling.x-k8s.io is not served by the API server (it was not when raygate started); install scheduler-plugins, then restart raygate, or run raygate without --batch-scheduler=scheduler-plugins"))
		Eventually(func() string {
			c := meta(cluster(ctx, ns, name)().Status.Conditions, rayv1.RayClusterReplicaFailure)
			if c == nil {
				return ""
			}
			return string(c.Status) + "/" + c.Reason
		}).Should(Equal("True/FailedToSyncPodGroup"))
		Consistently(pods(ctx, ns, name), time.Second).Should(BeEmpty())
	})

	It("creates the PodGroup and the pods once the CRD is installed and raygate restarted", func(ctx context.Context) {
		installCRDs("scheduler-plugins-crds")
		startRaygate("scheduler-plugins")

		rc := cluster(ctx, ns, name)()
		Eventually(podGroup(ctx, pluginsPodGroup, ns, name)).Should(And(
			field(BeEquivalentTo(3), "spec", "minMember"),
			field(Equal(map[string]any{"cpu": "3", "memory": "4Gi"}), "spec", "minResources"),
			WithTransform(ownerUIDs, ConsistOf(rc.UID)),
		))
		Eventually(pods(ctx, ns, name)).Should(HaveLen(3))
		for _, p := range pods(ctx, ns, name)() {
			Expect(p.Spec.SchedulerName).To(Equal("scheduler-plugins-scheduler"), p.Name)
			Expect(p.Labels).To(HaveKeyWithValue("scheduling.x-k8s.io/pod-group", name), p.Name)
		}
		Eventually(func() *metav1.Condition {
			return meta(cluster(ctx, ns, name)().Status.Conditions, rayv1.RayClusterReplicaFailure)
		}).Should(BeNil(), "the failure is cleared")
	})

	It("gives a cluster without the gang label no PodGroup, but still hands its pods to the scheduler", func(ctx context.Context) {
		startRaygate("scheduler-plugins")
		stderr := apply(ctx, ns, `apiVersion: ray.io/v1
kind: RayCluster
metadata:
  name: plain
  labels:
    volcano.sh/queue-name: q
spec:
  headGroupSpec:
    rayStartParams: {}
    template:
      spec:
        containers:
        - name: ray-head
          image: rayproject/ray:2.46.0
`)
		Expect(stderr).To(ContainSubstring("Warning: metadata.labels[volcano.sh/queue-name] is for the volcano batch scheduler, but raygate runs with --batch-scheduler=scheduler-plugins; the label is ignored"))
		Eventually(pods(ctx, ns, "plain")).Should(ConsistOf(WithTransform(func(p corev1.Pod) string { return p.Spec.SchedulerName }, Equal("scheduler-plugins-scheduler"))))
		Expect(podGroup(ctx, pluginsPodGroup, ns, "plain")()).To(BeNil())
		Expect(pods(ctx, ns, "plain")()[0].Labels).NotTo(HaveKey("scheduling.x-k8s.io/pod-group"))
	})
})

func meta(conds []metav1.Condition, t rayv1.RayClusterConditionType) *metav1.Condition {
	for i := range conds {
		if conds[i].Type == string(t) {
			return &conds[i]
		}
	}
	return nil
}
