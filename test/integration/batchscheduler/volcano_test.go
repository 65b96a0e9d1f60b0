package batchscheduler

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
)

// volcanoSample is shaped like KubeRay's Volcano queue sample: a Queue and a RayCluster
// labelled for Volcano and for that queue, here with a priority class label too.
const volcanoSample = `apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata:
  name: kuberay-test-queue
spec:
  weight: 1
  capability:
    cpu: 4
    memory: 6Gi
---
apiVersion: ray.io/v1
kind: RayCluster
metadata:
  name: test-cluster-0
  labels:
    ray.io/scheduler-name: volcano
    volcano.sh/queue-name: kuberay-test-queue
    ray.io/priority-class-name: high-priority
spec:
  rayVersion: '2.46.0'
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
    replicas: 2
    minReplicas: 2
    maxReplicas: 2
    rayStartParams: {}
    template:
      spec:
        containers:
        - name: ray-worker
          image: rayproject/ray:2.46.0
          resources:
            limits: {cpu: "1", memory: 1Gi}
            requests: {cpu: "1", memory: 1Gi}
`

var _ = Describe("raygate --batch-scheduler=volcano", Ordered, func() {
	var ns string
	const name, pgName = "test-cluster-0", "ray-test-cluster-0-pg"

	BeforeAll(func(ctx context.Context) {
		startRaygate("volcano")
		ns = newNamespace(ctx)
	})

	It("gives a KubeRay Volcano sample its PodGroup and hands its pods to Volcano", func(ctx context.Context) {
		Expect(apply(ctx, ns, volcanoSample)).NotTo(ContainSubstring("Warning"))

		rc := cluster(ctx, ns, name)()
		Eventually(podGroup(ctx, volcanoPodGroup, ns, pgName)).Should(And(
			field(BeEquivalentTo(3), "spec", "minMember"),
			field(Equal(map[string]any{"cpu": "3", "memory": "4Gi"}), "spec", "minResources"),
			field(Equal("kuberay-test-queue"), "spec", "queue"),
			field(Equal("high-priority"), "spec", "priorityClassName"),
			field(Equal("Pending"), "status", "phase"),
			WithTransform(func(u *unstructured.Unstructured) []metav1.OwnerReference { return u.GetOwnerReferences() }, ConsistOf(
				metav1.OwnerReference{APIVersion: "ray.io/v1", Kind: "RayCluster", Name: name, UID: rc.UID, Controller: ptrTrue(), BlockOwnerDeletion: ptrTrue()},
			)),
		))
		Eventually(events(ctx, ns, name)).Should(ContainElement(ContainSubstring("Normal CreatedPodGroup")))

		Eventually(pods(ctx, ns, name)).Should(HaveLen(3))
		for _, p := range pods(ctx, ns, name)() {
			Expect(p.Spec.SchedulerName).To(Equal("volcano"), p.Name)
			Expect(p.Annotations).To(HaveKeyWithValue("scheduling.k8s.io/group-name", pgName), p.Name)
			Expect(p.Annotations).To(HaveKeyWithValue("volcano.sh/task-spec", p.Labels["ray.io/group"]), p.Name)
			Expect(p.Labels).To(HaveKeyWithValue("volcano.sh/queue-name", "kuberay-test-queue"), p.Name)
			Expect(p.Labels).To(HaveKeyWithValue("ray.io/priority-class-name", "high-priority"), p.Name)
		}
		Expect(pods(ctx, ns, name)()).To(ContainElement(WithTransform(func(p corev1.Pod) string { return p.Annotations["volcano.sh/task-spec"] }, Equal("headgroup"))))
	})

	It("keeps the PodGroup's minMember and minResources at the cluster's size as it scales", func(ctx context.Context) {
		_, stderr, err := kubectl(ctx, ns, "", "patch", "raycluster", name, "--type=json", "-p",
			`[{"op":"replace","path":"/spec/workerGroupSpecs/0/maxReplicas","value":3},{"op":"replace","path":"/spec/workerGroupSpecs/0/replicas","value":3}]`)
		Expect(err).NotTo(HaveOccurred(), stderr)
		Eventually(podGroup(ctx, volcanoPodGroup, ns, pgName)).Should(And(
			field(BeEquivalentTo(4), "spec", "minMember"),
			field(Equal(map[string]any{"cpu": "4", "memory": "5Gi"}), "spec", "minResources"),
			field(Equal("kuberay-test-queue"), "spec", "queue"),
		))
		Eventually(events(ctx, ns, name)).Should(ContainElement(ContainSubstring("Normal UpdatedPodGroup")))
		Eventually(pods(ctx, ns, name)).Should(HaveLen(4))
	})

	It("warns at admission about a label for another batch scheduler", func(ctx context.Context) {
		stderr := apply(ctx, ns, `apiVersion: ray.io/v1
kind: RayCluster
metadata:
  name: gang
  labels:
    ray.io/gang-scheduling-enabled: "true"
spec:
  headGroupSpec:
    rayStartParams: {}
    template:
      spec:
        containers:
        - name: ray-head
          image: rayproject/ray:2.46.0
`)
		Expect(stderr).To(ContainSubstring("Warning: metadata.labels[ray.io/gang-scheduling-enabled] is for the scheduler-plugins or yunikorn batch scheduler, but raygate runs with --batch-scheduler=volcano; the label is ignored"))
		Eventually(podGroup(ctx, volcanoPodGroup, ns, "ray-gang-pg")).Should(field(BeEquivalentTo(1), "spec", "minMember"), "every cluster gets a Volcano PodGroup")
	})

	It("recreates a PodGroup someone deleted", func(ctx context.Context) {
		old := podGroup(ctx, volcanoPodGroup, ns, pgName)()
		Expect(old).NotTo(BeNil())
		_, stderr, err := kubectl(ctx, ns, "", "delete", "podgroups.scheduling.volcano.sh", pgName)
		Expect(err).NotTo(HaveOccurred(), stderr)
		Eventually(podGroup(ctx, volcanoPodGroup, ns, pgName)).Should(And(
			Not(BeNil()),
			WithTransform(func(u *unstructured.Unstructured) types.UID { return u.GetUID() }, Not(Equal(old.GetUID()))),
			field(BeEquivalentTo(4), "spec", "minMember"),
		))
	})

	It("has the PodGroup garbage-collected with its cluster", func(ctx context.Context) {
		_, stderr, err := kubectl(ctx, ns, "", "delete", "raycluster", name)
		Expect(err).NotTo(HaveOccurred(), stderr)
		Eventually(podGroup(ctx, volcanoPodGroup, ns, pgName)).Should(BeNil())
	})
})

func ptrTrue() *bool { t := true; return &t }
