package install

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
)

// These specs put the rendered manifests in front of a real kube-apiserver with the
// cert-manager and Gateway API CRDs installed.
var _ = Describe("the install on an API server", func() {
	DescribeTable("accepts every object helm template renders (server-side dry-run)",
		func(ctx context.Context, args ...string) {
			manifests := template(chartDir, append([]string{"--include-crds"}, args...)...)
			objs := parse(manifests)
			out := dryRun(ctx, manifests)
			Expect(strings.Count(out, "(server dry run)")).To(Equal(len(objs)), out)
			for _, kind := range []string{"CustomResourceDefinition", "Deployment", "ServiceAccount"} {
				Expect(objs.ofKind(kind)).NotTo(BeEmpty(), kind)
			}
		},
		Entry("with default values"),
		Entry("in namespace-scoped mode", "-f", filepath.Join(chartDir, "ci", "namespaced-values.yaml")),
		Entry("without cert-manager", "-f", filepath.Join(chartDir, "ci", "byo-cert-values.yaml")),
		Entry("with every admission policy (the API server compiles their CEL)", "-f", filepath.Join(chartDir, "ci", "admission-policies-values.yaml")),
		Entry("with every manager setting away from its default, and the NetworkPolicy", "-f", filepath.Join(chartDir, "ci", "all-settings-values.yaml")),
		Entry("with values written for KubeRay's chart (featureGates list, configuration, log file)", "-f", filepath.Join(chartDir, "ci", "kuberay-values.yaml")),
		Entry("with the ServiceMonitor off and everything else on", "--set", "featureGates.RayServiceIncrementalUpgrade=true",
			"--set", "priorityClassName=system-cluster-critical", "--set", "commonLabels.team=ml", "--set", "commonAnnotations.owner=platform"),
	)

	It("passes `helm template charts/raygate | kubectl apply --dry-run=server -f -` as written", func(ctx context.Context) {
		manifests := template(chartDir)
		out, stderr, err := env.Kubectl(ctx, manifests, "apply", "--dry-run=server", "-f", "-")
		Expect(err).NotTo(HaveOccurred(), stderr)
		Expect(strings.Count(out, "(server dry run)")).To(Equal(len(parse(manifests))), out)
		Expect(out).To(ContainSubstring("deployment.apps/raygate created (server dry run)"))
		Expect(out).To(ContainSubstring("certificate.cert-manager.io/raygate-webhook-cert created (server dry run)"))
	})

	DescribeTable("installs and uninstalls with helm, keeping the CRDs", func(ctx context.Context, bin func() string) {
		// Namespace-scoped to team-a so its webhooks (which have no pods behind them here)
		// stay out of the other specs' way.
		kc := "--kubeconfig=" + env.Kubeconfig
		runHelm := func(args ...string) (string, error) { return runHelmBin(bin(), args...) }
		By("helm install")
		out, err := runHelm("install", "tenant", chartDir, kc, "--namespace", "tenant-ops", "--set", "watchNamespaces={team-a}")
		Expect(err).NotTo(HaveOccurred())
		Expect(out).To(ContainSubstring("STATUS: deployed"))
		Expect(out).To(ContainSubstring("watching only: team-a"))
		stdout, stderr, err := env.Kubectl(ctx, "", "get", "deployment,certificate,issuer,role,rolebinding", "-A", "-l", "app.kubernetes.io/instance=tenant", "-o", "name")
		Expect(err).NotTo(HaveOccurred(), stderr)
		Expect(strings.Fields(stdout)).To(ContainElements(
			"deployment.apps/tenant-raygate", "certificate.cert-manager.io/tenant-raygate-webhook-cert",
			"issuer.cert-manager.io/tenant-raygate-ca", "role.rbac.authorization.k8s.io/tenant-raygate-leader-election"))

		By("helm uninstall --wait")
		out, err = runHelm("uninstall", "tenant", kc, "--namespace", "tenant-ops", "--wait")
		Expect(err).NotTo(HaveOccurred())
		Expect(out).To(ContainSubstring(`release "tenant" uninstalled`))
		stdout, _, _ = env.Kubectl(ctx, "", "get", "all,role,rolebinding,clusterrole,mutatingwebhookconfiguration,validatingwebhookconfiguration", "-A", "-l", "app.kubernetes.io/instance=tenant", "-o", "name")
		Expect(strings.TrimSpace(stdout)).To(BeEmpty())
		_, stderr, err = env.Kubectl(ctx, "", "get", "crd", "rayclusters.ray.io", "rayservices.ray.io")
		Expect(err).NotTo(HaveOccurred(), "helm uninstall leaves the CRDs (and so the users' objects): %s", stderr)
	},
		// The binaries are built in BeforeSuite, after the table is constructed.
		Entry("Helm 4", func() string { return helm }),
		Entry("Helm 3", func() string { return helm3 }),
	)

	It("accepts the chart's webhooks and certificates for the full team contract (server-side dry-run)", func(ctx context.Context) {
		dir := chartWithGenerated(GinkgoT().TempDir(), testdataPath("generated-role.yaml"), testdataPath("generated-webhooks.yaml"))
		for _, args := range [][]string{nil, {"--set", "watchNamespaces={team-a,team-b}"}} {
			manifests := template(dir, args...)
			objs := parse(manifests)
			Expect(objs.ofKind("ValidatingWebhookConfiguration")).To(HaveLen(1))
			out := dryRun(ctx, manifests)
			Expect(strings.Count(out, "(server dry run)")).To(Equal(len(objs)), out)
		}
	})

	It("admits the operator pod in a namespace that enforces the restricted Pod Security Standard", func(ctx context.Context) {
		spec := render().deployment().Spec.Template.Spec
		pod := func(name string, spec corev1.PodSpec) string {
			b, err := json.Marshal(corev1.Pod{
				TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
				ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: releaseNS},
				Spec:       spec,
			})
			Expect(err).NotTo(HaveOccurred())
			return string(b)
		}
		out, stderr, err := env.Kubectl(ctx, pod("raygate-operator", spec), "create", "--dry-run=server", "-f", "-")
		Expect(err).NotTo(HaveOccurred(), stderr)
		Expect(out).To(ContainSubstring("pod/raygate-operator created (server dry run)"))
		Expect(stderr).NotTo(ContainSubstring("Warning"))

		// The same pod without its container security context is refused, so the namespace
		// really enforces the standard and the pass above means something.
		loose := *spec.DeepCopy()
		loose.Containers[0].SecurityContext = nil
		_, stderr, err = env.Kubectl(ctx, pod("raygate-loose", loose), "create", "--dry-run=server", "-f", "-")
		Expect(err).To(HaveOccurred())
		Expect(stderr).To(ContainSubstring(`violates PodSecurity "restricted:latest"`))
	})

	Context("RBAC applied for real, as the operator's ServiceAccount sees it", func() {
		const sa = "system:serviceaccount:" + releaseNS + ":raygate"
		can := func(ctx context.Context, verb, group, resource, ns string) bool {
			GinkgoHelper()
			return canI(ctx, sa, access(verb, group, resource, ns))
		}
		applyRBAC := func(ctx context.Context, objs objects) {
			var rbac objects
			for _, u := range objs {
				switch u.GetKind() {
				case "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding":
					rbac = append(rbac, u)
				}
			}
			_, stderr, err := env.Kubectl(ctx, rbac.yaml(), "apply", "--server-side", "-f", "-")
			Expect(err).NotTo(HaveOccurred(), stderr)
			DeferCleanup(func(ctx context.Context) {
				_, stderr, err := env.Kubectl(ctx, rbac.yaml(), "delete", "--wait", "-f", "-")
				Expect(err).NotTo(HaveOccurred(), stderr)
			})
		}

		It("cluster-wide: no Secrets at all, no wildcards anywhere, the generated rules everywhere", func(ctx context.Context) {
			applyRBAC(ctx, render())
			for _, ns := range []string{"default", releaseNS, "team-a"} {
				expectNoSecretsNoWildcards(ctx, sa, ns, "")
			}
			for _, verb := range []string{"get", "create", "list", "watch"} {
				Expect(can(ctx, verb, "", "secrets", "")).To(BeFalse(), "%s secrets", verb)
			}
			Expect(can(ctx, "create", "coordination.k8s.io", "leases", releaseNS)).To(BeTrue())
			Expect(can(ctx, "create", "coordination.k8s.io", "leases", "default")).To(BeFalse())
			for _, r := range readGenerated(filepath.Join(repoRoot, "config", "rbac", "role.yaml"), "").clusterRules {
				for _, g := range r.APIGroups {
					Expect(can(ctx, r.Verbs[0], g, r.Resources[0], "")).To(BeTrue(), "%s %s/%s", r.Verbs[0], g, r.Resources[0])
				}
			}
		})

		It("namespace-scoped: the generated rules only in the watched namespaces", func(ctx context.Context) {
			objs := render("-f", filepath.Join(chartDir, "ci", "namespaced-values.yaml"))
			applyRBAC(ctx, objs)
			for _, ns := range []string{"default", releaseNS, "team-a"} {
				expectNoSecretsNoWildcards(ctx, sa, ns, "")
			}
			Expect(can(ctx, "get", "", "secrets", "team-a")).To(BeFalse())
			Expect(can(ctx, "list", "", "secrets", "")).To(BeFalse())
			for _, rules := range objs.rules("Role") {
				for _, r := range rules {
					if len(r.Resources) == 0 || strings.Contains(r.Resources[0], "/") || r.Resources[0] == "leases" || r.Resources[0] == "events" {
						continue
					}
					g, res := r.APIGroups[0], resourceArg(r.APIGroups[0], r.Resources[0])
					Expect(can(ctx, r.Verbs[0], g, r.Resources[0], "team-b")).To(BeTrue(), "%s %s in team-b", r.Verbs[0], res)
					Expect(can(ctx, r.Verbs[0], g, r.Resources[0], "default")).To(BeFalse(), "%s %s outside the watched namespaces", r.Verbs[0], res)
					Expect(can(ctx, r.Verbs[0], g, r.Resources[0], "")).To(BeFalse(), "%s %s cluster-wide", r.Verbs[0], res)
				}
			}
		})

		It("tokenAuthentication.enabled, cluster-wide: Secrets get and create by name in every namespace, never list or watch", func(ctx context.Context) {
			applyRBAC(ctx, render("--set", "tokenAuthentication.enabled=true"))
			for _, ns := range []string{"default", releaseNS, "team-a"} {
				expectNoSecretsNoWildcards(ctx, sa, ns, "[create get]")
				Expect(can(ctx, "get", "", "secrets", ns)).To(BeTrue(), ns)
				Expect(can(ctx, "create", "", "secrets", ns)).To(BeTrue(), ns)
			}
			for _, verb := range []string{"list", "watch", "update", "patch", "delete"} {
				Expect(can(ctx, verb, "", "secrets", releaseNS)).To(BeFalse(), "%s secrets: Ray auth tokens are read by name, never watched or cached", verb)
			}
		})

		It("tokenAuthentication.enabled, namespace-scoped: Secrets get and create only in the watched namespaces", func(ctx context.Context) {
			applyRBAC(ctx, render("-f", filepath.Join(chartDir, "ci", "namespaced-values.yaml"), "--set", "tokenAuthentication.enabled=true"))
			for _, ns := range []string{"team-a", "team-b"} {
				expectNoSecretsNoWildcards(ctx, sa, ns, "[create get]")
				Expect(can(ctx, "get", "", "secrets", ns)).To(BeTrue(), ns)
			}
			for _, ns := range []string{"default", releaseNS} {
				expectNoSecretsNoWildcards(ctx, sa, ns, "")
			}
			Expect(can(ctx, "get", "", "secrets", "")).To(BeFalse())
			Expect(can(ctx, "list", "", "secrets", "team-a")).To(BeFalse())
		})
	})

	It("places each generated resource by its real scope in namespace-scoped mode", func() {
		dc, err := discovery.NewDiscoveryClientForConfig(env.Config)
		Expect(err).NotTo(HaveOccurred())
		_, lists, err := dc.ServerGroupsAndResources()
		Expect(err).NotTo(HaveOccurred())
		namespaced := map[schema.GroupResource]bool{}
		for _, l := range lists {
			gv, err := schema.ParseGroupVersion(l.GroupVersion)
			Expect(err).NotTo(HaveOccurred())
			for _, r := range l.APIResources {
				namespaced[schema.GroupResource{Group: gv.Group, Resource: r.Name}] = r.Namespaced
			}
		}
		check := func(objs objects) {
			GinkgoHelper()
			objs = objs.withoutUserRoles() // the users' roles grant namespaced kinds cluster-wide, on purpose
			place := func(rules []rbacv1.PolicyRule, wantNamespaced bool, where string) {
				for _, r := range rules {
					for _, g := range r.APIGroups {
						for _, res := range r.Resources {
							// A subresource ("rayclusters/status") has its resource's scope.
							gr := schema.GroupResource{Group: g, Resource: strings.SplitN(res, "/", 2)[0]}
							isNamespaced, known := namespaced[gr]
							if !known {
								AddReportEntry("not served by the test API server, scope unchecked", gr.String())
								continue
							}
							Expect(isNamespaced).To(Equal(wantNamespaced), "%s in %s: list it in raygate.clusterScopedResources (charts/raygate/templates/_rbac.tpl)", gr, where)
						}
					}
				}
			}
			for name, rules := range objs.rules("Role") {
				place(rules, true, "Role "+name)
			}
			for name, rules := range objs.rules("ClusterRole") {
				place(rules, false, "ClusterRole "+name)
			}
		}
		check(render("-f", filepath.Join(chartDir, "ci", "namespaced-values.yaml")))
		dir := chartWithGenerated(GinkgoT().TempDir(), testdataPath("generated-role.yaml"), testdataPath("generated-webhooks.yaml"))
		check(parse(template(dir, "--set", "watchNamespaces={team-a}")))
	})

	Context("the kustomize config", func() {
		It("renders with kubectl kustomize and passes a server-side dry-run", func(ctx context.Context) {
			out := kustomizeDefault(ctx)
			objs := parse(out)
			expectLeastPrivilege(objs)
			d := objs.deployment()
			Expect(d.GetNamespace()).To(Equal("raygate-system"))
			expectRestrictedPod(d.Spec.Template.Spec)
			expectManagerAccepts(objs)
			serving := objs.get("Certificate", "raygate-webhook-cert")
			Expect(nested[[]any](serving, "spec", "dnsNames")).To(ConsistOf(
				"raygate-webhook-service.raygate-system.svc", "raygate-webhook-service.raygate-system.svc.cluster.local",
				"raygate-metrics.raygate-system.svc", "raygate-metrics.raygate-system.svc.cluster.local"))
			for _, u := range append(objs.ofKind("MutatingWebhookConfiguration"), objs.ofKind("ValidatingWebhookConfiguration")...) {
				Expect(u.GetAnnotations()).To(HaveKeyWithValue("cert-manager.io/inject-ca-from", "raygate-system/raygate-webhook-cert"))
			}
			gen := readGenerated(filepath.Join(repoRoot, "config", "rbac", "role.yaml"), filepath.Join(repoRoot, "config", "webhook", "manifests.yaml"))
			Expect(webhookNames(objs)).To(Equal(gen.webhookNames()))
			for _, h := range objs.validating() {
				Expect(h.ClientConfig.Service.Name).To(Equal("raygate-webhook-service"))
				Expect(h.ClientConfig.Service.Namespace).To(Equal("raygate-system"))
			}
			dryOut := dryRun(ctx, out)
			Expect(strings.Count(dryOut, "(server dry run)")).To(Equal(len(objs)), dryOut)
		})

		It("ships samples the API server accepts", func(ctx context.Context) {
			out, stderr, err := env.Kubectl(ctx, "", "apply", "--dry-run=server", "--validate=strict", "-k", filepath.Join(repoRoot, "config", "samples"))
			Expect(err).NotTo(HaveOccurred(), stderr)
			Expect(out).To(ContainSubstring("raycluster.ray.io/raycluster-sample created (server dry run)"))
			Expect(out).To(ContainSubstring("rayservice.ray.io/rayservice-sample created (server dry run)"))
		})
	})
})

