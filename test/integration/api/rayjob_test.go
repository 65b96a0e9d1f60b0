package api

import (
	"context"
	"path/filepath"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/raygate/raygate/internal/testenv/tools"
)

var _ = Describe("the ray.io/v1 RayJob schema", Ordered, func() {
	It("accepts every field of the full RayJob manifests with strict validation", func(ctx context.Context) {
		out, stderr, err := env.Kubectl(ctx, testdata("rayjob-full.yaml"), "apply", "--validate=strict", "-f", "-")
		Expect(err).NotTo(HaveOccurred(), stderr)
		Expect(stderr).NotTo(ContainSubstring("Warning"))
		Expect(out).To(Equal("rayjob.ray.io/full created\nrayjob.ray.io/full-rules created\nrayjob.ray.io/full-selector created\n"))

		// What was stored is what was written: a server-side dry-run re-apply changes nothing.
		out, stderr, err = env.Kubectl(ctx, "", "diff", "-f", filepath.Join(tools.RepoRoot(), "test", "testdata", "rayjob-full.yaml"))
		Expect(err).NotTo(HaveOccurred(), out+stderr)
	})

	It("applies KubeRay's schema defaults", func(ctx context.Context) {
		out, stderr, err := env.Kubectl(ctx, `apiVersion: ray.io/v1
kind: RayJob
metadata:
  name: schema-defaults
spec:
  entrypoint: python -c "print(1)"
  clusterSelector:
    ray.io/cluster: full
`, "apply", "-o", "jsonpath={.spec.submissionMode} {.spec.backoffLimit} {.spec.ttlSecondsAfterFinished}", "-f", "-")
		Expect(err).NotTo(HaveOccurred(), stderr)
		Expect(out).To(Equal("K8sJobMode 0 0"))
	})

	It("rejects what KubeRay's schema rejects", func(ctx context.Context) {
		bad := strings.Replace(testdata("rayjob-full.yaml"), "name: full-rules", "name: bad-rules", 1)
		policy := strings.Replace(bad, "      - policy: DeleteWorkers", "      - policy: DeleteEverything", 1)
		_, stderr, err := env.Kubectl(ctx, policy, "apply", "-f", "-")
		Expect(err).To(HaveOccurred())
		Expect(stderr).To(ContainSubstring(`spec.deletionStrategy.deletionRules[0].policy: Unsupported value: "DeleteEverything"`))

		// The CEL rules run once the rest of the object is valid.
		both := strings.Replace(bad, "          jobStatus: SUCCEEDED\n", "          jobStatus: SUCCEEDED\n          jobDeploymentStatus: Failed\n", 1)
		_, stderr, err = env.Kubectl(ctx, both, "apply", "-f", "-")
		Expect(err).To(HaveOccurred())
		Expect(stderr).To(ContainSubstring("JobStatus and JobDeploymentStatus cannot be used together within the same deletion condition."))

		typo := strings.Replace(testdata("rayjob-full.yaml"), "name: full-selector", "name: typo", 1)
		typo = strings.Replace(typo, "  clusterSelector:", "  clusterSelectors:", 1)
		_, stderr, err = env.Kubectl(ctx, typo, "apply", "--validate=strict", "-f", "-")
		Expect(err).To(HaveOccurred())
		Expect(stderr).To(ContainSubstring(`unknown field "spec.clusterSelectors"`))
	})

	It("shows KubeRay's columns in kubectl get", func(ctx context.Context) {
		_, stderr, err := env.Kubectl(ctx, "", "patch", "rayjob", "full", "--subresource=status", "--type=merge", "-p",
			`{"status":{"jobStatus":"RUNNING","jobDeploymentStatus":"Running","rayClusterName":"full-4k7xq","startTime":"2026-01-02T03:04:05Z"}}`)
		Expect(err).NotTo(HaveOccurred(), stderr)
		out, stderr, err := env.Kubectl(ctx, "", "get", "rayjob", "full")
		Expect(err).NotTo(HaveOccurred(), stderr)
		lines := strings.Split(strings.TrimSpace(out), "\n")
		Expect(strings.Join(strings.Fields(lines[0]), " ")).To(Equal("NAME JOB STATUS DEPLOYMENT STATUS RAY CLUSTER NAME START TIME END TIME AGE"))
		Expect(strings.Fields(lines[1])[:5]).To(Equal([]string{"full", "RUNNING", "Running", "full-4k7xq", "2026-01-02T03:04:05Z"}))
	})

	It("documents the deletion strategy for kubectl explain", func(ctx context.Context) {
		out, stderr, err := env.Kubectl(ctx, "", "explain", "rayjob.spec.deletionStrategy.deletionRules.condition")
		Expect(err).NotTo(HaveOccurred(), stderr)
		for _, field := range []string{"jobStatus", "jobDeploymentStatus", "ttlSeconds"} {
			Expect(out).To(MatchRegexp(`(?m)^\s+`+field+`\s+<`), "explain output:\n"+out)
		}
	})

	It("serves ray.io/v1alpha1 as a deprecated copy of v1", func(ctx context.Context) {
		first, _, _ := strings.Cut(testdata("rayjob-full.yaml"), "\n---\n")
		alpha := strings.Replace(first, "apiVersion: ray.io/v1\n", "apiVersion: ray.io/v1alpha1\n", 1)
		alpha = strings.Replace(alpha, "name: full\n", "name: full-alpha\n", 1)
		out, stderr, err := env.Kubectl(ctx, alpha, "apply", "--server-side", "-f", "-")
		Expect(err).NotTo(HaveOccurred(), stderr)
		Expect(stderr).To(ContainSubstring("Warning: ray.io/v1alpha1 RayJob is deprecated; use ray.io/v1 (same schema)"))
		Expect(out).To(ContainSubstring("rayjob.ray.io/full-alpha serverside-applied"))
	})
})
