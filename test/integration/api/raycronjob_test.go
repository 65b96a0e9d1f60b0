package api

import (
	"context"
	"path/filepath"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/raygate/raygate/internal/testenv/tools"
)

var _ = Describe("the ray.io/v1 RayCronJob schema", func() {
	It("accepts every field of the full RayCronJob manifest with strict validation", func(ctx context.Context) {
		out, stderr, err := env.Kubectl(ctx, testdata("raycronjob-full.yaml"), "apply", "--validate=strict", "-f", "-")
		Expect(err).NotTo(HaveOccurred(), stderr)
		Expect(stderr).NotTo(ContainSubstring("Warning"))
		Expect(out).To(Equal("raycronjob.ray.io/full created\n"))
		out, stderr, err = env.Kubectl(ctx, "", "diff", "-f", filepath.Join(tools.RepoRoot(), "test", "testdata", "raycronjob-full.yaml"))
		Expect(err).NotTo(HaveOccurred(), out+stderr)
	})

	It("rejects what KubeRay's schema rejects: no schedule, no template, an empty time zone", func(ctx context.Context) {
		_, stderr, err := env.Kubectl(ctx, `apiVersion: ray.io/v1
kind: RayCronJob
metadata:
  name: schema-bad
spec:
  timeZone: ""
`, "apply", "-f", "-")
		Expect(err).To(HaveOccurred())
		Expect(stderr).To(ContainSubstring(`spec.timeZone: Invalid value: "": spec.timeZone in body should be at least 1 chars long`))
		Expect(stderr).To(ContainSubstring(`spec.jobTemplate: Required value`))
		Expect(stderr).To(ContainSubstring(`spec.schedule: Required value`))
	})
})
