package install

import (
	"encoding/base64"
	"path/filepath"
	"slices"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
)

// The chart takes its RBAC rules and webhook settings from the files `make manifests`
// generates from the other packages' markers. These specs check the chart against those
// files as they are now (whatever has landed), and against stand-ins in testdata/ that
// hold the full team contract, so the chart's handling is tested either way.
var _ = Describe("the chart and the generated manifests", func() {
	generatedRole := filepath.Join(repoRoot, "config", "rbac", "role.yaml")
	generatedWebhooks := filepath.Join(repoRoot, "config", "webhook", "manifests.yaml")

	It("carries the current generated files and CRDs (run `make manifests` if not)", func() {
		for chartFile, src := range map[string]string{
			"generated/role.yaml":                      generatedRole,
			"generated/webhooks.yaml":                  generatedWebhooks,
			"crds/ray.io_rayclusters.yaml":             filepath.Join(repoRoot, "config", "crd", "bases", "ray.io_rayclusters.yaml"),
			"crds/ray.io_rayservices.yaml":             filepath.Join(repoRoot, "config", "crd", "bases", "ray.io_rayservices.yaml"),
			"crds/ray.io_rayjobs.yaml":                 filepath.Join(repoRoot, "config", "crd", "bases", "ray.io_rayjobs.yaml"),
			"crds/ray.io_raycronjobs.yaml":             filepath.Join(repoRoot, "config", "crd", "bases", "ray.io_raycronjobs.yaml"),
			"crds/raygate.ray.io_upgradepolicies.yaml": filepath.Join(repoRoot, "config", "crd", "bases", "raygate.ray.io_upgradepolicies.yaml"),
		} {
			Expect(readFileOrEmpty(filepath.Join(chartDir, chartFile))).To(Equal(readFileOrEmpty(src)),
				"charts/raygate/%s differs from %s: run make manifests", chartFile, src)
		}
	})

	Context("as generated now", func() {
		var gen generated
		BeforeEach(func() { gen = readGenerated(generatedRole, generatedWebhooks) })

		It("grants cluster-wide exactly the generated rules", func() {
			expectClusterWideRBAC(render(), gen)
		})
		It("grants the generated rules per watched namespace in namespace-scoped mode", func() {
			expectNamespacedRBAC(render("-f", filepath.Join(chartDir, "ci", "namespaced-values.yaml")), gen, "team-a", "team-b")
		})
		It("configures the generated webhooks for this release", func() {
			expectWebhooks(render(), gen, nil, "")
			expectWebhooks(render("-f", filepath.Join(chartDir, "ci", "namespaced-values.yaml")), gen, []string{"team-a", "team-b"}, "")
			expectWebhooks(render("-f", filepath.Join(chartDir, "ci", "byo-cert-values.yaml")), gen, nil, "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCg==")
		})
	})

	Context("with the full team contract (testdata stand-ins)", func() {
		var gen generated
		var dir string
		BeforeEach(func() {
			gen = readGenerated(testdataPath("generated-role.yaml"), testdataPath("generated-webhooks.yaml"))
			dir = chartWithGenerated(GinkgoT().TempDir(), testdataPath("generated-role.yaml"), testdataPath("generated-webhooks.yaml"))
		})

		It("renders the four contract webhooks with the contract's settings", func() {
			objs := parse(template(dir))
			Expect(webhookNames(objs)).To(Equal([]string{"mraycluster.ray.io", "mrayservice.ray.io", "vraycluster.ray.io", "vrayservice.ray.io"}))
			expectWebhooks(objs, gen, nil, "")
			expectCAChain(objs, "raygate-webhook-cert")
		})
		It("limits the webhooks to the watched namespaces in namespace-scoped mode", func() {
			objs := parse(template(dir, "--set", "watchNamespaces={team-a,team-b}"))
			expectWebhooks(objs, gen, []string{"team-a", "team-b"}, "")
		})
		It("takes failure policy and timeout from values", func() {
			objs := parse(template(dir, "--set", "webhook.failurePolicy=Ignore", "--set", "webhook.timeoutSeconds=3"))
			for _, h := range objs.validating() {
				Expect(*h.FailurePolicy).To(Equal(admissionregistrationv1.Ignore))
				Expect(*h.TimeoutSeconds).To(BeEquivalentTo(3))
			}
		})
		It("grants the rules cluster-wide, with namespace-scoped markers in the release namespace", func() {
			objs := parse(template(dir))
			expectClusterWideRBAC(objs, gen)
			expectLeastPrivilege(objs)
		})
		It("keeps only cluster-scoped resources in a ClusterRole in namespace-scoped mode, each with its reason", func() {
			out := template(dir, "--set", "watchNamespaces={team-a,team-b}")
			objs := parse(out)
			expectNamespacedRBAC(objs, gen, "team-a", "team-b")
			expectLeastPrivilege(objs)
			scoped := objs.get("ClusterRole", "raygate-system-raygate-manager-cluster-scoped")
			Expect(scoped).NotTo(BeNil())
			Expect(typed[rbacv1.ClusterRole](scoped).Rules).To(Equal([]rbacv1.PolicyRule{
				{APIGroups: []string{"gateway.networking.k8s.io"}, Resources: []string{"gatewayclasses"}, Verbs: []string{"get", "list", "watch"}},
			}))
			Expect(out).To(MatchRegexp(`(?m)^# GatewayClasses are cluster-scoped: .+\n- apiGroups:\n  - gateway.networking.k8s.io\n  resources:\n  - gatewayclasses`))
		})
	})
})

