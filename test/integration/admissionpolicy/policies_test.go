package admissionpolicy

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// What kubectl prints when a policy refuses a write: the policy and binding names, then the
// policy's message with every violation by field path.
func refused(kind, name, policy, message string) string {
	return `Error from server (Forbidden): error when creating "STDIN": ` + kind + ` "` + name + `" is forbidden: ` +
		`ValidatingAdmissionPolicy '` + policy + `' with binding '` + policy + `' denied request: ` + message + "\n"
}

const (
	registriesPolicy = "raygate-system-raygate-allowed-registries"
	limitsPolicy     = "raygate-system-raygate-require-resource-limits"
	hostPolicy       = "raygate-system-raygate-forbid-host-access"
)

// Pod specs used by the tables below.
var (
	compliantHead   = pod("ray-head", rayImage, limits)
	compliantWorker = pod("ray-worker", rayImage, limits)
	// An init container from docker.io (implicit and explicit), a worker image from a
	// listed private registry.
	allowedHead   = compliantHead + "initContainers:\n- name: setup\n  image: docker.io/library/busybox:1.36\n  resources:\n    limits: {cpu: 100m, memory: 64Mi}\n"
	allowedWorker = pod("ray-worker", "registry.example.com/ray/ray:2.52.0", limits)
	foreignHead   = compliantHead + "initContainers:\n- name: setup\n  image: ghcr.io/example/setup:1\n  resources:\n    limits: {cpu: 100m, memory: 64Mi}\n"
	foreignWorker = pod("ray-worker", "quay.io/example/ray:2.52.0", limits)
	// Limits: the head's has CPU only, the worker's sidecar none.
	cpuOnlyHead     = pod("ray-head", rayImage, "resources:\n  limits: {cpu: \"1\"}\n  requests: {memory: 2Gi}")
	sidecarWorker   = compliantWorker + "- name: log-shipper\n  image: fluent/fluent-bit:3.2\n"
	hostNetworkHead = "hostNetwork: true\n" + compliantHead
	// Submitter pods of a RayJob's submitterPodTemplate.
	compliantSubmitter  = pod("submitter", "registry.example.com/tools/ray-submit:1", limits)
	foreignSubmitter    = pod("submitter", "ghcr.io/example/ray-submit:1", limits)
	noLimitsSubmitter   = pod("submitter", rayImage, "")
	privilegedSubmitter = "hostPID: true\n" + pod("submitter", rayImage, limits+"\nsecurityContext: {privileged: true}")
	hostMountedWorker   = compliantWorker + "  securityContext: {privileged: true}\n" +
		"volumes:\n- name: cache\n  emptyDir: {}\n- name: docker\n  hostPath: {path: /var/run/docker.sock}\n"
)