// expectNoSecretsNoWildcards reads `kubectl auth can-i --list` as the operator in a
// namespace: on Secrets exactly secretVerbs ("": no row at all, the default install; "[create
// get]" with tokenAuthentication.enabled), and no wildcard resource or verb. (Non-resource URL
// rows come from the built-in discovery roles every authenticated user has.)
func expectNoSecretsNoWildcards(ctx context.Context, sa, ns, secretVerbs string) {
	GinkgoHelper()
	out, stderr, err := env.Kubectl(ctx, "", "auth", "can-i", "--list", "--as="+sa, "-n", ns)
	Expect(err).NotTo(HaveOccurred(), stderr)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	Expect(lines[0]).To(MatchRegexp(`^Resources\s+Non-Resource URLs\s+Resource Names\s+Verbs`))
	resourceRows, secretRows := 0, 0
	for _, line := range lines[1:] {
		if strings.HasPrefix(line, " ") {
			continue // a non-resource URL row
		}
		f := strings.Fields(line)
		resourceRows++
		if f[0] == "secrets" && secretVerbs != "" {
			secretRows++
			Expect(strings.TrimSpace(line)).To(HaveSuffix(" "+secretVerbs), "in %s: %s", ns, line)
			continue
		}
		Expect(f[0]).NotTo(Or(HavePrefix("secrets"), ContainSubstring("*")), "in %s: %s", ns, line)
		Expect(f[len(f)-1]).NotTo(ContainSubstring("*"), "in %s: %s", ns, line)
	}
	Expect(resourceRows).To(BeNumerically(">", 0), "can-i printed no rules:\n%s", out)
	if secretVerbs != "" {
		Expect(secretRows).To(Equal(1), "in %s: one secrets row:\n%s", ns, out)
	}
}

// resourceArg is how kubectl names a resource of a group: "pods" or "rayclusters.ray.io".
func resourceArg(group, resource string) string {
	if group == "" {
		return resource
	}
	return resource + "." + group
}
