package kueue

import (
	"context"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// A RayCluster with raygate's defaults left out (rayStartParams, minReplicas, maxReplicas,
// numOfHosts) and no spec.suspend, queued in LocalQueue "ray".
const undefaulted = `apiVersion: ray.io/v1
kind: RayCluster
metadata:
  name: undefaulted
  namespace: NAMESPACE
  labels:
    kueue.x-k8s.io/queue-name: ray
spec:
  headGroupSpec:
    template:
      spec:
        containers:
        - name: ray-head
          image: rayproject/ray:2.52.0
          resources:
            requests: {cpu: "1", memory: 2Gi}
  workerGroupSpecs:
  - groupName: workers
    replicas: 1
    template:
      spec:
        containers:
        - name: ray-worker
          image: rayproject/ray:2.52.0
          resources:
            requests: {cpu: "1", memory: 2Gi}
`

var _ = Describe("admission by Kueue's webhooks and raygate's together", func() {
	It("stores Kueue's suspend and raygate's defaults, and a later apply by the user keeps both", func(ctx context.Context) {
		ns := newQueue(ctx, "ray", "0") // no quota: the cluster stays queued
		manifest := strings.ReplaceAll(undefaulted, "NAMESPACE", ns)
		fields := "-o=jsonpath={.spec.suspend} {.spec.headGroupSpec.rayStartParams} {.spec.workerGroupSpecs[0].minReplicas} {.spec.workerGroupSpecs[0].maxReplicas} {.spec.workerGroupSpecs[0].numOfHosts}"

		// The object the API server returns from the create is the one it stored.
		stdout, stderr, err := kubectl(ctx, manifest, "apply", "-f", "-", fields)
		Expect(err).NotTo(HaveOccurred(), stderr)
		Expect(stderr).To(BeEmpty(), "no admission warnings")
		Expect(stdout).To(Equal("true {} 0 2147483647 1"), "suspend by Kueue; rayStartParams, minReplicas, maxReplicas, numOfHosts by raygate")
		Eventually(clusterState(ctx, ns, "undefaulted")).Should(Equal("true suspended True"))

		// An update through both webhooks (raygate's mutating webhook sees updates too).
		relabelled := strings.Replace(manifest, "  labels:\n", "  labels:\n    team: ml\n", 1)
		stdout, stderr, err = kubectl(ctx, relabelled, "apply", "-f", "-")
		Expect(err).NotTo(HaveOccurred(), stderr)
		Expect(stdout + stderr).To(Equal("raycluster.ray.io/undefaulted configured\n"))
		Expect(kubectlOK(ctx, "", "-n", ns, "get", "raycluster", "undefaulted", fields)).To(Equal("true {} 0 2147483647 1"))
		Eventually(workloadCondition(ctx, ns, "undefaulted", "QuotaReserved")).Should(HavePrefix("False Pending:"))
	})

	It("passes Kueue's refusal of an autoscaling cluster to kubectl unchanged", func(ctx context.Context) {
		ns := newQueue(ctx, "ray", "4")
		_, stderr, err := kubectl(ctx, rayCluster("autoscaling", ns, 1, queued("ray", ""), "enableInTreeAutoscaling: true"), "apply", "-f", "-")
		Expect(err).To(HaveOccurred())
		Expect(stderr).To(Equal(`Error from server (Forbidden): error when creating "STDIN": admission webhook "vraycluster.kb.io" denied the request: ` +
			"spec.enableInTreeAutoscaling: Invalid value: true: a kueue managed job can use autoscaling only when the ElasticJobsViaWorkloadSlices feature gate is on and the job is an elastic job\n"))
	})
})

const rayService = `apiVersion: ray.io/v1
kind: RayService
metadata:
  name: serve
  namespace: NAMESPACE
spec:
  serveConfigV2: |
    applications:
    - name: fruit
      route_prefix: /fruit
      import_path: fruit.deployment_graph
  rayClusterConfig:
    headGroupSpec:
      rayStartParams: {}
      template:
        spec:
          containers:
          - name: ray-head
            image: rayproject/ray:2.52.0
            resources:
              requests: {cpu: "1", memory: 2Gi}
    workerGroupSpecs:
    - groupName: workers
      replicas: 1
      minReplicas: 0
      maxReplicas: 2
      rayStartParams: {}
      template:
        spec:
          containers:
          - name: ray-worker
            image: rayproject/ray:2.52.0
            resources:
              requests: {cpu: "1", memory: 2Gi}
`

var _ = Describe("RayServices under Kueue", func() {
	// Kueue v0.15 has no RayService integration. A LocalQueue named "default" makes Kueue's
	// webhook queue every RayCluster created in its namespace without a queue name, the
	// clusters raygate creates for a RayService included.
	It("queues a RayService's cluster through the namespace's default LocalQueue; the RayService is Ready once Kueue admits it", func(ctx context.Context) {
		ns := newQueue(ctx, "default", "1") // the cluster needs 2 CPUs
		Expect(kubectlOK(ctx, strings.ReplaceAll(rayService, "NAMESPACE", ns), "apply", "-f", "-")).To(Equal("rayservice.ray.io/serve created\n"))
		var cluster string
		Eventually(func() string {
			cluster = kubectlOK(ctx, "", "-n", ns, "get", "raycluster", "-l", "ray.io/originated-from-cr-name=serve", "-o=jsonpath={.items[*].metadata.name}")
			return cluster
		}).ShouldNot(BeEmpty())
		Expect(kubectlOK(ctx, "", "-n", ns, "get", "raycluster", cluster, "-o=jsonpath={.metadata.labels.kueue\\.x-k8s\\.io/queue-name}")).To(Equal("default"))
		Eventually(workloadCondition(ctx, ns, cluster, "QuotaReserved")).Should(Equal(
			"False Pending: couldn't assign flavors to pod set workers: insufficient quota for cpu in flavor on-demand, " +
				"previously considered podsets requests (1) + current podset request (1) > maximum capacity (1)"))
		Eventually(clusterState(ctx, ns, cluster)).Should(Equal("true suspended True"))
		Expect(clusterPods(ctx, ns, cluster)()).To(BeEmpty())

		kubectlOK(ctx, "", "patch", "clusterqueue", ns, "--type=json", "-p", setCPUQuota("2"))
		Eventually(func() string {
			return kubectlOK(ctx, "", "-n", ns, "get", "rayservice", "serve", `-o=jsonpath={.status.activeServiceStatus.rayClusterName} {.status.conditions[?(@.type=="Ready")].status}`)
		}).Should(Equal(cluster + " True"))
		Expect(flavorsOf(clusterPods(ctx, ns, cluster)())).To(Equal([]string{flavor, flavor}))
	})
	// raygate copies a RayService's labels to the clusters it creates, as KubeRay does, so a
	// queue-name label on the RayService queues each of its clusters.
	It("queues a RayService's cluster in the LocalQueue its queue-name label names", func(ctx context.Context) {
		ns := newQueue(ctx, "ray", "1") // the cluster needs 2 CPUs
		labelled := strings.Replace(strings.ReplaceAll(rayService, "NAMESPACE", ns), "  namespace: "+ns+"\n",
			"  namespace: "+ns+"\n  labels:\n    kueue.x-k8s.io/queue-name: ray\n", 1)
		Expect(kubectlOK(ctx, labelled, "apply", "-f", "-")).To(Equal("rayservice.ray.io/serve created\n"))
		var cluster string
		Eventually(func() string {
			cluster = kubectlOK(ctx, "", "-n", ns, "get", "raycluster", "-l", "ray.io/originated-from-cr-name=serve", "-o=jsonpath={.items[*].metadata.name}")
			return cluster
		}).ShouldNot(BeEmpty())
		Expect(kubectlOK(ctx, "", "-n", ns, "get", "raycluster", cluster, "-o=jsonpath={.metadata.labels.kueue\\.x-k8s\\.io/queue-name}")).To(Equal("ray"))
		Eventually(workloadCondition(ctx, ns, cluster, "QuotaReserved")).Should(HavePrefix("False Pending"))
		Eventually(clusterState(ctx, ns, cluster)).Should(Equal("true suspended True"))
		Expect(clusterPods(ctx, ns, cluster)()).To(BeEmpty())

		kubectlOK(ctx, "", "patch", "clusterqueue", ns, "--type=json", "-p", setCPUQuota("2"))
		Eventually(func() string {
			return kubectlOK(ctx, "", "-n", ns, "get", "rayservice", "serve", `-o=jsonpath={.status.activeServiceStatus.rayClusterName} {.status.conditions[?(@.type=="Ready")].status}`)
		}).Should(Equal(cluster + " True"))
	})
})