func webhookNames(objs objects) []string {
	return generated{mutating: objs.mutating(), validating: objs.validating()}.webhookNames()
}

func (g generated) webhookNames() []string {
	names := []string{}
	for _, h := range g.mutating {
		names = append(names, h.Name)
	}
	for _, h := range g.validating {
		names = append(names, h.Name)
	}
	slices.Sort(names)
	return names
}

// webhook is what mutating and validating webhooks share.
type webhook struct {
	clientConfig   admissionregistrationv1.WebhookClientConfig
	rules          []admissionregistrationv1.RuleWithOperations
	failurePolicy  *admissionregistrationv1.FailurePolicyType
	matchPolicy    *admissionregistrationv1.MatchPolicyType
	sideEffects    *admissionregistrationv1.SideEffectClass
	timeoutSeconds *int32
	reviewVersions []string
	nsSelector     *metav1.LabelSelector
	conditions     []admissionregistrationv1.MatchCondition
}

func webhooksOf(m []admissionregistrationv1.MutatingWebhook, v []admissionregistrationv1.ValidatingWebhook) map[string]webhook {
	out := map[string]webhook{}
	for _, h := range m {
		out["mutating/"+h.Name] = webhook{h.ClientConfig, h.Rules, h.FailurePolicy, h.MatchPolicy, h.SideEffects, h.TimeoutSeconds, h.AdmissionReviewVersions, h.NamespaceSelector, h.MatchConditions}
	}
	for _, h := range v {
		out["validating/"+h.Name] = webhook{h.ClientConfig, h.Rules, h.FailurePolicy, h.MatchPolicy, h.SideEffects, h.TimeoutSeconds, h.AdmissionReviewVersions, h.NamespaceSelector, h.MatchConditions}
	}
	return out
}

