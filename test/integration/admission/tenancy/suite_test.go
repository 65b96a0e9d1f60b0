// Package tenancy checks what admission tells a tenant about the platform's constraints on
// the pods raygate will create: the namespace's Pod Security levels (compared with the API
// server's own Pod Security admission of the very pods raygate builds), its ResourceQuotas,
// and the admin's policy. The real kube-apiserver calls raygate's webhooks over TLS and the
// real kubectl prints the result.
package tenancy

import (
	"context"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	featuregatetesting "k8s.io/component-base/featuregate/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/raygate/raygate/internal/defaulting"
	"github.com/raygate/raygate/internal/features"
	"github.com/raygate/raygate/internal/testenv/controlplane"
	"github.com/raygate/raygate/internal/testenv/framework"
	"github.com/raygate/raygate/internal/testenv/framework/suite"
	"github.com/raygate/raygate/test/builders"
	"github.com/raygate/raygate/webhooks"
)

var (
	env *controlplane.Env
	// webhookCache is what the webhooks read namespaces and quotas from: tests wait until it
	// shows what they just wrote.
	webhookCache client.Reader
)

func TestTenancy(t *testing.T) {
	RegisterFailHandler(Fail)
	SetDefaultEventuallyTimeout(30 * time.Second)
	RunSpecs(t, "Admission in multi-tenant namespaces")
}

// The admin policy of this suite: the default Service types (ClusterIP), two GatewayClasses
// and two registries.
var (
	allowedGatewayClasses  = []string{"istio", "raygate-local"}
	allowedImageRegistries = []string{"docker.io", "registry.example.com"}
	allowedSharedGateways  = []string{"infra-gw/shared"}
)

var _ = BeforeSuite(func() {
	opts := framework.ManagerOptions()
	opts.EnableWebhooks = true
	// Admission only: what the tests store stays as admission left it, and no pods are
	// created to change what the quotas have used.
	opts.WebhooksOnly = true
	opts.AllowedGatewayClasses = allowedGatewayClasses
	opts.AllowedImageRegistries = allowedImageRegistries
	opts.AllowedSharedGateways = allowedSharedGateways
	ts := suite.Start(suite.Options{ControlPlane: controlplane.Options{Webhooks: true, GatewayAPI: true}, Manager: &opts})
	env, webhookCache = ts.Env, ts.Manager.GetCache()

	probe := builders.RayService("probe", "default").Obj()
	defaulting.RayService(probe)
	Eventually(func() error {
		return env.Client.Create(context.Background(), probe.DeepCopy(), client.DryRunAll)
	}, 30*time.Second, 200*time.Millisecond).Should(Succeed())
})

// kubectl runs the real kubectl and logs what a user would see, for docs/multi-tenancy.md.
func kubectl(ctx context.Context, stdin string, args ...string) (stdout, stderr string, err error) {
	stdout, stderr, err = env.Kubectl(ctx, stdin, args...)
	GinkgoWriter.Printf("$ kubectl %s\n%s%s\n", strings.Join(args, " "), stdout, stderr)
	return stdout, stderr, err
}

// newNamespace creates a namespace with the given labels.
func newNamespace(ctx context.Context, prefix string, labels map[string]string) string {
	GinkgoHelper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: prefix + "-", Labels: labels}}
	Expect(env.Client.Create(ctx, ns)).To(Succeed())
	waitNamespaceLabels(ctx, ns.Name, labels)
	return ns.Name
}

// waitNamespaceLabels waits until the webhooks' cache shows a namespace with the labels.
func waitNamespaceLabels(ctx context.Context, name string, labels map[string]string) {
	GinkgoHelper()
	Eventually(func() (map[string]string, error) {
		m := webhooks.NamespaceMetadata()
		err := webhookCache.Get(ctx, client.ObjectKey{Name: name}, m)
		return m.Labels, err
	}).Should(And(HaveKey(corev1.LabelMetadataName), matchLabels(labels)))
}

func matchLabels(labels map[string]string) OmegaMatcher {
	var ms []OmegaMatcher
	for k, v := range labels {
		ms = append(ms, HaveKeyWithValue(k, v))
	}
	return And(append(ms, Not(BeNil()))...)
}

// manifest is an object as YAML, for kubectl.
func manifest(obj any) string {
	GinkgoHelper()
	b, err := yaml.Marshal(obj)
	Expect(err).NotTo(HaveOccurred())
	return string(b)
}

// setGate flips a feature gate for the rest of the spec; the webhooks run in this process.
func setGate(on bool) {
	featuregatetesting.SetFeatureGateDuringTest(GinkgoT(), utilfeature.DefaultFeatureGate, features.RayServiceIncrementalUpgrade, on)
}
