package admission

import (
	"context"
	"fmt"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// The admission rules raygate shares with KubeRay (and Ray Serve), where raygate used to
// differ: specs KubeRay accepts are accepted, specs it rejects are rejected, as kubectl
// prints them.

// autoscaling is a RayCluster with the autoscaler on; options are more lines of its spec
// (indented two spaces), head and worker are extra lines of their pod specs (eight spaces).
func autoscaling(name, rayVersion, options, head, worker string) string {
	return fmt.Sprintf(`apiVersion: ray.io/v1
kind: RayCluster
metadata:
  name: %s
spec:
  rayVersion: %q
  enableInTreeAutoscaling: true
%s  headGroupSpec:
    rayStartParams: {}
    template:
      spec:
%s        containers:
          - name: ray-head
            image: rayproject/ray:2.52.0
  workerGroupSpecs:
    - groupName: cpu
      minReplicas: 0
      maxReplicas: 4
%s      template:
        spec:
          containers:
            - name: ray-worker
              image: rayproject/ray:2.52.0
`, name, rayVersion, options, head, worker)
}

var _ = Describe("admission parity with KubeRay through kubectl", func() {
	It("accepts a Serve application without name as Ray Serve's \"default\", and refuses a second one", func(ctx context.Context) {
		stdout, stderr, err := kubectl(ctx, withServeConfig("unnamed-app", "applications:\n  - route_prefix: /\n    import_path: fruit.deployment_graph\n"), "apply", "-f", "-")
		Expect(err).NotTo(HaveOccurred(), stderr)
		Expect(stdout).To(Equal("rayservice.ray.io/unnamed-app created\n"))
		Expect(stderr).To(BeEmpty())

		_, stderr, err = kubectl(ctx, withServeConfig("two-unnamed-apps", "applications:\n  - route_prefix: /a\n    import_path: a:app\n  - route_prefix: /b\n    import_path: b:app\n"), "apply", "-f", "-")
		Expect(err).To(HaveOccurred())
		Expect(stderr).To(Equal(`The RayService "two-unnamed-apps" is invalid: spec.serveConfigV2.applications[1].name: Duplicate value: "default": applications without name are named "default"` + "\n"))
	})

	It("warns about restartPolicy when autoscaler v2 comes from rayVersion, and refuses it with autoscalerOptions.version v2", func(ctx context.Context) {
		stdout, stderr, err := kubectl(ctx, autoscaling("implicit-v2", "2.52.0", "", "        restartPolicy: Always\n", ""), "apply", "-f", "-")
		Expect(err).NotTo(HaveOccurred(), stderr)
		Expect(stdout).To(Equal("raycluster.ray.io/implicit-v2 created\n"))
		Expect(stderr).To(Equal("Warning: spec.headGroupSpec.template.spec.restartPolicy is Always while autoscaler v2 runs because of rayVersion 2.52.0 (Ray's default from 2.47.0), " +
			"not autoscalerOptions.version, so raygate leaves the policy as it is: autoscaler v2 replaces a Ray pod whose node died, and a container the kubelet restarts " +
			"in place can leave it tracking a node that no longer exists; use Never, or choose the autoscaler with autoscalerOptions.version\n"))

		_, stderr, err = kubectl(ctx, autoscaling("explicit-v2", "2.52.0", "  autoscalerOptions:\n    version: v2\n", "        restartPolicy: Always\n", ""), "apply", "-f", "-")
		Expect(err).To(HaveOccurred())
		Expect(stderr).To(Equal(`The RayCluster "explicit-v2" is invalid: spec.headGroupSpec.template.spec.restartPolicy: Invalid value: "Always": ` +
			"must be Never or unset with autoscalerOptions.version v2: autoscaler v2 replaces failed Ray pods itself\n"))
	})

	It("refuses priority before Ray 2.56, a negative autoscaler idle timeout and a value for the generated autoscaler command", func(ctx context.Context) {
		options := "  autoscalerOptions:\n    idleTimeoutSeconds: -1\n    env:\n      - name: KUBERAY_GEN_AUTOSCALER_START_CMD\n        value: sleep infinity\n"
		_, stderr, err := kubectl(ctx, autoscaling("kuberay-rules", "2.52.0", options, "", "      priority: 10\n"), "apply", "-f", "-")
		Expect(err).To(HaveOccurred())
		Expect(stderr).To(Equal(strings.Join([]string{
			`The RayCluster "kuberay-rules" is invalid: `,
			`* spec.autoscalerOptions.idleTimeoutSeconds: Invalid value: -1: must be greater than or equal to 0`,
			`* spec.autoscalerOptions.env[0]: Forbidden: KUBERAY_GEN_AUTOSCALER_START_CMD is set by raygate to the autoscaler's generated start command, which custom args can run as $KUBERAY_GEN_AUTOSCALER_START_CMD; remove it from env`,
			`* spec.workerGroupSpecs[0].priority: Forbidden: needs Ray 2.56.0 or later, whose autoscaler v2 reads it; spec.rayVersion is 2.52.0`,
		}, "\n") + "\n"))

		stdout, stderr, err := kubectl(ctx, autoscaling("priority-ok", "2.56.0", "", "", "      priority: 10\n"), "apply", "--dry-run=server", "-f", "-")
		Expect(err).NotTo(HaveOccurred(), stderr)
		Expect(stdout).To(Equal("raycluster.ray.io/priority-ok created (server dry run)\n"))
	})

	It("refuses GCS fault tolerance given through the head's env or rayStartParams", func(ctx context.Context) {
		manifest := edit(rayCluster("redis-by-env", 1, 1, 4), "            image: rayproject/ray:2.52.0\n",
			"            image: rayproject/ray:2.52.0\n            env:\n              - name: RAY_REDIS_ADDRESS\n                value: redis:6379\n")
		manifest = edit(manifest, "    rayStartParams: {}", "    rayStartParams:\n      redis-username: ray")
		_, stderr, err := kubectl(ctx, manifest, "apply", "-f", "-")
		Expect(err).To(HaveOccurred())
		Expect(stderr).To(Equal(strings.Join([]string{
			`The RayCluster "redis-by-env" is invalid: `,
			`* spec.headGroupSpec.rayStartParams[redis-username]: Forbidden: set the Redis username in spec.gcsFaultToleranceOptions.redisUsername instead`,
			`* spec.headGroupSpec.template.spec.containers[0].env[0]: Forbidden: RAY_REDIS_ADDRESS keeps the GCS in an external Redis, which needs GCS fault tolerance: ` +
				`set spec.gcsFaultToleranceOptions.redisAddress instead, so that the cluster is configured for it and the Redis keys are deleted with the cluster`,
		}, "\n") + "\n"))
	})
})
