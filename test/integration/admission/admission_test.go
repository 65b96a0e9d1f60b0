package admission

import (
	"context"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	featuregatetesting "k8s.io/component-base/featuregate/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/features"
)

// kubectl runs the real kubectl and logs what a user would see, for docs/admission.md.
func kubectl(ctx context.Context, stdin string, args ...string) (stdout, stderr string, err error) {
	stdout, stderr, err = env.Kubectl(ctx, stdin, args...)
	GinkgoWriter.Printf("$ kubectl %s\n%s%s\n", strings.Join(args, " "), stdout, stderr)
	return stdout, stderr, err
}

// setGate flips a feature gate for the rest of the spec. The webhooks run in this process
// and read the same gate, as they read --feature-gates in production.
func setGate(on bool) {
	// features.SetForTest takes a testing.TB, which GinkgoT cannot be; this is the same call.
	featuregatetesting.SetFeatureGateDuringTest(GinkgoT(), utilfeature.DefaultFeatureGate, features.RayServiceIncrementalUpgrade, on)
}

func getService(ctx context.Context, name string) (*rayv1.RayService, error) {
	svc := &rayv1.RayService{}
	return svc, env.Client.Get(ctx, client.ObjectKey{Namespace: "default", Name: name}, svc)
}

// What kubectl prints for a rejection: the API server relays the webhook's 422 Invalid
// status with its causes, and kubectl lists one cause per line.
const threeMistakesRejected = `The RayService "three-mistakes" is invalid: ` + "\n" +
	`* spec.rayClusterConfig.workerGroupSpecs[0].maxReplicas: Invalid value: 2: must be greater than or equal to minReplicas (5)` + "\n" +
	`* spec.rayClusterConfig.authOptions.enableK8sTokenAuth: Forbidden: ` + k8sTokenAuthOnRayService + "\n" +
	`* spec.serveConfigV2.applications[0].route_prefix: Invalid value: "fruit": must start with "/"` + "\n"

const k8sTokenAuthOnRayService = "KubeRay does not support Kubernetes-delegated token authentication on a RayService; use mode: token, with the Secret raygate generates or one named in secretName"

const gateForbidden = `spec.upgradeStrategy.type: Forbidden: NewClusterWithIncrementalUpgrade needs the RayServiceIncrementalUpgrade feature gate, which is disabled; ` +
	`enable it with --feature-gates=RayServiceIncrementalUpgrade=true on the manager, or the Helm value featureGates.RayServiceIncrementalUpgrade=true`