// expectWebhooks checks the chart's webhooks against the generated ones: same set, same
// paths, rules, sideEffects, matchPolicy, matchConditions and review versions; the contract's failure policy
// and timeout; this release's Service; the CA from cert-manager or caBundle; and in
// namespace-scoped mode a selector on exactly the watched namespaces.
func expectWebhooks(objs objects, gen generated, namespaces []string, caBundle string) {
	GinkgoHelper()
	got, want := webhooksOf(objs.mutating(), objs.validating()), webhooksOf(gen.mutating, gen.validating)
	Expect(keys(got)).To(Equal(keys(want)), "the chart renders the generated webhooks, no more, no less")
	for key, w := range want {
		h := got[key]
		Expect(h.clientConfig.Service).NotTo(BeNil(), key)
		Expect(*h.clientConfig.Service).To(Equal(admissionregistrationv1.ServiceReference{
			Name: "raygate-webhook-service", Namespace: releaseNS, Path: w.clientConfig.Service.Path, Port: ptr.To[int32](443),
		}), key)
		Expect(h.clientConfig.URL).To(BeNil(), key)
		if caBundle == "" {
			Expect(h.clientConfig.CABundle).To(BeEmpty(), key+": cert-manager's cainjector fills it")
		} else {
			wantCA, err := base64.StdEncoding.DecodeString(caBundle)
			Expect(err).NotTo(HaveOccurred())
			Expect(h.clientConfig.CABundle).To(Equal(wantCA), key)
		}
		Expect(h.rules).To(Equal(w.rules), key)
		Expect(h.sideEffects).To(Equal(w.sideEffects), key)
		Expect(*h.sideEffects).To(Equal(admissionregistrationv1.SideEffectClassNone), key)
		Expect(h.matchPolicy).To(Equal(w.matchPolicy), key)
		Expect(h.reviewVersions).To(Equal(w.reviewVersions), key)
		Expect(h.conditions).To(Equal(w.conditions), key)
		if key == "validating/vdeleting.ray.io" {
			// The one webhook for objects being deleted: called only when their spec (or a
			// ray.io/ annotation) changes, never for a finalizer removal.
			Expect(h.conditions).To(ContainElements(
				HaveField("Expression", "has(object.metadata.deletionTimestamp) && oldObject != null"),
				HaveField("Name", "spec-or-ray-annotations-changed")), key)
		} else {
			Expect(h.conditions).To(ContainElement(HaveField("Expression", "!has(object.metadata.deletionTimestamp)")),
				key+": objects being deleted skip the webhook, so finalizers can go while it is down")
		}
		Expect(*h.failurePolicy).To(Equal(admissionregistrationv1.Fail), key)
		Expect(*h.timeoutSeconds).To(BeNumerically("<=", 5), key)
		for _, r := range h.rules {
			// Our CRDs only: ray.io's kinds, and raygate's own UpgradePolicy.
			Expect(r.APIGroups).To(Or(Equal([]string{"ray.io"}), Equal([]string{"raygate.ray.io"})), key)
			if r.APIGroups[0] == "ray.io" {
				Expect(r.Resources).To(HaveEach(BeElementOf("rayclusters", "rayservices", "rayjobs", "raycronjobs")), key)
			} else {
				Expect(r.Resources).To(Equal([]string{"upgradepolicies"}), key)
			}
			Expect(r.Operations).To(HaveEach(BeElementOf(admissionregistrationv1.Create, admissionregistrationv1.Update)), key)
		}
		if namespaces == nil {
			Expect(h.nsSelector).To(Equal(w.nsSelector), key)
		} else {
			Expect(h.nsSelector).To(Equal(&metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
				{Key: "kubernetes.io/metadata.name", Operator: metav1.LabelSelectorOpIn, Values: namespaces},
			}}), key)
		}
	}
	for _, u := range append(objs.ofKind("MutatingWebhookConfiguration"), objs.ofKind("ValidatingWebhookConfiguration")...) {
		if caBundle == "" {
			Expect(u.GetAnnotations()).To(HaveKeyWithValue("cert-manager.io/inject-ca-from", releaseNS+"/raygate-webhook-cert"))
		}
	}
}

