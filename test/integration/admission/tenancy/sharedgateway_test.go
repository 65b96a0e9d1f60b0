package tenancy

import (
	"context"
	"fmt"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// sharedRayService is an incremental RayService attached to a shared Gateway.
func sharedRayService(name, gateway string) string {
	return fmt.Sprintf(`apiVersion: ray.io/v1
kind: RayService
metadata:
  name: %s
  annotations:
    raygate.ray.io/gateway: %s
    raygate.ray.io/hostnames: api.example.com
    raygate.ray.io/path-prefix: /fruit
spec:
  upgradeStrategy:
    type: NewClusterWithIncrementalUpgrade
    clusterUpgradeOptions:
      gatewayClassName: istio
      maxSurgePercent: 40
      stepSizePercent: 20
      intervalSeconds: 30
  serveConfigV2: |
    applications:
      - name: fruit
        import_path: fruit.deployment_graph
  rayClusterConfig:
    enableInTreeAutoscaling: true
    headGroupSpec:
      template:
        spec:
          containers:
          - name: ray-head
            image: rayproject/ray:2.52.0
    workerGroupSpecs:
    - groupName: cpu
      template:
        spec:
          containers:
          - name: ray-worker
            image: rayproject/ray:2.52.0
`, name, gateway)
}

var _ = Describe("shared Gateways at admission", Ordered, func() {
	BeforeAll(func(ctx context.Context) {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "infra-gw"}}
		if err := env.Client.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
			Expect(err).NotTo(HaveOccurred())
		}
	})

	It("refuses a Gateway the admin did not allow, with the field path and the setting", func(ctx context.Context) {
		setGate(true)
		ns := newNamespace(ctx, "team-gw", nil)
		_, stderr, err := kubectl(ctx, sharedRayService("fruit", "other/public"), "apply", "-n", ns, "-f", "-")
		Expect(err).To(HaveOccurred())
		// The GatewayClass warning (none exists here) comes first.
		Expect(stderr).To(HaveSuffix(`The RayService "fruit" is invalid: metadata.annotations[raygate.ray.io/gateway]: Forbidden: ` +
			`Gateway other/public is not allowed here; allowed: infra-gw/shared (the manager's --allowed-shared-gateways, Helm value policy.allowedSharedGateways)` + "\n"))
	})

	It("refuses malformed hostnames and path prefixes with their paths", func(ctx context.Context) {
		setGate(true)
		ns := newNamespace(ctx, "team-gw", nil)
		bad := sharedRayService("fruit", "infra-gw/shared")
		bad = replaceOnce(bad, "raygate.ray.io/hostnames: api.example.com", `raygate.ray.io/hostnames: "10.0.0.1"`)
		bad = replaceOnce(bad, "raygate.ray.io/path-prefix: /fruit", "raygate.ray.io/path-prefix: fruit")
		_, stderr, err := kubectl(ctx, bad, "apply", "-n", ns, "-f", "-")
		Expect(err).To(HaveOccurred())
		// The GatewayClass warning (none exists here) comes first.
		Expect(stderr).To(HaveSuffix(`The RayService "fruit" is invalid: ` + "\n" +
			`* metadata.annotations[raygate.ray.io/hostnames]: Invalid value: "10.0.0.1": "10.0.0.1" is an IP address; Gateway API hostnames must be names` + "\n" +
			`* metadata.annotations[raygate.ray.io/path-prefix]: Invalid value: "fruit": must start with /` + "\n"))
	})

	It("warns when the allowed Gateway does not exist yet, and when its listeners would not admit the route", func(ctx context.Context) {
		setGate(true)
		ns := newNamespace(ctx, "team-gw", nil)
		stdout, stderr, err := kubectl(ctx, sharedRayService("fruit", "infra-gw/shared"), "apply", "--dry-run=server", "-n", ns, "-f", "-")
		Expect(err).NotTo(HaveOccurred(), stderr)
		Expect(stdout).To(HaveSuffix("(server dry run)\n"))
		Expect(stderr).To(ContainSubstring(`Warning: metadata.annotations[raygate.ray.io/gateway]: Gateway infra-gw/shared does not exist yet; the routes carry no traffic until it exists and accepts them (condition RouteAccepted)`))

		gateway := &gwv1.Gateway{
			ObjectMeta: metav1.ObjectMeta{Namespace: "infra-gw", Name: "shared"},
			Spec:       gwv1.GatewaySpec{GatewayClassName: "istio", Listeners: []gwv1.Listener{{Name: "http", Protocol: gwv1.HTTPProtocolType, Port: 80}}},
		}
		Expect(env.Client.Create(ctx, gateway)).To(Succeed())
		DeferCleanup(func(ctx context.Context) { Expect(env.Client.Delete(ctx, gateway)).To(Succeed()) })
		_, stderr, err = kubectl(ctx, sharedRayService("fruit", "infra-gw/shared"), "apply", "--dry-run=server", "-n", ns, "-f", "-")
		Expect(err).NotTo(HaveOccurred(), stderr)
		Expect(stderr).To(ContainSubstring(`Warning: metadata.annotations[raygate.ray.io/gateway]: Gateway infra-gw/shared would not accept a HTTPRoute from namespace ` + ns +
			` (NotAllowedByListeners: listener http: allowedRoutes.namespaces.from is Same: only routes in namespace infra-gw may attach); no traffic moves until it does (condition RouteAccepted)`))
	})
})

func replaceOnce(s, old, new string) string {
	GinkgoHelper()
	Expect(s).To(ContainSubstring(old))
	return strings.Replace(s, old, new, 1)
}
