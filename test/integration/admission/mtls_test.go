package admission

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	featuregatetesting "k8s.io/component-base/featuregate/testing"

	"github.com/raygate/raygate/internal/features"
)

// This suite's API server has no cert-manager CRDs: a TLS cluster is refused for that, and
// for the feature gate while it is off. The controller side (with the CRDs installed) is in
// test/integration/raycluster/features.
var _ = Describe("mutual TLS through kubectl", func() {
	const gateOff = `* spec.tlsOptions: Forbidden: the RayClusterMTLS feature gate is off; enable it with --feature-gates=RayClusterMTLS=true on the manager, or the Helm value featureGates.RayClusterMTLS=true`
	const noCertManager = `spec.tlsOptions: Forbidden: needs cert-manager, but its API (certificates.cert-manager.io and issuers.cert-manager.io, version v1) is not installed in this cluster; install cert-manager first`

	It("refuses tlsOptions with the gate off, and without cert-manager", func(ctx context.Context) {
		tls := autoscaling("mtls", "2.52.0", "  tlsOptions: {}\n", "", "")
		_, stderr, err := kubectl(ctx, tls, "apply", "-f", "-")
		Expect(err).To(HaveOccurred())
		Expect(stderr).To(Equal(`The RayCluster "mtls" is invalid: ` + "\n" + gateOff + "\n* " + noCertManager + "\n"))

		featuregatetesting.SetFeatureGateDuringTest(GinkgoT(), utilfeature.DefaultFeatureGate, features.RayClusterMTLS, true)
		_, stderr, err = kubectl(ctx, tls, "apply", "-f", "-")
		Expect(err).To(HaveOccurred())
		Expect(stderr).To(Equal(`The RayCluster "mtls" is invalid: ` + noCertManager + "\n"))
	})

	It("refuses turning TLS on for an existing RayCluster, and warns that enabled: false leaves it off", func(ctx context.Context) {
		featuregatetesting.SetFeatureGateDuringTest(GinkgoT(), utilfeature.DefaultFeatureGate, features.RayClusterMTLS, true)
		stdout, stderr, err := kubectl(ctx, autoscaling("plain-tls", "2.52.0", "  tlsOptions:\n    enabled: false\n", "", ""), "apply", "-f", "-")
		Expect(err).NotTo(HaveOccurred(), stderr)
		Expect(stdout).To(Equal("raycluster.ray.io/plain-tls created\n"))
		Expect(stderr).To(Equal("Warning: spec.tlsOptions: enabled is false, so mutual TLS stays off; remove tlsOptions or set enabled to true\n"))

		_, stderr, err = kubectl(ctx, autoscaling("plain-tls", "2.52.0", "  tlsOptions:\n    enabled: true\n", "", ""), "apply", "-f", "-")
		Expect(err).To(HaveOccurred())
		Expect(stderr).To(ContainSubstring(`* spec.tlsOptions: Forbidden: mutual TLS cannot be turned on or off on an existing RayCluster: pods with and without TLS cannot talk to each other`))
		Expect(stderr).To(ContainSubstring("* " + noCertManager))
	})
})