// expectCAChain follows cert-manager's chain from the webhooks' inject-ca-from annotation:
// serving Certificate (DNS names of the webhook Service) <- CA Issuer <- CA Certificate
// (isCA) <- self-signed Issuer, and the Deployment mounts the serving certificate's Secret.
func expectCAChain(objs objects, servingCert string) {
	GinkgoHelper()
	for _, u := range append(objs.ofKind("MutatingWebhookConfiguration"), objs.ofKind("ValidatingWebhookConfiguration")...) {
		Expect(u.GetAnnotations()).To(HaveKeyWithValue("cert-manager.io/inject-ca-from", releaseNS+"/"+servingCert))
	}
	serving := objs.get("Certificate", servingCert)
	Expect(serving).NotTo(BeNil(), "the serving Certificate the webhooks' annotation names")
	Expect(serving.GetNamespace()).To(Equal(releaseNS))
	svc := "raygate-webhook-service"
	names := []any{svc + "." + releaseNS + ".svc", svc + "." + releaseNS + ".svc.cluster.local"}
	if slices.ContainsFunc(objs.deployment().Spec.Template.Spec.Containers[0].Args, func(a string) bool { return strings.HasPrefix(a, "--metrics-cert-dir=") }) {
		// The operator serves its metrics with this certificate: it names the metrics Service too.
		names = append(names, "raygate-metrics."+releaseNS+".svc", "raygate-metrics."+releaseNS+".svc.cluster.local")
	}
	Expect(nested[[]any](serving, "spec", "dnsNames")).To(ConsistOf(names...))
	Expect(nested[bool](serving, "spec", "isCA")).To(BeFalse())
	Expect(objs.deployment().Spec.Template.Spec.Volumes).To(ContainElement(HaveField("VolumeSource.Secret.SecretName", nested[string](serving, "spec", "secretName"))))

	caIssuer := issuerOf(objs, serving)
	caSecret := nested[string](caIssuer, "spec", "ca", "secretName")
	Expect(caSecret).NotTo(BeEmpty(), "the serving certificate's Issuer is a CA Issuer")

	var caCert *unstructured.Unstructured
	for _, c := range objs.ofKind("Certificate") {
		if nested[string](c, "spec", "secretName") == caSecret {
			caCert = c
		}
	}
	Expect(caCert).NotTo(BeNil(), "a Certificate writes the CA Issuer's secret %s", caSecret)
	Expect(nested[bool](caCert, "spec", "isCA")).To(BeTrue())
	// A renewed CA keeps its key, so the old and new CA certificates trust each other's
	// serving certificates while the bundle and the served certificate change apart.
	Expect(nested[string](caCert, "spec", "privateKey", "rotationPolicy")).To(Equal("Never"))
	root := issuerOf(objs, caCert)
	Expect(root.Object["spec"]).To(HaveKey("selfSigned"))
}

func issuerOf(objs objects, cert *unstructured.Unstructured) *unstructured.Unstructured {
	GinkgoHelper()
	Expect(nested[string](cert, "spec", "issuerRef", "kind")).To(Equal("Issuer"))
	i := objs.get("Issuer", nested[string](cert, "spec", "issuerRef", "name"))
	Expect(i).NotTo(BeNil(), "issuer of %s", cert.GetName())
	Expect(i.GetNamespace()).To(Equal(cert.GetNamespace()))
	return i
}

func nested[T any](u *unstructured.Unstructured, path ...string) T {
	var zero T
	v, ok, err := unstructured.NestedFieldNoCopy(u.Object, path...)
	if err != nil || !ok {
		return zero
	}
	t, _ := v.(T)
	return t
}

// expectLeastPrivilege: no wildcard anywhere, and no rule on Secrets at all: the rights
// of token authentication (get and create on Secrets) come only with the opt-in
// tokenAuthentication.enabled (expectTokenSecretsRBAC).
func expectLeastPrivilege(objs objects) {
	GinkgoHelper()
	expectNoWildcards(objs)
	for _, kind := range []string{"ClusterRole", "Role"} {
		for name, rules := range objs.rules(kind) {
			for _, r := range rules {
				Expect(r.Resources).NotTo(ContainElement(HavePrefix("secrets")), "%s %s: no rights on Secrets without tokenAuthentication.enabled", kind, name)
			}
		}
	}
}

