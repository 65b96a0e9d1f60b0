package api

import (
	"context"
	"os"
	"path/filepath"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/raygate/raygate/internal/testenv/tools"
)

func testdata(name string) string {
	b, err := os.ReadFile(filepath.Join(tools.RepoRoot(), "test", "testdata", name))
	Expect(err).NotTo(HaveOccurred())
	return string(b)
}

var _ = Describe("the ray.io/v1 schema", func() {
	DescribeTable("accepts every field of a full KubeRay manifest with strict validation",
		func(ctx context.Context, file, kind string) {
			out, stderr, err := env.Kubectl(ctx, testdata(file), "apply", "--validate=strict", "-f", "-")
			Expect(err).NotTo(HaveOccurred(), stderr)
			Expect(stderr).NotTo(ContainSubstring("Warning"))
			Expect(out).To(ContainSubstring(kind + ".ray.io/full created"))

			// What was stored is what was written: a server-side dry-run re-apply changes nothing.
			out, stderr, err = env.Kubectl(ctx, "", "diff", "-f", filepath.Join(tools.RepoRoot(), "test", "testdata", file))
			Expect(err).NotTo(HaveOccurred(), out+stderr)
		},
		Entry("RayCluster", "raycluster-full.yaml", "raycluster"),
		Entry("RayService", "rayservice-full.yaml", "rayservice"),
	)

	It("rejects an unknown field, so a typo never passes silently", func(ctx context.Context) {
		bad := strings.Replace(testdata("rayservice-full.yaml"), "name: full", "name: typo", 1)
		bad = strings.Replace(bad, "  rayClusterDeletionDelaySeconds: 60", "  rayClusterDeletionDelaySecond: 60", 1)
		_, stderr, err := env.Kubectl(ctx, bad, "apply", "--validate=strict", "-f", "-")
		Expect(err).To(HaveOccurred())
		Expect(stderr).To(ContainSubstring(`unknown field "spec.rayClusterDeletionDelaySecond"`))
	})

	It("rejects enum values KubeRay does not define", func(ctx context.Context) {
		bad := strings.Replace(testdata("raycluster-full.yaml"), "name: full", "name: badenum", 1)
		bad = strings.Replace(bad, "version: v2", "version: v3", 1)
		_, stderr, err := env.Kubectl(ctx, bad, "apply", "-f", "-")
		Expect(err).To(HaveOccurred())
		Expect(stderr).To(ContainSubstring(`spec.autoscalerOptions.version: Unsupported value: "v3"`))
	})

	It("documents the incremental upgrade options for kubectl explain", func(ctx context.Context) {
		out, stderr, err := env.Kubectl(ctx, "", "explain", "rayservice.spec.upgradeStrategy.clusterUpgradeOptions")
		Expect(err).NotTo(HaveOccurred(), stderr)
		for _, field := range []string{"maxSurgePercent", "stepSizePercent", "intervalSeconds", "gatewayClassName"} {
			Expect(out).To(MatchRegexp(`(?m)^\s+`+field+`\s+<`), "explain output:\n"+out)
		}
		Expect(out).To(ContainSubstring("DESCRIPTION"))
	})

	It("shows upgrade progress columns in kubectl get", func(ctx context.Context) {
		out, stderr, err := env.Kubectl(ctx, "", "get", "rayservices")
		Expect(err).NotTo(HaveOccurred(), stderr)
		header := strings.Fields(strings.SplitN(out, "\n", 2)[0])
		Expect(strings.Join(header, " ")).To(Equal("NAME STRATEGY READY UPGRADING PENDING TRAFFIC PENDING CAPACITY ENDPOINTS AGE"))
		Expect(out).To(ContainSubstring("NewClusterWithIncrementalUpgrade"))

		out, stderr, err = env.Kubectl(ctx, "", "get", "rayclusters")
		Expect(err).NotTo(HaveOccurred(), stderr)
		Expect(strings.Fields(strings.SplitN(out, "\n", 2)[0])).To(Equal(
			[]string{"NAME", "DESIRED", "WORKERS", "READY", "WORKERS", "CPUS", "MEMORY", "STATUS", "AGE"}))
	})
})
