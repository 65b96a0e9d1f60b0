// Package admissionpolicy tests the ValidatingAdmissionPolicies the Helm chart ships
// (values admissionPolicies.*): the chart is rendered with the real helm, the policies are
// applied with the real kubectl, and the API server enforces them on RayClusters and
// RayServices next to raygate's own webhooks, called over TLS.
package admissionpolicy

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/raygate/raygate/internal/testenv/controlplane"
	"github.com/raygate/raygate/internal/testenv/framework"
	"github.com/raygate/raygate/internal/testenv/framework/suite"
	"github.com/raygate/raygate/internal/testenv/tools"
)

// Namespaces: the policies are bound to namespaces labelled enforcedLabel; trialLabel
// namespaces get a second release's policy in Warn mode.
const (
	enforcedLabel = "ray-policies=enforced"
	trialLabel    = "ray-policies=trial"
	enforcedNS    = "team-a"
	trialNS       = "team-trial"
	registries    = "{docker.io,registry.example.com}"
)

var (
	env  *controlplane.Env
	helm string
)

func TestAdmissionPolicies(t *testing.T) {
	RegisterFailHandler(Fail)
	SetDefaultEventuallyTimeout(30 * time.Second)
	SetDefaultEventuallyPollingInterval(200 * time.Millisecond)
	RunSpecs(t, "ValidatingAdmissionPolicies of the Helm chart")
}

var _ = BeforeSuite(func(ctx context.Context) {
	var err error
	helm, err = tools.Path("helm")
	Expect(err).NotTo(HaveOccurred())
	// raygate's webhooks default and validate what the policies see, as in a real install.
	// Its controllers do not run: objects stay as admission left them.
	opts := framework.ManagerOptions()
	opts.EnableWebhooks = true
	opts.WebhooksOnly = true
	env = suite.Start(suite.Options{ControlPlane: controlplane.Options{Webhooks: true}, Manager: &opts}).Env

	for ns, label := range map[string]string{enforcedNS: enforcedLabel, trialNS: trialLabel} {
		createNamespace(ctx, ns, label)
	}

	// Release "raygate" with every policy enforced (Helm orders policies before bindings); release "trial" with one in Warn mode.
	out := kubectlOK(ctx, render("raygate",
		"--set", "admissionPolicies.allowedRegistries.enabled=true",
		"--set", "admissionPolicies.allowedRegistries.registries="+registries,
		"--set", "admissionPolicies.requireResourceLimits.enabled=true",
		"--set", "admissionPolicies.forbidHostAccess.enabled=true",
		"--set", "admissionPolicies.namespaceSelector.matchLabels.ray-policies=enforced",
	), "apply", "-f", "-")
	Expect(out).To(Equal(strings.Join([]string{
		"validatingadmissionpolicy.admissionregistration.k8s.io/raygate-system-raygate-allowed-registries created",
		"validatingadmissionpolicy.admissionregistration.k8s.io/raygate-system-raygate-require-resource-limits created",
		"validatingadmissionpolicy.admissionregistration.k8s.io/raygate-system-raygate-forbid-host-access created",
		"validatingadmissionpolicybinding.admissionregistration.k8s.io/raygate-system-raygate-allowed-registries created",
		"validatingadmissionpolicybinding.admissionregistration.k8s.io/raygate-system-raygate-require-resource-limits created",
		"validatingadmissionpolicybinding.admissionregistration.k8s.io/raygate-system-raygate-forbid-host-access created",
	}, "\n") + "\n"))
	kubectlOK(ctx, render("trial",
		"--set", "admissionPolicies.requireResourceLimits.enabled=true",
		"--set", "admissionPolicies.validationActions={Warn}",
		"--set", "admissionPolicies.namespaceSelector.matchLabels.ray-policies=trial",
	), "apply", "-f", "-")

	// The API server enforces a binding once its informers have the policy and the binding.
	for _, probe := range []struct{ ns, policy, manifest string }{
		{enforcedNS, "raygate-system-raygate-allowed-registries", rayCluster("probe", enforcedNS, pod("ray-head", "quay.io/ray:1", limits), pod("ray-worker", rayImage, limits))},
		{enforcedNS, "raygate-system-raygate-require-resource-limits", rayCluster("probe", enforcedNS, pod("ray-head", rayImage, ""), pod("ray-worker", rayImage, limits))},
		{enforcedNS, "raygate-system-raygate-forbid-host-access", rayCluster("probe", enforcedNS, "hostPID: true\n"+pod("ray-head", rayImage, limits), pod("ray-worker", rayImage, limits))},
		{trialNS, "raygate-system-trial-raygate-require-resource-limits", rayCluster("probe", trialNS, pod("ray-head", rayImage, ""), pod("ray-worker", rayImage, limits))},
	} {
		waitEnforced(ctx, probe.manifest, probe.policy)
	}
}, NodeTimeout(3*time.Minute))

// render renders the chart's policies for a release in raygate-system.
func render(release string, args ...string) string {
	GinkgoHelper()
	cmd := exec.Command(helm, append([]string{"template", release, filepath.Join(tools.RepoRoot(), "charts", "raygate"),
		"--namespace", "raygate-system", "--show-only", "templates/admission-policies.yaml"}, args...)...)
	out, err := cmd.Output()
	Expect(err).NotTo(HaveOccurred(), "helm template: %v", err)
	return string(out)
}

// kubectl runs the real kubectl and logs what a user sees.
func kubectl(ctx context.Context, stdin string, args ...string) (stdout, stderr string, err error) {
	stdout, stderr, err = env.Kubectl(ctx, stdin, args...)
	GinkgoWriter.Printf("$ kubectl %s\n%s%s\n", strings.Join(args, " "), stdout, stderr)
	return stdout, stderr, err
}

func kubectlOK(ctx context.Context, stdin string, args ...string) string {
	GinkgoHelper()
	stdout, stderr, err := kubectl(ctx, stdin, args...)
	Expect(err).NotTo(HaveOccurred(), stderr)
	return stdout
}

func createNamespace(ctx context.Context, name, label string) {
	GinkgoHelper()
	kubectlOK(ctx, "", "create", "namespace", name)
	if label != "" {
		kubectlOK(ctx, "", "label", "namespace", name, label)
	}
}

// waitEnforced waits until a server-side dry run of a manifest that violates a policy is
// answered by that policy.
func waitEnforced(ctx context.Context, manifest, policy string) {
	GinkgoHelper()
	Eventually(func() string {
		_, stderr, _ := env.Kubectl(ctx, manifest, "apply", "--dry-run=server", "-f", "-")
		return stderr
	}).Should(ContainSubstring("ValidatingAdmissionPolicy '" + policy + "'"))
}
