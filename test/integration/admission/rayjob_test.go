package admission

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	featuregatetesting "k8s.io/component-base/featuregate/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/features"
	"github.com/raygate/raygate/internal/testenv/tools"
)

// rayJob is a K8sJobMode RayJob; spec is more lines of its spec (indented two spaces).
func rayJob(name, spec string) string {
	return fmt.Sprintf(`apiVersion: ray.io/v1
kind: RayJob
metadata:
  name: %s
spec:
%s  rayClusterSpec:
    rayVersion: "2.52.0"
    headGroupSpec:
      rayStartParams: {}
      template:
        spec:
          containers:
            - name: ray-head
              image: rayproject/ray:2.52.0
    workerGroupSpecs:
      - groupName: small
        replicas: 1
        minReplicas: 1
        maxReplicas: 4
        rayStartParams: {}
        template:
          spec:
            containers:
              - name: ray-worker
                image: rayproject/ray:2.52.0
`, name, spec)
}

func getJob(ctx context.Context, name string) error {
	return env.Client.Get(ctx, client.ObjectKey{Namespace: "default", Name: name}, &rayv1.RayJob{})
}

var _ = Describe("RayJob admission through kubectl", func() {
	It("lists every mistake with its field path in one response, and stores nothing", func(ctx context.Context) {
		_, stderr, err := kubectl(ctx, rayJob("four-mistakes", `  ttlSecondsAfterFinished: 60
  backoffLimit: 2
  submissionMode: InteractiveMode
  runtimeEnvYAML: invalid_yaml_str
  clusterSelector:
    ray.io/cluster: shared
`), "apply", "-f", "-")
		Expect(err).To(HaveOccurred())
		Expect(stderr).To(Equal(`Warning: spec.submissionMode: in InteractiveMode raygate submits nothing, so it does not use runtimeEnvYAML; ` +
			`submit the job yourself and set spec.jobId to its submission id` + "\n" +
			`The RayJob "four-mistakes" is invalid: ` + "\n" +
			`* spec.rayClusterSpec: Forbidden: not used with clusterSelector: the job runs on the RayCluster the selector names, and no cluster is created; remove one of the two` + "\n" +
			`* spec.backoffLimit: Forbidden: must be 0 with clusterSelector: each retry runs on a new RayCluster, and a job on an existing cluster has none` + "\n" +
			`* spec.ttlSecondsAfterFinished: Forbidden: used only with shutdownAfterJobFinishes: true (it is how long the RayCluster is kept after the job finished); set it, or remove ttlSecondsAfterFinished` + "\n" +
			`* spec.backoffLimit: Forbidden: must be 0 in InteractiveMode: a retry would keep spec.jobId and take the finished job for the new one` + "\n" +
			`* spec.runtimeEnvYAML: Invalid value: must be a YAML mapping (a Ray runtime environment, e.g. pip: [...] or env_vars: {...}), not a string` + "\n"))
		Expect(apierrors.IsNotFound(getJob(ctx, "four-mistakes"))).To(BeTrue(), "a rejected object must not be stored")
	})

	It("prints the schema's own refusals of KubeRay's CEL rules", func(ctx context.Context) {
		_, stderr, err := kubectl(ctx, rayJob("cel", `  entrypoint: python -c "print(1)"
  deletionStrategy:
    onSuccess:
      policy: DeleteCluster
    deletionRules:
      - policy: DeleteSelf
        condition:
          jobStatus: SUCCEEDED
`), "apply", "-f", "-")
		Expect(err).To(HaveOccurred())
		Expect(stderr).To(ContainSubstring("legacy policies (onSuccess/onFailure) and deletionRules cannot be used together within the same deletionStrategy"))
	})

	It("prints a warning line for each risky but legal setting, and defaults the job", func(ctx context.Context) {
		stdout, stderr, err := kubectl(ctx, rayJob("risky", `  entrypoint: python -c "print(1)"
  shutdownAfterJobFinishes: true
  activeDeadlineSeconds: 300
  preRunningDeadlineSeconds: 600
  deletionStrategy:
    onSuccess:
      policy: DeleteCluster
    onFailure:
      policy: DeleteCluster
`), "apply", "-f", "-")
		Expect(err).NotTo(HaveOccurred(), stderr)
		Expect(stdout).To(Equal("rayjob.ray.io/risky created\n"))
		Expect(stderr).To(Equal(strings.Join([]string{
			"Warning: spec.preRunningDeadlineSeconds is 600, not less than activeDeadlineSeconds 300: the active deadline ends the job first, so it has no effect",
			"Warning: spec.deletionStrategy.onSuccess and onFailure are deprecated; use deletionRules, e.g. [{policy: DeleteCluster, condition: {jobStatus: SUCCEEDED}}, {policy: DeleteCluster, condition: {jobStatus: FAILED}}]",
		}, "\n") + "\n"))
		out, stderr, err := kubectl(ctx, "", "get", "rayjob", "risky", "-o",
			"jsonpath={.spec.submissionMode} {.spec.backoffLimit} {.spec.rayClusterSpec.workerGroupSpecs[0].numOfHosts}")
		Expect(err).NotTo(HaveOccurred(), stderr)
		Expect(out).To(Equal("K8sJobMode 0 1"))
	})

	It("refuses deletion rules while the RayJobDeletionPolicy gate is off, naming the gate", func(ctx context.Context) {
		featuregatetesting.SetFeatureGateDuringTest(GinkgoT(), utilfeature.DefaultFeatureGate, features.RayJobDeletionPolicy, false)
		_, stderr, err := kubectl(ctx, rayJob("gated", `  entrypoint: python -c "print(1)"
  deletionStrategy:
    deletionRules:
      - policy: DeleteCluster
        condition:
          jobStatus: SUCCEEDED
`), "apply", "--dry-run=server", "-f", "-")
		Expect(err).To(HaveOccurred())
		Expect(stderr).To(Equal(`The RayJob "gated" is invalid: spec.deletionStrategy: Forbidden: needs the RayJobDeletionPolicy feature gate, which is disabled; ` +
			`enable it with --feature-gates=RayJobDeletionPolicy=true on the manager, or the Helm value featureGates.RayJobDeletionPolicy=true` + "\n"))
	})

	It("keeps the submission mode of a running job, and lets a finished one change", func(ctx context.Context) {
		manifest := rayJob("running", "  entrypoint: python -c \"print(1)\"\n")
		_, stderr, err := kubectl(ctx, manifest, "apply", "-f", "-")
		Expect(err).NotTo(HaveOccurred(), stderr)
		_, stderr, err = kubectl(ctx, "", "patch", "rayjob", "running", "--subresource=status", "--type=merge",
			"-p", `{"status":{"jobDeploymentStatus":"Running","jobId":"running-abcde"}}`)
		Expect(err).NotTo(HaveOccurred(), stderr)

		sidecar := strings.Replace(manifest, "spec:\n", "spec:\n  submissionMode: SidecarMode\n", 1)
		_, stderr, err = kubectl(ctx, sidecar, "apply", "-f", "-")
		Expect(err).To(HaveOccurred())
		Expect(stderr).To(ContainSubstring(`spec.submissionMode: Forbidden: cannot change from K8sJobMode while the RayJob is Running: ` +
			`its current attempt was set up for K8sJobMode; change it once the job has ended, or while it is suspended`))

		_, stderr, err = kubectl(ctx, strings.Replace(manifest, `print(1)`, `print(2)`, 1), "apply", "-f", "-")
		Expect(err).NotTo(HaveOccurred(), stderr)
		Expect(stderr).To(ContainSubstring("Warning: spec: entrypoint changed while the RayJob is Running"))

		_, stderr, err = kubectl(ctx, "", "patch", "rayjob", "running", "--subresource=status", "--type=merge",
			"-p", `{"status":{"jobDeploymentStatus":"Complete"}}`)
		Expect(err).NotTo(HaveOccurred(), stderr)
		_, stderr, err = kubectl(ctx, sidecar, "apply", "-f", "-")
		Expect(err).NotTo(HaveOccurred(), stderr)
	})

	It("admits the full manifests", func(ctx context.Context) {
		b, err := os.ReadFile(filepath.Join(tools.RepoRoot(), "test", "testdata", "rayjob-full.yaml"))
		Expect(err).NotTo(HaveOccurred())
		out, stderr, err := kubectl(ctx, string(b), "apply", "--dry-run=server", "-f", "-")
		Expect(err).NotTo(HaveOccurred(), stderr)
		Expect(out).To(Equal("rayjob.ray.io/full created (server dry run)\nrayjob.ray.io/full-rules created (server dry run)\nrayjob.ray.io/full-selector created (server dry run)\n"))
	})

	It("admits KubeRay's RayJob samples unchanged", func(ctx context.Context) {
		dir, err := tools.Path("kuberay-samples")
		Expect(err).NotTo(HaveOccurred())
		var admitted []string
		rejected := map[string]string{}
		Expect(filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".yaml") {
				return err
			}
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			for _, doc := range regexp.MustCompile(`(?m)^---\s*$`).Split(string(b), -1) {
				var head struct {
					APIVersion string `json:"apiVersion"`
					Kind       string `json:"kind"`
					Metadata   struct {
						Name, GenerateName string
					} `json:"metadata"`
				}
				if err := yaml.Unmarshal([]byte(doc), &head); err != nil {
					return fmt.Errorf("%s: %w", path, err)
				}
				if head.APIVersion != "ray.io/v1" || head.Kind != rayv1.RayJobKind {
					continue
				}
				rel, err := filepath.Rel(dir, path)
				if err != nil {
					return err
				}
				key := rel + " RayJob/" + head.Metadata.Name + head.Metadata.GenerateName
				// create, not apply: some samples use generateName.
				if _, stderr, err := env.Kubectl(ctx, doc, "create", "--dry-run=server", "-f", "-"); err != nil {
					rejected[key] = strings.TrimSpace(stderr)
				} else {
					admitted = append(admitted, key)
				}
			}
			return nil
		})).To(Succeed())
		sort.Strings(admitted)
		AddReportEntry("KubeRay RayJob samples", fmt.Sprintf("%d admitted, %d refused", len(admitted), len(rejected)))
		Expect(rejected).To(BeEmpty())
		Expect(admitted).To(HaveLen(22), "KubeRay v1.5.1's samples (config/samples and its folders) hold 22 RayJobs: %v", admitted)
	})
})