var _ = Describe("RayService admission through kubectl", func() {
	It("lists every mistake with its field path in one response, and stores nothing", func(ctx context.Context) {
		_, stderr, err := kubectl(ctx, threeMistakes, "apply", "-f", "-")
		Expect(err).To(HaveOccurred())
		Expect(stderr).To(Equal(threeMistakesRejected))
		_, err = getService(ctx, "three-mistakes")
		Expect(apierrors.IsNotFound(err)).To(BeTrue(), "a rejected object must not be stored")
	})

	It("prints a warning line for each risky but legal setting", func(ctx context.Context) {
		setGate(true)
		stdout, stderr, err := kubectl(ctx, risky, "apply", "-f", "-")
		Expect(err).NotTo(HaveOccurred(), stderr)
		Expect(stdout).To(Equal("rayservice.ray.io/risky created\n"))
		Expect(stderr).To(Equal(strings.Join([]string{
			"Warning: spec.serviceUnhealthySecondThreshold is deprecated and ignored; remove it",
			"Warning: spec.upgradeStrategy.clusterUpgradeOptions.maxSurgePercent is 100: the new cluster may scale to 100% while the old one still runs, so an upgrade can need 200% of the cluster's capacity; lower it to upgrade in smaller steps",
			"Warning: spec.upgradeStrategy.clusterUpgradeOptions.intervalSeconds is 5: with less than 10 seconds between traffic steps the Ray autoscaler may lag behind, so traffic can reach the new cluster before its pods are ready",
			"Warning: spec.rayClusterConfig.workerGroupSpecs[0].replicas: 12 is outside [minReplicas 1, maxReplicas 10] and will be clamped to 10",
			`Warning: spec.upgradeStrategy.clusterUpgradeOptions.gatewayClassName: GatewayClass "no-such-class" does not exist yet; an incremental upgrade cannot route traffic until it is created`,
		}, "\n") + "\n"))
	})

	It("stops warning about the GatewayClass once it exists", func(ctx context.Context) {
		setGate(true)
		_, stderr, err := kubectl(ctx, `apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata:
  name: istio
spec:
  controllerName: istio.io/gateway-controller
`, "apply", "-f", "-")
		Expect(err).NotTo(HaveOccurred(), stderr)
		stdout, stderr, err := kubectl(ctx, incremental("gateway-ok", "rayproject/ray:2.52.0", 10, 30), "apply", "-f", "-")
		Expect(err).NotTo(HaveOccurred(), stderr)
		Expect(stdout).To(Equal("rayservice.ray.io/gateway-ok created\n"))
		Expect(stderr).To(BeEmpty())
	})

	It("applies defaults and rejects mistakes in a server-side dry run without storing anything", func(ctx context.Context) {
		stdout, stderr, err := kubectl(ctx, rayService("dry"), "apply", "--dry-run=server", "-o", "jsonpath={.spec.upgradeStrategy.type} {.spec.rayClusterDeletionDelaySeconds} {.spec.rayClusterConfig.workerGroupSpecs[0].rayStartParams}", "-f", "-")
		Expect(err).NotTo(HaveOccurred(), stderr)
		Expect(stdout).To(Equal("NewCluster 60 {}"), "defaults: strategy, deletion delay, rayStartParams")
		_, err = getService(ctx, "dry")
		Expect(apierrors.IsNotFound(err)).To(BeTrue(), "a dry run must not store the object")

		_, stderr, err = kubectl(ctx, threeMistakes, "apply", "--dry-run=server", "-f", "-")
		Expect(err).To(HaveOccurred())
		Expect(stderr).To(Equal(threeMistakesRejected))
	})

	It("keeps a stored object unchanged when defaults are applied again", func(ctx context.Context) {
		manifest := rayService("stable")
		stdout, stderr, err := kubectl(ctx, manifest, "apply", "-f", "-")
		Expect(err).NotTo(HaveOccurred(), stderr)
		Expect(stdout).To(Equal("rayservice.ray.io/stable created\n"))
		stored, err := getService(ctx, "stable")
		Expect(err).NotTo(HaveOccurred())

		// Client-side apply resends whole lists (here workerGroupSpecs, without the defaults
		// the live object has); defaulting them again must give back the same spec.
		_, stderr, err = kubectl(ctx, manifest, "apply", "-f", "-")
		Expect(err).NotTo(HaveOccurred(), stderr)
		_, stderr, err = kubectl(ctx, "", "label", "rayservice", "stable", "team=ml")
		Expect(err).NotTo(HaveOccurred(), stderr)
		after, err := getService(ctx, "stable")
		Expect(err).NotTo(HaveOccurred())
		Expect(after.Generation).To(Equal(stored.Generation), "re-defaulting must not change the spec")
		Expect(after.Spec).To(Equal(stored.Spec))
	})

	Describe("the RayServiceIncrementalUpgrade gate", func() {
		It("rejects the incremental strategy while the gate is off, naming the gate and how to turn it on", func(ctx context.Context) {
			setGate(false)
			_, stderr, err := kubectl(ctx, incremental("gated", "rayproject/ray:2.52.0", 10, 30), "apply", "-f", "-")
			Expect(err).To(HaveOccurred())
			Expect(stderr).To(Equal(`The RayService "gated" is invalid: ` + gateForbidden + "\n"))

			setGate(true)
			stdout, stderr, err := kubectl(ctx, incremental("gated", "rayproject/ray:2.52.0", 10, 30), "apply", "-f", "-")
			Expect(err).NotTo(HaveOccurred(), stderr)
			Expect(stdout).To(Equal("rayservice.ray.io/gated created\n"))
		})

		It("lets objects created under the gate be updated after it is turned off, unless the gated strategy changes", func(ctx context.Context) {
			setGate(true)
			_, stderr, err := kubectl(ctx, incremental("ratchet", "rayproject/ray:2.52.0", 10, 30), "apply", "-f", "-")
			Expect(err).NotTo(HaveOccurred(), stderr)

			setGate(false)
			By("changing an unrelated field")
			stdout, stderr, err := kubectl(ctx, incremental("ratchet", "rayproject/ray:2.53.0", 10, 30), "apply", "-f", "-")
			Expect(err).NotTo(HaveOccurred(), stderr)
			Expect(stdout).To(Equal("rayservice.ray.io/ratchet configured\n"))

			By("changing the gated strategy's options")
			_, stderr, err = kubectl(ctx, incremental("ratchet", "rayproject/ray:2.53.0", 20, 30), "apply", "-f", "-")
			Expect(err).To(HaveOccurred())
			Expect(stderr).To(Equal(`The RayService "ratchet" is invalid: ` + gateForbidden + "\n"))

			By("leaving the gated strategy")
			stdout, stderr, err = kubectl(ctx, rayService("ratchet"), "apply", "-f", "-")
			Expect(err).NotTo(HaveOccurred(), stderr)
			Expect(stdout).To(Equal("rayservice.ray.io/ratchet configured\n"))
		})
	})

	It("refuses to switch strategy while an upgrade is in progress, and says what to do instead", func(ctx context.Context) {
		_, stderr, err := kubectl(ctx, rayService("upgrading"), "apply", "-f", "-")
		Expect(err).NotTo(HaveOccurred(), stderr)
		svc, err := getService(ctx, "upgrading")
		Expect(err).NotTo(HaveOccurred())
		svc.Status.PendingServiceStatus.RayClusterName = "upgrading-x7k2p"
		meta.SetStatusCondition(&svc.Status.Conditions, metav1.Condition{Type: string(rayv1.UpgradeInProgress), Status: metav1.ConditionTrue, Reason: rayv1.BothActivePendingClustersExist})
		Expect(env.Client.Status().Update(ctx, svc)).To(Succeed())

		none := edit(rayService("upgrading"), "spec:", "spec:\n  upgradeStrategy:\n    type: None")
		_, stderr, err = kubectl(ctx, none, "apply", "-f", "-")
		Expect(err).To(HaveOccurred())
		Expect(stderr).To(Equal(`The RayService "upgrading" is invalid: spec.upgradeStrategy.type: Forbidden: ` +
			`cannot change while an upgrade to RayCluster "upgrading-x7k2p" is in progress; wait until it finishes (condition UpgradeInProgress becomes False), ` +
			`or roll back by reverting spec.rayClusterConfig to the active cluster's spec, then change this` + "\n"))
	})
})

