package poddryrun

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/utils/ptr"

	"github.com/raygate/raygate/test/builders"
)

var _ = Describe("the time budget and updates", func() {
	It("admits with a warning when the API server cannot answer within the budget, and sends only changed pods on update", func(ctx context.Context) {
		slowWebhook(ctx, 4*time.Second)
		ns := newNamespace(ctx, "slow", "", map[string]string{"raygate-test/slow": "on"})
		rc := builders.RayCluster("slow", "").Obj()
		// Every dry-run in this namespace outlasts the budget: a warning shows one was sent.
		apply := func(doc string) string {
			GinkgoHelper()
			stdout, stderr, err := kubectl(ctx, doc, "apply", "-n", ns, "-f", "-")
			Expect(err).NotTo(HaveOccurred(), "answered within the API server's 5-second webhook timeout: %s", stderr)
			Expect(stdout).To(HavePrefix("raycluster.ray.io/slow "))
			return stderr
		}

		By("creating: the dry-run of every pod is cut short by the budget")
		stderr := apply(manifest(rc))
		if dryRun {
			Expect(stderr).To(Equal(`Warning: admission's time budget (3s) ran out before the API server's dry-run of the head pod and the pods of worker group "workers"; it checks them when raygate creates them` + "\n"))
		} else {
			Expect(stderr).To(BeEmpty())
		}

		By("scaling and labelling: the pods are unchanged, nothing is sent")
		rc.Spec.WorkerGroupSpecs[0].Replicas = ptr.To[int32](4)
		rc.Labels = map[string]string{"team": "ml"}
		Expect(apply(manifest(rc))).To(BeEmpty())

		By("changing the worker template: only its pods are sent")
		rc.Spec.WorkerGroupSpecs[0].Template.Spec.Containers[0].Image = "rayproject/ray:2.53.0"
		stderr = apply(manifest(rc))
		if dryRun {
			Expect(stderr).To(Equal(`Warning: admission's time budget (3s) ran out before the API server's dry-run of the pods of worker group "workers"; it checks them when raygate creates them` + "\n"))
		} else {
			Expect(stderr).To(BeEmpty())
		}
	})
})

var _ = Describe("values of the wrong type", func() {
	It("are answered with the field and the type it must have, not a Go decoding message", func(ctx context.Context) {
		// From Ray's docs: rayStartParams values are strings; YAML reads 0 as a number.
		doc := `apiVersion: ray.io/v1
kind: RayCluster
metadata:
  name: numbers
spec:
  headGroupSpec:
    rayStartParams:
      num-cpus: 0
      dashboard-host: "0.0.0.0"
    template:
      spec:
        containers:
        - name: ray-head
          image: rayproject/ray:2.52.0
`
		_, stderr, err := kubectl(ctx, doc, "apply", "-n", "default", "-f", "-")
		Expect(err).To(HaveOccurred())
		Expect(stderr).To(Equal(`The RayCluster "numbers" is invalid: spec.headGroupSpec.rayStartParams[num-cpus]: Invalid value: "integer": must be of type string` + "\n"))
		Expect(stderr).NotTo(ContainSubstring("json: cannot unmarshal"))
	})
})