func expectNoWildcards(objs objects) {
	GinkgoHelper()
	for _, kind := range []string{"ClusterRole", "Role"} {
		for name, rules := range objs.rules(kind) {
			for _, r := range rules {
				for _, field := range [][]string{r.Verbs, r.Resources, r.APIGroups, r.NonResourceURLs, r.ResourceNames} {
					for _, v := range field {
						Expect(v).NotTo(ContainSubstring("*"), "%s %s: %+v", kind, name, r)
					}
				}
			}
		}
	}
}

// tokenSecretsRole is the ClusterRole of tokenAuthentication.enabled.
const tokenSecretsRole = "raygate-system-raygate-token-secrets"

// expectTokenSecretsRBAC: with tokenAuthentication.enabled, exactly one rule names Secrets,
// in its own ClusterRole: get and create, nothing else (never list, watch, update, delete).
// It is bound cluster-wide, or with a RoleBinding in each of watchNamespaces.
func expectTokenSecretsRBAC(objs objects, watchNamespaces ...string) {
	GinkgoHelper()
	expectNoWildcards(objs)
	var secretRules []string
	for _, kind := range []string{"ClusterRole", "Role"} {
		for name, rules := range objs.rules(kind) {
			for _, r := range rules {
				if slices.ContainsFunc(r.Resources, func(res string) bool { return strings.HasPrefix(res, "secrets") }) {
					secretRules = append(secretRules, kind+" "+name)
				}
			}
		}
	}
	Expect(secretRules).To(Equal([]string{"ClusterRole /" + tokenSecretsRole}))
	Expect(typed[rbacv1.ClusterRole](objs.get("ClusterRole", tokenSecretsRole)).Rules).To(Equal([]rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"create", "get"}},
	}))
	if len(watchNamespaces) == 0 {
		expectBoundToOperator(objs, "ClusterRoleBinding", tokenSecretsRole, "ClusterRole")
		return
	}
	Expect(objs.get("ClusterRoleBinding", tokenSecretsRole)).To(BeNil(), "namespace-scoped: no Secrets outside the watched namespaces")
	var bound []string
	for _, u := range objs.ofKind("RoleBinding") {
		rb := typed[rbacv1.RoleBinding](u)
		if rb.RoleRef.Name != tokenSecretsRole {
			continue
		}
		Expect(rb.RoleRef.Kind).To(Equal("ClusterRole"))
		Expect(rb.Subjects).To(Equal([]rbacv1.Subject{{Kind: "ServiceAccount", Name: "raygate", Namespace: releaseNS}}))
		bound = append(bound, rb.Namespace)
	}
	Expect(bound).To(ConsistOf(watchNamespaces))
}

// expectClusterWideRBAC: the manager ClusterRole holds exactly the generated rules, bound to
// the operator's ServiceAccount, and generated Roles land in the release namespace.
func expectClusterWideRBAC(objs objects, gen generated) {
	GinkgoHelper()
	cr := objs.get("ClusterRole", "raygate-system-raygate-manager")
	if len(gen.clusterRules) == 0 {
		Expect(cr).To(BeNil())
	} else {
		Expect(cr).NotTo(BeNil())
		Expect(typed[rbacv1.ClusterRole](cr).Rules).To(Equal(gen.clusterRules))
		expectBoundToOperator(objs, "ClusterRoleBinding", "raygate-system-raygate-manager", "ClusterRole")
	}
	Expect(objs.ofKind("Role")).NotTo(ContainElement(HaveField("Object", HaveKeyWithValue("metadata", HaveKeyWithValue("namespace", Not(Equal(releaseNS)))))),
		"no Role outside the release namespace in cluster-wide mode")
	local := objs.get("Role", "raygate-manager-local")
	if len(gen.ownRules) == 0 {
		Expect(local).To(BeNil())
	} else {
		Expect(typed[rbacv1.Role](local).Rules).To(Equal(gen.ownRules))
	}
}