var _ = Describe("an invalid object already stored", Serial, func() {
	It("can be relabelled and scaled, and changed only where the change is valid", func(ctx context.Context) {
		By("storing an invalid RayService while the webhooks are bypassed")
		restore := bypassWebhooks(ctx)
		_, stderr, err := kubectl(ctx, edit(threeMistakes, "name: three-mistakes", "name: imported"), "create", "-f", "-")
		Expect(err).NotTo(HaveOccurred(), stderr)
		restore()

		By("relabelling it and scaling it as the Ray autoscaler does")
		stdout, stderr, err := kubectl(ctx, "", "label", "rayservice", "imported", "team=ml")
		Expect(err).NotTo(HaveOccurred(), stderr)
		Expect(stdout).To(Equal("rayservice.ray.io/imported labeled\n"))
		stdout, stderr, err = kubectl(ctx, "", "patch", "rayservice", "imported", "--type=json", "-p",
			`[{"op":"replace","path":"/spec/rayClusterConfig/workerGroupSpecs/0/replicas","value":2}]`)
		Expect(err).NotTo(HaveOccurred(), stderr)
		Expect(stdout).To(Equal("rayservice.ray.io/imported patched\n"))

		By("changing a field that takes part in a mistake")
		_, stderr, err = kubectl(ctx, "", "patch", "rayservice", "imported", "--type=json", "-p",
			`[{"op":"replace","path":"/spec/rayClusterConfig/workerGroupSpecs/0/minReplicas","value":6}]`)
		Expect(err).To(HaveOccurred())
		Expect(stderr).To(Equal(`The RayService "imported" is invalid: spec.rayClusterConfig.workerGroupSpecs[0].maxReplicas: Invalid value: 2: must be greater than or equal to minReplicas (6)` + "\n"))

		By("fixing one mistake while the others stay")
		stdout, stderr, err = kubectl(ctx, "", "patch", "rayservice", "imported", "--type=json", "-p",
			`[{"op":"remove","path":"/spec/rayClusterConfig/authOptions"}]`)
		Expect(err).NotTo(HaveOccurred(), stderr)
		Expect(stdout).To(Equal("rayservice.ray.io/imported patched\n"))
	})
})

