package tenancy

import (
	"context"
	"os"
	"path/filepath"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	featuregatetesting "k8s.io/component-base/featuregate/testing"

	"github.com/raygate/raygate/internal/features"
	"github.com/raygate/raygate/internal/testenv/tools"
)

var _ = Describe("admin policy at admission", func() {
	It("refuses Service types, registries and GatewayClasses the admin did not allow, saying which setting allows them", func(ctx context.Context) {
		setGate(true)
		ns := newNamespace(ctx, "team-p", nil)
		_, stderr, err := kubectl(ctx, `apiVersion: ray.io/v1
kind: RayService
metadata:
  name: exposed
spec:
  upgradeStrategy:
    type: NewClusterWithIncrementalUpgrade
    clusterUpgradeOptions:
      gatewayClassName: public-internet
      maxSurgePercent: 40
      stepSizePercent: 20
      intervalSeconds: 30
  serveService:
    spec:
      type: LoadBalancer
  serveConfigV2: |
    applications:
      - name: fruit
        import_path: fruit.deployment_graph
  rayClusterConfig:
    enableInTreeAutoscaling: true
    headGroupSpec:
      serviceType: NodePort
      template:
        spec:
          containers:
          - name: ray-head
            image: quay.io/someone/ray:2.52.0
    workerGroupSpecs:
    - groupName: cpu
      template:
        spec:
          containers:
          - name: ray-worker
            image: rayproject/ray:2.52.0
`, "apply", "-n", ns, "-f", "-")
		Expect(err).To(HaveOccurred())
		Expect(stderr).To(Equal(`The RayService "exposed" is invalid: ` + "\n" +
			`* spec.rayClusterConfig.headGroupSpec.serviceType: Forbidden: Service type NodePort is not allowed here; allowed: ClusterIP (the manager's --allowed-service-types, Helm value policy.allowedServiceTypes)` + "\n" +
			`* spec.rayClusterConfig.headGroupSpec.template.spec.containers[0].image: Forbidden: "quay.io/someone/ray:2.52.0" is from registry quay.io, which is not allowed here; allowed: docker.io, registry.example.com (the manager's --allowed-image-registries, Helm value policy.allowedImageRegistries)` + "\n" +
			`* spec.serveService.spec.type: Forbidden: Service type LoadBalancer is not allowed here; allowed: ClusterIP (the manager's --allowed-service-types, Helm value policy.allowedServiceTypes)` + "\n" +
			`* spec.upgradeStrategy.clusterUpgradeOptions.gatewayClassName: Forbidden: GatewayClass "public-internet" is not allowed here; allowed: istio, raygate-local (the manager's --allowed-gateway-classes, Helm value policy.allowedGatewayClasses)` + "\n"))
	})

	It("accepts every sample of config/samples with the default Service types and the suite's registries", func(ctx context.Context) {
		setGate(true)
		featuregatetesting.SetFeatureGateDuringTest(GinkgoT(), utilfeature.DefaultFeatureGate, features.RayCronJob, true) // ray_v1_raycronjob.yaml
		ns := newNamespace(ctx, "team-samples", nil)
		samples := filepath.Join(tools.RepoRoot(), "config", "samples")
		entries, err := os.ReadDir(samples)
		Expect(err).NotTo(HaveOccurred())
		tried := 0
		for _, e := range entries {
			if !strings.HasPrefix(e.Name(), "ray_v1_") {
				continue // kustomization.yaml, and the invalid sample
			}
			tried++
			stdout, stderr, err := kubectl(ctx, "", "apply", "--dry-run=server", "-n", ns, "-f", filepath.Join(samples, e.Name()))
			Expect(err).NotTo(HaveOccurred(), "%s: %s", e.Name(), stderr)
			Expect(stdout).To(HaveSuffix("(server dry run)\n"))
			Expect(stderr).NotTo(ContainSubstring("Forbidden"), e.Name())
		}
		Expect(tried).To(Equal(6))
	})
})
