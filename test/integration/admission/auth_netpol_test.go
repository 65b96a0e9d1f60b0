package admission

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	featuregatetesting "k8s.io/component-base/featuregate/testing"

	"github.com/raygate/raygate/internal/features"
)

// tokenCluster is written as KubeRay's token authentication sample is: mode token, Ray
// 2.52.0, the autoscaler on. extra are more lines of its spec (two spaces).
func tokenCluster(name, rayVersion, extra string) string {
	return autoscaling(name, rayVersion, "  authOptions:\n    mode: token\n"+extra, "", "")
}

var _ = Describe("authentication and network isolation through kubectl", func() {
	It("admits token authentication as KubeRay's sample writes it", func(ctx context.Context) {
		stdout, stderr, err := kubectl(ctx, tokenCluster("token-auth", "2.52.0", ""), "apply", "-f", "-")
		Expect(err).NotTo(HaveOccurred(), stderr)
		Expect(stdout).To(Equal("raycluster.ray.io/token-auth created\n"))
		Expect(stderr).To(BeEmpty())
	})

	It("refuses token authentication Ray would not enforce, a Secret without token mode, and an inline token", func(ctx context.Context) {
		_, stderr, err := kubectl(ctx, tokenCluster("old-ray", "2.51.0", ""), "apply", "-f", "-")
		Expect(err).To(HaveOccurred())
		Expect(stderr).To(Equal(`The RayCluster "old-ray" is invalid: spec.rayVersion: Invalid value: "2.51.0": authOptions.mode token needs Ray 2.52.0 or newer` + "\n"))

		disabled := autoscaling("unused-secret", "2.52.0", "  authOptions:\n    mode: disabled\n    secretName: team-token\n", "", "")
		_, stderr, err = kubectl(ctx, disabled, "apply", "-f", "-")
		Expect(err).To(HaveOccurred())
		Expect(stderr).To(Equal(`The RayCluster "unused-secret" is invalid: spec.authOptions.secretName: Forbidden: a token Secret is used only with mode: token` + "\n"))

		inline := autoscaling("inline", "2.52.0", "  authOptions:\n    mode: token\n  autoscalerOptions:\n    env:\n      - name: RAY_AUTH_TOKEN\n        value: s3cret\n", "", "")
		_, stderr, err = kubectl(ctx, inline, "apply", "-f", "-")
		Expect(err).To(HaveOccurred())
		Expect(stderr).To(Equal(`The RayCluster "inline" is invalid: spec.autoscalerOptions.env[0].name: Forbidden: raygate sets RAY_AUTH_TOKEN from the cluster's token Secret when authOptions.mode is token; remove it` + "\n"))
	})

	It("admits Kubernetes-delegated token authentication with a warning about the review rights, and refuses it with a Secret or an older Ray", func(ctx context.Context) {
		const rbac = "Warning: spec.authOptions.enableK8sTokenAuth: the pods' ServiceAccount needs create on tokenreviews (authentication.k8s.io) and subjectaccessreviews (authorization.k8s.io), " +
			"which raygate does not grant; bind a ClusterRole with them to it, or Ray rejects every request\n"
		stdout, stderr, err := kubectl(ctx, tokenCluster("k8s-auth", "2.55.0", "    enableK8sTokenAuth: true\n"), "apply", "-f", "-")
		Expect(err).NotTo(HaveOccurred(), stderr)
		Expect(stdout).To(Equal("raycluster.ray.io/k8s-auth created\n"))
		Expect(stderr).To(Equal(rbac))

		_, stderr, err = kubectl(ctx, tokenCluster("k8s-auth-secret", "2.54.0", "    enableK8sTokenAuth: true\n    secretName: team-token\n"), "apply", "-f", "-")
		Expect(err).To(HaveOccurred())
		Expect(stderr).To(Equal(rbac + `The RayCluster "k8s-auth-secret" is invalid: ` + "\n" +
			`* spec.authOptions.secretName: Forbidden: no token Secret is used when enableK8sTokenAuth is true: each pod presents its ServiceAccount token; remove secretName or enableK8sTokenAuth` + "\n" +
			`* spec.rayVersion: Invalid value: "2.54.0": authOptions.enableK8sTokenAuth needs Ray 2.55.0 or newer` + "\n"))
	})

	It("warns that authOptions without a mode leaves the cluster open", func(ctx context.Context) {
		open := autoscaling("no-mode", "2.52.0", "  authOptions: {}\n", "", "")
		stdout, stderr, err := kubectl(ctx, open, "apply", "-f", "-")
		Expect(err).NotTo(HaveOccurred(), stderr)
		Expect(stdout).To(Equal("raycluster.ray.io/no-mode created\n"))
		Expect(stderr).To(Equal("Warning: spec.authOptions.mode is not set: authentication stays off (as under KubeRay, only mode: token turns it on); set mode: token to require a token\n"))
	})

	It("admits networkPolicy only with its feature gate, refuses rules the mode ignores, and warns when DNS is denied", func(ctx context.Context) {
		const dnsRule = "        - ports: [{port: 53, protocol: UDP}, {port: 53, protocol: TCP}]\n"
		policy := func(mode, headIngress string) string {
			return "  networkPolicy:\n    mode: " + mode + "\n    head:\n" + headIngress +
				"      egressRules:\n" + dnsRule + "    worker:\n      egressRules:\n" + dnsRule
		}
		fromAnyPod := "      ingressRules:\n        - from:\n            - podSelector: {}\n"
		isolated := autoscaling("isolated", "2.52.0", policy("DenyAllEgress", fromAnyPod), "", "")
		_, stderr, err := kubectl(ctx, isolated, "apply", "-f", "-")
		Expect(err).To(HaveOccurred())
		Expect(stderr).To(Equal(`The RayCluster "isolated" is invalid: ` + "\n" +
			`* spec.networkPolicy: Forbidden: the RayClusterNetworkPolicy feature gate is off; enable it with --feature-gates=RayClusterNetworkPolicy=true on the manager, or the Helm value featureGates.RayClusterNetworkPolicy=true` + "\n" +
			`* spec.networkPolicy.head.ingressRules: Forbidden: mode DenyAllEgress does not restrict ingress, so ingress rules would have no effect; remove them or use mode DenyAll` + "\n"))

		featuregatetesting.SetFeatureGateDuringTest(GinkgoT(), utilfeature.DefaultFeatureGate, features.RayClusterNetworkPolicy, true)
		_, stderr, err = kubectl(ctx, isolated, "apply", "-f", "-")
		Expect(err).To(HaveOccurred())
		Expect(stderr).To(Equal(`The RayCluster "isolated" is invalid: spec.networkPolicy.head.ingressRules: Forbidden: mode DenyAllEgress does not restrict ingress, so ingress rules would have no effect; remove them or use mode DenyAll` + "\n"))
		stdout, stderr, err := kubectl(ctx, autoscaling("isolated", "2.52.0", policy("DenyAll", fromAnyPod), "", ""), "apply", "-f", "-")
		Expect(err).NotTo(HaveOccurred(), stderr)
		Expect(stdout).To(Equal("raycluster.ray.io/isolated created\n"))
		Expect(stderr).To(BeEmpty())

		stdout, stderr, err = kubectl(ctx, autoscaling("no-dns", "2.52.0", "  networkPolicy:\n    mode: DenyAll\n", "", ""), "apply", "-f", "-")
		Expect(err).NotTo(HaveOccurred(), stderr)
		Expect(stdout).To(Equal("raycluster.ray.io/no-dns created\n"))
		Expect(stderr).To(Equal(
			"Warning: spec.networkPolicy: mode DenyAll restricts egress and no egress rule of the head allows DNS (port 53): the pods cannot resolve the head Service's name, so workers will not start; add a rule such as ports: [{port: 53, protocol: UDP}, {port: 53, protocol: TCP}]\n" +
				"Warning: spec.networkPolicy: mode DenyAll restricts egress and no egress rule of worker group cpu allows DNS (port 53): the pods cannot resolve the head Service's name, so workers will not start; add a rule such as ports: [{port: 53, protocol: UDP}, {port: 53, protocol: TCP}]\n"))
	})
})