var _ = Describe("an invalid object that is being deleted", Serial, func() {
	It("can always have its finalizers removed", func(ctx context.Context) {
		By("storing an invalid RayService while the webhooks are bypassed")
		restore := bypassWebhooks(ctx)
		invalid := edit(threeMistakes, "name: three-mistakes", "name: stored-invalid\n  finalizers: [example.com/cleanup]")
		_, stderr, err := kubectl(ctx, invalid, "create", "-f", "-")
		Expect(err).NotTo(HaveOccurred(), stderr)
		restore()

		By("checking that the webhooks refuse changing what is invalid")
		_, stderr, err = kubectl(ctx, "", "patch", "rayservice", "stored-invalid", "--type=merge", "-p", `{"spec":{"rayClusterConfig":{"authOptions":{"mode":"disabled"}}}}`)
		Expect(err).To(HaveOccurred())
		Expect(stderr).To(Equal(`The RayService "stored-invalid" is invalid: spec.rayClusterConfig.authOptions.enableK8sTokenAuth: Forbidden: ` + k8sTokenAuthOnRayService + "\n"))

		By("deleting it and updating it while it waits for its finalizer")
		stdout, stderr, err := kubectl(ctx, "", "delete", "rayservice", "stored-invalid", "--wait=false")
		Expect(err).NotTo(HaveOccurred(), stderr)
		Expect(stdout).To(Equal(env.KubectlDeleted("rayservice.ray.io", "stored-invalid", "default")))
		_, stderr, err = kubectl(ctx, "", "label", "rayservice", "stored-invalid", "team=ml")
		Expect(err).NotTo(HaveOccurred(), stderr)
		svc, err := getService(ctx, "stored-invalid")
		Expect(err).NotTo(HaveOccurred())
		Expect(svc.Spec.UpgradeStrategy).To(BeNil(), "the mutating webhook must not default an object being deleted")
		Expect(svc.Spec.RayClusterDeletionDelaySeconds).To(BeNil())

		By("removing the finalizer")
		stdout, stderr, err = kubectl(ctx, "", "patch", "rayservice", "stored-invalid", "--type=json", "-p", `[{"op":"remove","path":"/metadata/finalizers"}]`)
		Expect(err).NotTo(HaveOccurred(), stderr)
		Expect(stdout).To(Equal("rayservice.ray.io/stored-invalid patched\n"))
		Eventually(func() bool {
			_, err := getService(ctx, "stored-invalid")
			return apierrors.IsNotFound(err)
		}, 10*time.Second, 100*time.Millisecond).Should(BeTrue())
	})
})

var _ = Describe("RayCluster admission through kubectl", func() {
	It("lists every mistake with its field path", func(ctx context.Context) {
		_, stderr, err := kubectl(ctx, badCluster, "apply", "-f", "-")
		Expect(err).To(HaveOccurred())
		name := "a-cluster-name-that-is-far-too-long-for-its-derived-services"
		Expect(stderr).To(Equal(`The RayCluster "` + name + `" is invalid: ` + "\n" +
			`* metadata.name: Invalid value: "` + name + `": must be no more than 53 characters: the derived name "` + name + `-serve-svc" would be 70 characters, over the Kubernetes limit of 63` + "\n" +
			`* spec.upgradeStrategy.type: Forbidden: not allowed on a RayCluster managed by RayService "fruit"; set spec.upgradeStrategy on the RayService instead` + "\n" +
			`* spec.headGroupSpec.resources: Forbidden: Ray resources are also given in rayStartParams (num-cpus); declare them in only one of the two` + "\n" +
			`* spec.workerGroupSpecs[0].groupName: Invalid value: "gpu_workers": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')` + "\n"))
	})
})

// bypassWebhooks removes raygate's webhook configurations until the returned function puts
// them back, as if the webhooks had been off when an object was written. Each step waits
// until the API server has noticed.
func bypassWebhooks(ctx context.Context) (restore func()) {
	mwc := &admissionregistrationv1.MutatingWebhookConfiguration{}
	vwc := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	Expect(env.Client.Get(ctx, client.ObjectKey{Name: "mutating-webhook-configuration"}, mwc)).To(Succeed())
	Expect(env.Client.Get(ctx, client.ObjectKey{Name: "validating-webhook-configuration"}, vwc)).To(Succeed())
	Expect(env.Client.Delete(ctx, mwc)).To(Succeed())
	Expect(env.Client.Delete(ctx, vwc)).To(Succeed())
	probe := edit(threeMistakes, "name: three-mistakes", "name: bypass-probe")
	Eventually(func() error {
		_, stderr, err := env.Kubectl(ctx, probe, "create", "--dry-run=server", "-f", "-")
		if err != nil {
			return &probeError{stderr}
		}
		return nil
	}, 10*time.Second, 100*time.Millisecond).Should(Succeed())

	restored := false
	restore = func() {
		if restored {
			return
		}
		restored = true
		ctx := context.Background() // also runs as a cleanup, after the spec's context ended
		for _, obj := range []client.Object{mwc, vwc} {
			obj.SetResourceVersion("")
			obj.SetUID("")
			obj.SetManagedFields(nil)
			Expect(env.Client.Create(ctx, obj)).To(Succeed())
		}
		Eventually(func() string {
			_, stderr, _ := env.Kubectl(ctx, probe, "create", "--dry-run=server", "-f", "-")
			return stderr
		}, 10*time.Second, 100*time.Millisecond).Should(ContainSubstring(k8sTokenAuthOnRayService), "webhooks back in force")
	}
	DeferCleanup(restore)
	return restore
}

type probeError struct{ stderr string }

func (e *probeError) Error() string { return e.stderr }
