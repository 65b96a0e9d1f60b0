package admission

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	featuregatetesting "k8s.io/component-base/featuregate/testing"

	"github.com/raygate/raygate/internal/features"
)

// rocksDBCluster is a cluster with the embedded GCS backend; storage is the lines of its
// storage block (six spaces), head more lines of the head pod's spec.
func rocksDBCluster(name, storage, head string) string {
	opts := "  gcsFaultToleranceOptions:\n    backend: rocksdb\n"
	if storage != "" {
		opts += "    storage:\n" + storage
	}
	return autoscaling(name, "2.52.0", opts, head, "")
}

var _ = Describe("the rocksdb GCS backend through kubectl", func() {
	It("needs its feature gate", func(ctx context.Context) {
		_, stderr, err := kubectl(ctx, rocksDBCluster("rocks-gated", "      size: 1Gi\n", ""), "apply", "-f", "-")
		Expect(err).To(HaveOccurred())
		Expect(stderr).To(Equal(`The RayCluster "rocks-gated" is invalid: spec.gcsFaultToleranceOptions.backend: Forbidden: the rocksdb backend needs the GCSFaultToleranceEmbeddedStorage feature gate, which is disabled; ` +
			`enable it with --feature-gates=GCSFaultToleranceEmbeddedStorage=true on the manager, or the Helm value featureGates.GCSFaultToleranceEmbeddedStorage=true` + "\n"))
	})

	It("is admitted with the gate, then its storage and backend cannot change", func(ctx context.Context) {
		featuregatetesting.SetFeatureGateDuringTest(GinkgoT(), utilfeature.DefaultFeatureGate, features.GCSFaultToleranceEmbeddedStorage, true)
		stdout, stderr, err := kubectl(ctx, rocksDBCluster("rocks", "      size: 1Gi\n", ""), "apply", "-f", "-")
		Expect(err).NotTo(HaveOccurred(), stderr)
		Expect(stdout).To(Equal("raycluster.ray.io/rocks created\n"))
		Expect(stderr).To(BeEmpty())

		_, stderr, err = kubectl(ctx, rocksDBCluster("rocks", "      size: 2Gi\n", ""), "apply", "-f", "-")
		Expect(err).To(HaveOccurred())
		Expect(stderr).To(Equal(`The RayCluster "rocks" is invalid: spec.gcsFaultToleranceOptions.storage: Forbidden: storage is immutable: ` +
			`the claim already holds the GCS state and cannot be resized, moved or re-owned in place; create a new cluster instead` + "\n"))

		toRedis := autoscaling("rocks", "2.52.0", "  gcsFaultToleranceOptions:\n    redisAddress: redis:6379\n", "", "")
		_, stderr, err = kubectl(ctx, toRedis, "apply", "-f", "-")
		Expect(err).To(HaveOccurred())
		Expect(stderr).To(ContainSubstring(`spec.gcsFaultToleranceOptions.backend: Forbidden: the backend of an existing cluster is immutable (was rocksdb)`))

		stdout, stderr, err = kubectl(ctx, "", "label", "raycluster", "rocks", "team=ml")
		Expect(err).NotTo(HaveOccurred(), stderr)
		Expect(stdout).To(Equal("raycluster.ray.io/rocks labeled\n"))
	})

	It("refuses Redis settings, a claim both named and specified, and what the backend owns in the head", func(ctx context.Context) {
		featuregatetesting.SetFeatureGateDuringTest(GinkgoT(), utilfeature.DefaultFeatureGate, features.GCSFaultToleranceEmbeddedStorage, true)
		bad := autoscaling("rocks-bad", "2.52.0",
			"  gcsFaultToleranceOptions:\n    backend: rocksdb\n    redisAddress: redis:6379\n    storage:\n      claimName: team-gcs\n      size: 1Gi\n      subPath: ../up\n",
			"        volumes:\n          - name: ray-gcs-storage\n            emptyDir: {}\n", "")
		_, stderr, err := kubectl(ctx, bad, "apply", "-f", "-")
		Expect(err).To(HaveOccurred())
		Expect(stderr).To(Equal(`The RayCluster "rocks-bad" is invalid: ` + "\n" +
			`* spec.gcsFaultToleranceOptions.redisAddress: Forbidden: the rocksdb backend keeps the GCS state on the head's volume, not in Redis; remove it` + "\n" +
			`* spec.gcsFaultToleranceOptions.storage.size: Forbidden: the claim named in claimName is yours: raygate creates none, so it takes no settings for one; remove it` + "\n" +
			`* spec.gcsFaultToleranceOptions.storage.subPath: Invalid value: "../up": must not contain '..'` + "\n" +
			`* spec.headGroupSpec.template.spec.volumes[0].name: Forbidden: the volume ray-gcs-storage is set by raygate for the rocksdb backend (spec.gcsFaultToleranceOptions.backend)` + "\n"))
	})
})
