package admission

import (
	"context"
	"fmt"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/raygate/raygate/internal/validation"
	"github.com/raygate/raygate/test/builders"
)

// rayCluster is a valid RayCluster with one worker group of the given shape.
func rayCluster(name string, replicas, numOfHosts, maxReplicas int) string {
	return fmt.Sprintf(`apiVersion: ray.io/v1
kind: RayCluster
metadata:
  name: %s
spec:
  rayVersion: "2.52.0"
  headGroupSpec:
    rayStartParams: {}
    template:
      spec:
        containers:
          - name: ray-head
            image: rayproject/ray:2.52.0
  workerGroupSpecs:
    - groupName: tpu
      replicas: %d
      numOfHosts: %d
      minReplicas: 0
      maxReplicas: %d
      template:
        spec:
          containers:
            - name: ray-worker
              image: rayproject/ray:2.52.0
`, name, replicas, numOfHosts, maxReplicas)
}

// withServeConfig puts config into rayService(name) as a literal block.
func withServeConfig(name, config string) string {
	indented := "    " + strings.ReplaceAll(strings.TrimSuffix(config, "\n"), "\n", "\n    ")
	return edit(rayService(name), strings.TrimPrefix(serveConfig, "\n"), "  serveConfigV2: |\n"+indented+"\n")
}