// expectNamespacedRBAC: one Role per watched namespace, which together with the
// cluster-scoped ClusterRole covers every generated rule, and no ClusterRole but the
// cluster-scoped one, metrics-auth and metrics-reader.
func expectNamespacedRBAC(objs objects, gen generated, namespaces ...string) {
	GinkgoHelper()
	objs = objs.withoutUserRoles() // the users' roles are not the operator's
	Expect(objs.deployment().Spec.Template.Spec.Containers[0].Args).To(ContainElement("--watch-namespaces=" + strings.Join(namespaces, ",")))
	Expect(objs.names("ClusterRole")).To(BeElementOf(
		[]string{"/raygate-system-raygate-metrics-auth", "/raygate-system-raygate-metrics-reader"},
		[]string{"/raygate-system-raygate-manager-cluster-scoped", "/raygate-system-raygate-metrics-auth", "/raygate-system-raygate-metrics-reader"},
	), "no ClusterRole for the workload objects")
	clusterScoped := map[string]bool{}
	if u := objs.get("ClusterRole", "raygate-system-raygate-manager-cluster-scoped"); u != nil {
		for _, r := range typed[rbacv1.ClusterRole](u).Rules {
			Expect(r.NonResourceURLs).To(BeEmpty())
			for _, g := range r.APIGroups {
				for _, res := range r.Resources {
					clusterScoped[g+"/"+res] = true
				}
			}
		}
		expectBoundToOperator(objs, "ClusterRoleBinding", u.GetName(), "ClusterRole")
	}
	var roleRules []rbacv1.PolicyRule
	for i, ns := range namespaces {
		var role *unstructured.Unstructured
		for _, r := range objs.ofKind("Role") {
			if r.GetName() == "raygate-manager" && r.GetNamespace() == ns {
				role = r
			}
		}
		if len(gen.clusterRules) == 0 {
			Expect(role).To(BeNil(), "no generated rules, no Role in %s", ns)
			continue
		}
		Expect(role).NotTo(BeNil(), "Role in %s", ns)
		rules := typed[rbacv1.Role](role).Rules
		if i == 0 {
			roleRules = rules
		}
		Expect(rules).To(Equal(roleRules), "every watched namespace gets the same rules")
		var binding *unstructured.Unstructured
		for _, b := range objs.ofKind("RoleBinding") {
			if b.GetName() == "raygate-manager" && b.GetNamespace() == ns {
				binding = b
			}
		}
		Expect(binding).NotTo(BeNil(), "RoleBinding in %s", ns)
		rb := typed[rbacv1.RoleBinding](binding)
		Expect(rb.RoleRef).To(Equal(rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "raygate-manager"}))
		Expect(rb.Subjects).To(Equal([]rbacv1.Subject{{Kind: "ServiceAccount", Name: "raygate", Namespace: releaseNS}}))
	}
	// Every generated (group, resource, verb) is granted by exactly one of the two.
	for _, r := range gen.clusterRules {
		for _, g := range r.APIGroups {
			for _, res := range r.Resources {
				for _, verb := range r.Verbs {
					inRole := grants(roleRules, g, res, verb)
					Expect(inRole != clusterScoped[g+"/"+res]).To(BeTrue(), "%s/%s %s: in Role %v, cluster-scoped %v", g, res, verb, inRole, clusterScoped[g+"/"+res])
				}
			}
		}
	}
}

func grants(rules []rbacv1.PolicyRule, group, resource, verb string) bool {
	for _, r := range rules {
		if slices.Contains(r.APIGroups, group) && slices.Contains(r.Resources, resource) && slices.Contains(r.Verbs, verb) {
			return true
		}
	}
	return false
}

func expectBoundToOperator(objs objects, kind, name, roleKind string) {
	GinkgoHelper()
	b := objs.get(kind, name)
	Expect(b).NotTo(BeNil(), "%s %s", kind, name)
	crb := typed[rbacv1.ClusterRoleBinding](b)
	Expect(crb.RoleRef).To(Equal(rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: roleKind, Name: name}))
	Expect(crb.Subjects).To(Equal([]rbacv1.Subject{{Kind: "ServiceAccount", Name: "raygate", Namespace: releaseNS}}))
	Expect(objs.get("ServiceAccount", "raygate")).NotTo(BeNil())
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