var _ = Describe("the chart's ValidatingAdmissionPolicies", func() {
	DescribeTable("kubectl apply of RayClusters, RayServices and RayJobs in a namespace they are bound to",
		func(ctx context.Context, manifest, wantStdout, wantStderr string) {
			stdout, stderr, _ := kubectl(ctx, manifest, "apply", "-f", "-")
			Expect(stderr).To(Equal(wantStderr))
			Expect(stdout).To(Equal(wantStdout))
		},
		Entry("allowed registries: a RayCluster with images only from docker.io and registry.example.com",
			rayCluster("images-ok", enforcedNS, allowedHead, allowedWorker), "raycluster.ray.io/images-ok created\n", ""),
		Entry("allowed registries: a RayService with images only from docker.io and registry.example.com",
			rayService("images-ok", enforcedNS, allowedHead, allowedWorker), "rayservice.ray.io/images-ok created\n", ""),
		Entry("allowed registries: a RayCluster with images from elsewhere, the autoscaler's included",
			withAutoscaler(rayCluster("images-foreign", enforcedNS, foreignHead, foreignWorker), "image: ghcr.io/example/autoscaler:1"), "",
			refused("rayclusters.ray.io", "images-foreign", registriesPolicy, "images must come from an allowed registry (docker.io, registry.example.com): "+
				`spec.headGroupSpec.template.spec.initContainers[0].image: "ghcr.io/example/setup:1" is from ghcr.io; `+
				`spec.workerGroupSpecs[0].template.spec.containers[0].image: "quay.io/example/ray:2.52.0" is from quay.io; `+
				`spec.autoscalerOptions.image: "ghcr.io/example/autoscaler:1" is from ghcr.io`)),
		Entry("allowed registries: a RayService with an image from elsewhere",
			rayService("images-foreign", enforcedNS, compliantHead, foreignWorker), "",
			refused("rayservices.ray.io", "images-foreign", registriesPolicy, "images must come from an allowed registry (docker.io, registry.example.com): "+
				`spec.rayClusterConfig.workerGroupSpecs[0].template.spec.containers[0].image: "quay.io/example/ray:2.52.0" is from quay.io`)),

		Entry("allowed registries: a RayJob whose cluster and submitter use only docker.io and registry.example.com",
			rayJob("images-ok", enforcedNS, allowedHead, allowedWorker, compliantSubmitter), "rayjob.ray.io/images-ok created\n", ""),
		Entry("allowed registries: a RayJob with a worker image and a submitter image from elsewhere",
			rayJob("images-foreign", enforcedNS, compliantHead, foreignWorker, foreignSubmitter), "",
			refused("rayjobs.ray.io", "images-foreign", registriesPolicy, "images must come from an allowed registry (docker.io, registry.example.com): "+
				`spec.rayClusterSpec.workerGroupSpecs[0].template.spec.containers[0].image: "quay.io/example/ray:2.52.0" is from quay.io; `+
				`spec.submitterPodTemplate.spec.containers[0].image: "ghcr.io/example/ray-submit:1" is from ghcr.io`)),
		Entry("allowed registries: a RayJob on an existing cluster whose submitter image is from elsewhere",
			rayJobOnCluster("images-foreign-selector", enforcedNS, "shared", foreignSubmitter), "",
			refused("rayjobs.ray.io", "images-foreign-selector", registriesPolicy, "images must come from an allowed registry (docker.io, registry.example.com): "+
				`spec.submitterPodTemplate.spec.containers[0].image: "ghcr.io/example/ray-submit:1" is from ghcr.io`)),

		Entry("resource limits: a RayCluster whose every container has CPU and memory limits",
			rayCluster("limits-ok", enforcedNS, allowedHead, compliantWorker), "raycluster.ray.io/limits-ok created\n", ""),
		Entry("resource limits: a RayService whose every container has CPU and memory limits",
			rayService("limits-ok", enforcedNS, compliantHead, compliantWorker), "rayservice.ray.io/limits-ok created\n", ""),
		Entry("resource limits: a RayCluster with a memory limit missing and a sidecar without limits",
			rayCluster("limits-missing", enforcedNS, cpuOnlyHead, sidecarWorker), "",
			refused("rayclusters.ray.io", "limits-missing", limitsPolicy, "every container needs CPU and memory limits: "+
				"spec.headGroupSpec.template.spec.containers[0].resources.limits.memory: required; "+
				"spec.workerGroupSpecs[0].template.spec.containers[1].resources.limits.cpu: required; "+
				"spec.workerGroupSpecs[0].template.spec.containers[1].resources.limits.memory: required")),
		Entry("resource limits: a RayService with a memory limit missing",
			rayService("limits-missing", enforcedNS, cpuOnlyHead, compliantWorker), "",
			refused("rayservices.ray.io", "limits-missing", limitsPolicy, "every container needs CPU and memory limits: "+
				"spec.rayClusterConfig.headGroupSpec.template.spec.containers[0].resources.limits.memory: required")),

		Entry("resource limits: a RayJob with the default submitter (it has limits) and limits on every container",
			rayJob("limits-ok", enforcedNS, compliantHead, compliantWorker, ""), "rayjob.ray.io/limits-ok created\n", ""),
		Entry("resource limits: a RayJob whose head and submitter lack limits",
			rayJob("limits-missing", enforcedNS, cpuOnlyHead, compliantWorker, noLimitsSubmitter), "",
			refused("rayjobs.ray.io", "limits-missing", limitsPolicy, "every container needs CPU and memory limits: "+
				"spec.rayClusterSpec.headGroupSpec.template.spec.containers[0].resources.limits.memory: required; "+
				"spec.submitterPodTemplate.spec.containers[0].resources.limits.cpu: required; "+
				"spec.submitterPodTemplate.spec.containers[0].resources.limits.memory: required")),

		Entry("host access: a RayCluster with an emptyDir volume and no host namespaces",
			rayCluster("host-ok", enforcedNS, compliantHead, compliantWorker+"volumes:\n- name: cache\n  emptyDir: {}\n"), "raycluster.ray.io/host-ok created\n", ""),
		Entry("host access: a RayService with no host namespaces",
			rayService("host-ok", enforcedNS, compliantHead, compliantWorker), "rayservice.ray.io/host-ok created\n", ""),
		Entry("host access: a RayCluster on the host network with a privileged worker mounting the Docker socket",
			rayCluster("host-access", enforcedNS, hostNetworkHead, hostMountedWorker), "",
			refused("rayclusters.ray.io", "host-access", hostPolicy, "Ray pods must not use host namespaces, hostPath volumes or privileged containers: "+
				"spec.headGroupSpec.template.spec.hostNetwork: must not be true; "+
				"spec.workerGroupSpecs[0].template.spec.volumes[1].hostPath: hostPath volumes are not allowed; "+
				"spec.workerGroupSpecs[0].template.spec.containers[0].securityContext.privileged: must not be true")),
		Entry("host access: a RayService on the host network",
			rayService("host-access", enforcedNS, hostNetworkHead, compliantWorker), "",
			refused("rayservices.ray.io", "host-access", hostPolicy, "Ray pods must not use host namespaces, hostPath volumes or privileged containers: "+
				"spec.rayClusterConfig.headGroupSpec.template.spec.hostNetwork: must not be true")),
		Entry("host access: a RayJob with no host namespaces",
			rayJob("host-ok", enforcedNS, compliantHead, compliantWorker, compliantSubmitter), "rayjob.ray.io/host-ok created\n", ""),
		Entry("host access: a RayJob on the host network with a privileged submitter in the host's PID namespace",
			rayJob("host-access", enforcedNS, hostNetworkHead, compliantWorker, privilegedSubmitter), "",
			refused("rayjobs.ray.io", "host-access", hostPolicy, "Ray pods must not use host namespaces, hostPath volumes or privileged containers: "+
				"spec.rayClusterSpec.headGroupSpec.template.spec.hostNetwork: must not be true; "+
				"spec.submitterPodTemplate.spec.hostPID: must not be true; "+
				"spec.submitterPodTemplate.spec.containers[0].securityContext.privileged: must not be true")),
	)

	It("lets an object stored before a policy bound its namespace be scaled and deleted, and refuses only new violations", func(ctx context.Context) {
		createNamespace(ctx, "team-legacy", "")
		legacy := rayCluster("legacy", "team-legacy", hostNetworkHead, compliantWorker)
		Expect(kubectlOK(ctx, legacy, "apply", "-f", "-")).To(Equal("raycluster.ray.io/legacy created\n"), "the namespace is not bound yet")

		kubectlOK(ctx, "", "label", "namespace", "team-legacy", enforcedLabel)
		waitEnforced(ctx, rayCluster("probe", "team-legacy", hostNetworkHead, compliantWorker), hostPolicy)

		Expect(kubectlOK(ctx, "", "-n", "team-legacy", "patch", "raycluster", "legacy", "--type=json",
			"-p", `[{"op":"replace","path":"/spec/workerGroupSpecs/0/replicas","value":2}]`)).To(Equal("raycluster.ray.io/legacy patched\n"))
		Expect(kubectlOK(ctx, "", "-n", "team-legacy", "label", "raycluster", "legacy", "team=ml")).To(Equal("raycluster.ray.io/legacy labeled\n"))

		_, stderr, err := kubectl(ctx, "", "-n", "team-legacy", "patch", "raycluster", "legacy", "--type=json",
			"-p", `[{"op":"add","path":"/spec/workerGroupSpecs/0/template/spec/hostPID","value":true}]`)
		Expect(err).To(HaveOccurred())
		Expect(stderr).To(Equal(`Error from server (Forbidden): rayclusters.ray.io "legacy" is forbidden: `+
			`ValidatingAdmissionPolicy '`+hostPolicy+`' with binding '`+hostPolicy+`' denied request: `+
			"Ray pods must not use host namespaces, hostPath volumes or privileged containers: "+
			"spec.workerGroupSpecs[0].template.spec.hostPID: must not be true\n"), "only the new violation is named")

		Expect(kubectlOK(ctx, "", "-n", "team-legacy", "delete", "raycluster", "legacy")).To(Equal(`raycluster.ray.io "legacy" deleted from team-legacy namespace` + "\n"))
	})

	It("checks an object being deleted when its spec changes, and never blocks its finalizers", func(ctx context.Context) {
		leaving := rayCluster("leaving", enforcedNS, compliantHead, compliantWorker)
		Expect(kubectlOK(ctx, leaving, "apply", "-f", "-")).To(Equal("raycluster.ray.io/leaving created\n"))
		kubectlOK(ctx, "", "-n", enforcedNS, "patch", "raycluster", "leaving", "--type=merge", "-p", `{"metadata":{"finalizers":["example.com/hold"]}}`)
		kubectlOK(ctx, "", "-n", enforcedNS, "delete", "raycluster", "leaving", "--wait=false")

		_, stderr, err := kubectl(ctx, "", "-n", enforcedNS, "patch", "raycluster", "leaving", "--type=json",
			"-p", `[{"op":"add","path":"/spec/workerGroupSpecs/0/template/spec/hostPID","value":true}]`)
		Expect(err).To(HaveOccurred())
		Expect(stderr).To(Equal(`Error from server (Forbidden): rayclusters.ray.io "leaving" is forbidden: `+
			`ValidatingAdmissionPolicy '`+hostPolicy+`' with binding '`+hostPolicy+`' denied request: `+
			"Ray pods must not use host namespaces, hostPath volumes or privileged containers: "+
			"spec.workerGroupSpecs[0].template.spec.hostPID: must not be true\n"), "the policy, not only raygate's webhook, refuses it")

		Expect(kubectlOK(ctx, "", "-n", enforcedNS, "label", "raycluster", "leaving", "phase=leaving")).To(Equal("raycluster.ray.io/leaving labeled\n"))
		Expect(kubectlOK(ctx, "", "-n", enforcedNS, "patch", "raycluster", "leaving", "--type=json", "-p", `[{"op":"remove","path":"/metadata/finalizers"}]`)).
			To(Equal("raycluster.ray.io/leaving patched\n"))
	})

	It("only warns in Warn mode, so a policy can be tried on a running cluster first", func(ctx context.Context) {
		stdout, stderr, err := kubectl(ctx, rayCluster("no-limits", trialNS, pod("ray-head", rayImage, ""), compliantWorker), "apply", "-f", "-")
		Expect(err).NotTo(HaveOccurred(), stderr)
		Expect(stdout).To(Equal("raycluster.ray.io/no-limits created\n"))
		Expect(stderr).To(Equal("Warning: Validation failed for ValidatingAdmissionPolicy 'raygate-system-trial-raygate-require-resource-limits' " +
			"with binding 'raygate-system-trial-raygate-require-resource-limits': every container needs CPU and memory limits: " +
			"spec.headGroupSpec.template.spec.containers[0].resources.limits.cpu: required; " +
			"spec.headGroupSpec.template.spec.containers[0].resources.limits.memory: required\n"))
	})

	It("leaves namespaces outside the binding's selector alone", func(ctx context.Context) {
		createNamespace(ctx, "team-free", "")
		Expect(kubectlOK(ctx, rayCluster("anything", "team-free", hostNetworkHead, foreignWorker), "apply", "-f", "-")).
			To(Equal("raycluster.ray.io/anything created\n"))
	})
})