var _ = Describe("admission bounds through kubectl", func() {
	It("accepts a worker group of 64-host TPU slices up to the pod limit, and says which limit a larger one breaks", func(ctx context.Context) {
		stdout, stderr, err := kubectl(ctx, rayCluster("tpu-v6e", 78, 64, 78), "apply", "--dry-run=server", "-f", "-")
		Expect(err).NotTo(HaveOccurred(), stderr)
		Expect(stdout).To(Equal("raycluster.ray.io/tpu-v6e created (server dry run)\n"))

		_, stderr, err = kubectl(ctx, rayCluster("tpu-v6e", 100, 64, 2147483647), "apply", "-f", "-")
		Expect(err).To(HaveOccurred())
		Expect(stderr).To(Equal(`The RayCluster "tpu-v6e" is invalid: spec.workerGroupSpecs[0].replicas: Invalid value: 100: ` +
			`with numOfHosts 64 this is 6400 pods; a worker group may have at most 5000 pods (the manager's --max-pods-per-group)` + "\n"))
	})

	It("warns when maxReplicas is past what the pod limit lets the autoscaler reach", func(ctx context.Context) {
		stdout, stderr, err := kubectl(ctx, rayCluster("wide", 1, 64, 1000), "apply", "--dry-run=server", "-f", "-")
		Expect(err).NotTo(HaveOccurred(), stderr)
		Expect(stdout).To(Equal("raycluster.ray.io/wide created (server dry run)\n"))
		Expect(stderr).To(Equal("Warning: spec.workerGroupSpecs[0].maxReplicas: 1000 replicas would be 64000 pods, over the limit of 5000 pods per worker group " +
			"(the manager's --max-pods-per-group): the autoscaler cannot scale this group past 78 replicas\n"))
	})

	It("refuses replicas and numOfHosts past the schema's hard caps even without the webhook", func(ctx context.Context) {
		_, stderr, err := kubectl(ctx, rayCluster("capped", 100001, 10001, 100001), "apply", "--dry-run=server", "-f", "-")
		Expect(err).To(HaveOccurred())
		// The API server lists schema errors in no fixed order.
		Expect(strings.Split(stderr, "\n")).To(ConsistOf(
			`The RayCluster "capped" is invalid: `,
			`* spec.workerGroupSpecs[0].numOfHosts: Invalid value: 10001: spec.workerGroupSpecs[0].numOfHosts in body should be less than or equal to 10000`,
			`* spec.workerGroupSpecs[0].replicas: Invalid value: 100001: spec.workerGroupSpecs[0].replicas in body should be less than or equal to 100000`,
			""))
	})

	// kubectl create, not a client-side apply: the latter also stores the whole manifest in
	// an annotation, and annotations are limited to 256 KiB in all (docs/admission.md).
	It("refuses a serve config over 256 KiB, in characters by the schema and in bytes by the webhook", func(ctx context.Context) {
		_, stderr, err := kubectl(ctx, withServeConfig("huge", "# "+strings.Repeat("x", 256<<10)), "create", "--dry-run=server", "-f", "-")
		Expect(err).To(HaveOccurred())
		Expect(stderr).To(Equal(serveConfigTooLongForSchema()))

		// 140,000 two-byte characters: within the schema's 262,144 characters, over 262,144 bytes.
		_, stderr, err = kubectl(ctx, withServeConfig("wide-chars", "# "+strings.Repeat("é", 140000)), "create", "--dry-run=server", "-f", "-")
		Expect(err).To(HaveOccurred())
		Expect(stderr).To(Equal(`The RayService "wide-chars" is invalid: spec.serveConfigV2: Too long: must be at most 262144 bytes (256 KiB), not 280003 bytes; ` +
			`keep large files out of the serve config (e.g. in runtime_env.working_dir)` + "\n"))

		stdout, stderr, err := kubectl(ctx, withServeConfig("largest", builders.ServeConfigOfSize(256<<10)), "apply", "--server-side", "--dry-run=server", "-f", "-")
		Expect(err).NotTo(HaveOccurred(), stderr)
		Expect(stdout).To(Equal("rayservice.ray.io/largest serverside-applied (server dry run)\n"))
	})

	It("refuses YAML aliases that expand a small serve config to billions of values", func(ctx context.Context) {
		laughs := "l0: &l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]\n"
		for i := 1; i <= 9; i++ {
			laughs += fmt.Sprintf("l%d: &l%d [%s]\n", i, i, strings.TrimSuffix(strings.Repeat(fmt.Sprintf("*l%d, ", i-1), 10), ", "))
		}
		_, stderr, err := kubectl(ctx, withServeConfig("laughs", laughs+"applications: []\n"), "apply", "--dry-run=server", "-f", "-")
		Expect(err).To(HaveOccurred())
		Expect(stderr).To(Equal(`The RayService "laughs" is invalid: spec.serveConfigV2: Invalid value: has more than 131072 values once YAML aliases are expanded ` +
			`(as many as a 262144-byte config written out in full can hold); aliases may repeat parts of the config, not multiply it` + "\n"))
	})

	It("refuses head and serve Service overrides that point outside the cluster, and says why", func(ctx context.Context) {
		manifest := edit(rayService("redirected"), "spec:", "spec:\n  serveService:\n    spec:\n      externalIPs: [192.0.2.10]")
		manifest = edit(manifest, "      rayStartParams: {}", "      rayStartParams: {}\n"+
			"      headService:\n        spec:\n          type: ExternalName\n          externalName: dashboard.other-tenant.svc.cluster.local")
		_, stderr, err := kubectl(ctx, manifest, "apply", "--dry-run=server", "-f", "-")
		Expect(err).To(HaveOccurred())
		Expect(stderr).To(Equal(`The RayService "redirected" is invalid: ` + "\n" +
			`* spec.rayClusterConfig.headGroupSpec.headService.spec.type: Forbidden: ExternalName is not allowed: raygate calls the Ray dashboard through the head Service, so it would call an address the cluster's author chooses` + "\n" +
			`* spec.rayClusterConfig.headGroupSpec.headService.spec.externalName: Forbidden: not allowed: raygate calls the Ray dashboard through the head Service, so it would call an address the cluster's author chooses` + "\n" +
			`* spec.serveService.spec.externalIPs: Forbidden: not allowed: every node sends traffic for a Service's external IPs to the Service (CVE-2020-8554), so it would intercept traffic meant for those addresses` + "\n"))
	})

	It("lists at most 100 problems, then says how many more there are", func(ctx context.Context) {
		manifest := rayCluster("many-mistakes", 1, 1, 2) + strings.Repeat("    - groupName: \"\"\n      template: {}\n", 3000)
		_, stderr, err := kubectl(ctx, manifest, "create", "--dry-run=server", "-f", "-")
		Expect(err).To(HaveOccurred())
		lines := strings.Split(strings.TrimSuffix(stderr, "\n"), "\n")
		Expect(lines).To(HaveLen(1 + validation.MaxErrors + 1))
		Expect(lines[0]).To(Equal(`The RayCluster "many-mistakes" is invalid: `))
		Expect(lines[1]).To(Equal(`* spec.workerGroupSpecs[1].groupName: Required value: every worker group needs a name`))
		Expect(lines[len(lines)-1]).To(Equal(`* spec: Too many: and 5900 more problems not listed; fix the ones above first`))
	})

	It("warns that an upgrade would run twice the pods a cluster may have", func(ctx context.Context) {
		manifest := edit(rayService("big"), "        minReplicas: 1\n        maxReplicas: 10", "        replicas: 5000\n        minReplicas: 1\n        maxReplicas: 5000")
		stdout, stderr, err := kubectl(ctx, manifest, "apply", "--dry-run=server", "-f", "-")
		Expect(err).NotTo(HaveOccurred(), stderr)
		Expect(stdout).To(Equal("rayservice.ray.io/big created (server dry run)\n"))
		Expect(stderr).To(Equal("Warning: spec.upgradeStrategy.type: NewCluster runs the old and the new cluster side by side during an upgrade, up to 10002 pods, " +
			"more than the 10000 pods allowed per cluster (the manager's --max-pods-per-cluster); make sure the namespace's quota and the nodes can hold both\n"))
	})
})

// What the API server's schema validation says (its wording depends on the minor); the
// webhook is not called for an object the schema refuses.
func serveConfigTooLongForSchema() string {
	return `The RayService "huge" is invalid: ` + "\n" +
		`* spec.serveConfigV2: ` + env.SchemaTooLong(262144) + "\n" +
		`* <nil>: Invalid value: ` + env.NullValue() + `: some validation rules were not checked because the object was invalid; correct the existing errors to complete validation` + "\n"
}
