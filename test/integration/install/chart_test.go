package install

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/raygate/raygate/internal/app"
	"github.com/raygate/raygate/internal/features"
	"github.com/raygate/raygate/internal/validation"
)

var _ = Describe("the Helm chart", func() {
	DescribeTable("passes helm lint --strict under Helm 4 and Helm 3",
		func(valuesFile string) {
			args := []string{"lint", "--strict", chartDir, "--namespace", releaseNS}
			if valuesFile != "" {
				args = append(args, "-f", filepath.Join(chartDir, "ci", valuesFile))
			}
			for _, bin := range []string{helm, helm3} {
				out, err := runHelmBin(bin, args...)
				Expect(err).NotTo(HaveOccurred())
				Expect(out).To(ContainSubstring("1 chart(s) linted, 0 chart(s) failed"), bin)
			}
		},
		Entry("with default values", ""),
		Entry("in namespace-scoped mode", "namespaced-values.yaml"),
		Entry("without cert-manager", "byo-cert-values.yaml"),
		Entry("with every admission policy", "admission-policies-values.yaml"),
		Entry("with every manager setting away from its default", "all-settings-values.yaml"),
	)

	// Helm 4 orders the rendered documents differently; the objects must be the same.
	DescribeTable("renders the same objects under Helm 3 as under Helm 4",
		func(valuesFile string) {
			args := []string{"template", release, chartDir, "--namespace", releaseNS, "--include-crds"}
			if valuesFile != "" {
				args = append(args, "-f", filepath.Join(chartDir, "ci", valuesFile))
			}
			out4, err := runHelmBin(helm, args...)
			Expect(err).NotTo(HaveOccurred())
			out3, err := runHelmBin(helm3, args...)
			Expect(err).NotTo(HaveOccurred())
			objs4, objs3 := parse(out4), parse(out3)
			Expect(objs4).NotTo(BeEmpty())
			Expect(objs3.byID()).To(Equal(objs4.byID()))
		},
		Entry("with default values", ""),
		Entry("in namespace-scoped mode", "namespaced-values.yaml"),
		Entry("without cert-manager", "byo-cert-values.yaml"),
		Entry("with every admission policy", "admission-policies-values.yaml"),
		Entry("with every manager setting away from its default", "all-settings-values.yaml"),
	)

	Context("with default values", func() {
		var objs objects
		BeforeEach(func() { objs = render() })

		It("runs 2 leader-elected replicas that are ready only once the webhook serves TLS", func() {
			d := objs.deployment()
			Expect(d.Spec.Replicas).To(Equal(ptr.To[int32](2)))
			c := d.Spec.Template.Spec.Containers[0]
			Expect(c.Args).To(ContainElements("--leader-elect", "--enable-webhooks=true"))
			Expect(c.ReadinessProbe.HTTPGet.Path).To(Equal("/readyz"))
			Expect(c.ReadinessProbe.HTTPGet.Port.StrVal).To(Equal("health"))
			Expect(c.Ports).To(ContainElement(corev1.ContainerPort{Name: "webhook-server", ContainerPort: 9443, Protocol: corev1.ProtocolTCP}))
			Expect(d.Spec.Strategy.RollingUpdate.MaxUnavailable.IntValue()).To(Equal(0))

			svc := typed[corev1.Service](objs.get("Service", "raygate-webhook-service"))
			Expect(svc.Spec.Ports).To(HaveLen(1))
			Expect(svc.Spec.Ports[0].Port).To(BeEquivalentTo(443))
			Expect(svc.Spec.Ports[0].TargetPort.StrVal).To(Equal("webhook-server"))
			Expect(svc.Spec.Selector).To(Equal(d.Spec.Selector.MatchLabels))
		})

		It("passes the manager only flags it has, with valid values", func() {
			expectManagerAccepts(objs)
		})

		It("spreads replicas over nodes and zones and keeps one through disruptions", func() {
			d := objs.deployment()
			var keys []string
			for _, c := range d.Spec.Template.Spec.TopologySpreadConstraints {
				keys = append(keys, c.TopologyKey)
				Expect(c.LabelSelector.MatchLabels).To(Equal(d.Spec.Selector.MatchLabels))
			}
			Expect(keys).To(ConsistOf("kubernetes.io/hostname", "topology.kubernetes.io/zone"))

			pdbs := objs.ofKind("PodDisruptionBudget")
			Expect(pdbs).To(HaveLen(1))
			Expect(pdbs[0].Object["spec"]).To(HaveKeyWithValue("minAvailable", BeEquivalentTo(1)))
			Expect(render("--set", "replicas=1").ofKind("PodDisruptionBudget")).To(BeEmpty(), "a PDB of minAvailable 1 over one replica blocks drains")
		})

		It("runs the operator under a restricted security context with the certificate read-only", func() {
			expectRestrictedPod(objs.deployment().Spec.Template.Spec)
		})

		It("issues the webhook certificate from a CA chain whose CA the webhooks trust", func() {
			expectCAChain(objs, "raygate-webhook-cert")
		})

		It("grants no wildcards and no rights on Secrets", func() {
			expectLeastPrivilege(objs)
		})

		It("serves metrics over HTTPS with authentication and authorization", func() {
			c := objs.deployment().Spec.Template.Spec.Containers[0]
			Expect(c.Args).To(ContainElements("--metrics-bind-address=:8443", "--metrics-secure=true"))
			Expect(objs.get("Service", "raygate-metrics")).NotTo(BeNil())
			Expect(objs.get("ClusterRole", "raygate-system-raygate-metrics-auth")).NotTo(BeNil())
			Expect(objs.ofKind("ServiceMonitor")).To(BeEmpty())

			sm := render("--set", "metrics.serviceMonitor.enabled=true").ofKind("ServiceMonitor")
			Expect(sm).To(HaveLen(1))
			Expect(sm[0].Object["spec"]).To(HaveKeyWithValue("endpoints", ContainElement(HaveKeyWithValue("scheme", "https"))))
		})
	})

	It("grants get and create on Secrets, and passes --token-authentication, only with tokenAuthentication.enabled", func() {
		Expect(render().deployment().Spec.Template.Spec.Containers[0].Args).NotTo(ContainElement("--token-authentication"))
		Expect(render("-f", filepath.Join(chartDir, "ci", "namespaced-values.yaml")).get("ClusterRole", tokenSecretsRole)).To(BeNil())

		on := render("--set", "tokenAuthentication.enabled=true")
		expectTokenSecretsRBAC(on)
		Expect(on.deployment().Spec.Template.Spec.Containers[0].Args).To(ContainElement("--token-authentication"))
		expectManagerAccepts(on)

		scoped := render("-f", filepath.Join(chartDir, "ci", "namespaced-values.yaml"), "--set", "tokenAuthentication.enabled=true")
		expectTokenSecretsRBAC(scoped, "team-a", "team-b")
		Expect(scoped.deployment().Spec.Template.Spec.Containers[0].Args).To(ContainElement("--token-authentication"))

		_, err := runHelmBin(helm, "template", release, chartDir, "--namespace", releaseNS, "--set", "tokenAuthentication.enabled=yes")
		Expect(err).To(HaveOccurred(), "the schema types the value")
	})

	It("renders feature gates sorted into one --feature-gates flag", func() {
		d := render("--set", "featureGates.RayServiceIncrementalUpgrade=true", "--set", "featureGates.RayMultiHostIndexing=false",
			"--set", "featureGates.RayClusterStatusConditions=true").deployment()
		Expect(d.Spec.Template.Spec.Containers[0].Args).To(ContainElement(
			"--feature-gates=RayClusterStatusConditions=true,RayMultiHostIndexing=false,RayServiceIncrementalUpgrade=true"))
		Expect(render().deployment().Spec.Template.Spec.Containers[0].Args).NotTo(ContainElement(HavePrefix("--feature-gates")))
	})

	It("passes the pod limits to the manager, defaulting to its own defaults", func() {
		args := render().deployment().Spec.Template.Spec.Containers[0].Args
		Expect(args).To(ContainElements(
			fmt.Sprintf("--max-pods-per-group=%d", validation.DefaultMaxPodsPerGroup),
			fmt.Sprintf("--max-pods-per-cluster=%d", validation.DefaultMaxPodsPerCluster)))
		args = render("--set", "maxPodsPerGroup=64", "--set", "maxPodsPerCluster=20000000").deployment().Spec.Template.Spec.Containers[0].Args
		Expect(args).To(ContainElements("--max-pods-per-group=64", "--max-pods-per-cluster=20000000"), "large values render as integers")
	})

	It("passes the admin policy to the manager: ClusterIP Services only and Pod Security enforced by default", func() {
		args := render().deployment().Spec.Template.Spec.Containers[0].Args
		Expect(args).To(ContainElements("--allowed-service-types=ClusterIP", "--pod-security-check=enforce"))
		Expect(args).NotTo(ContainElement(HavePrefix("--allowed-gateway-classes")))
		Expect(args).NotTo(ContainElement(HavePrefix("--allowed-image-registries")))
		args = render("--set", "policy.allowedGatewayClasses={istio,envoy}", "--set", "policy.allowedServiceTypes={ClusterIP,LoadBalancer}",
			"--set", "policy.allowedImageRegistries={docker.io,registry.example.com:5000}", "--set", "policy.podSecurity.check=warn",
			"--set", "policy.podSecurity.exemptNamespaces={kube-system}").deployment().Spec.Template.Spec.Containers[0].Args
		Expect(args).To(ContainElements("--allowed-gateway-classes=istio,envoy", "--allowed-service-types=ClusterIP,LoadBalancer",
			"--allowed-image-registries=docker.io,registry.example.com:5000", "--pod-security-check=warn", "--pod-security-exempt-namespaces=kube-system"))
		args = render("--set", "policy.allowedServiceTypes=null").deployment().Spec.Template.Spec.Containers[0].Args
		Expect(args).To(ContainElement("--allowed-service-types="), "an empty list allows any type")
	})

	It("offers exactly the manager's feature gates in values.schema.json", func() {
		b, err := os.ReadFile(filepath.Join(chartDir, "values.schema.json"))
		Expect(err).NotTo(HaveOccurred())
		var schema struct {
			Properties struct {
				FeatureGates struct {
					Properties map[string]any `json:"properties"`
				} `json:"featureGates"`
			} `json:"properties"`
		}
		Expect(json.Unmarshal(b, &schema)).To(Succeed())
		var inSchema, inManager []string
		for name := range schema.Properties.FeatureGates.Properties {
			inSchema = append(inSchema, name)
		}
		for f := range features.Specs {
			inManager = append(inManager, string(f))
		}
		sort.Strings(inSchema)
		sort.Strings(inManager)
		Expect(inSchema).To(Equal(inManager), "update featureGates in charts/raygate/values.schema.json")
	})

	DescribeTable("rejects bad values with a message naming the field, under Helm 4 and Helm 3",
		func(set, want string) {
			for _, bin := range []string{helm, helm3} {
				_, err := runHelmBin(bin, "template", release, chartDir, "--namespace", releaseNS, "--set", set)
				Expect(err).To(HaveOccurred(), bin)
				Expect(err.Error()).To(ContainSubstring(want))
			}
		},
		Entry("a string for replicas", "replicas=abc", "at '/replicas': got string, want integer"),
		Entry("an unknown key", "replica=2", "additional properties 'replica' not allowed"),
		Entry("an unknown feature gate", "featureGates.RayTypo=true", "additional properties 'RayTypo' not allowed"),
		Entry("a webhook timeout over 30s", "webhook.timeoutSeconds=31", "at '/webhook/timeoutSeconds'"),
		Entry("an unknown failure policy", "webhook.failurePolicy=Maybe", "at '/webhook/failurePolicy'"),
		Entry("an invalid namespace", "watchNamespaces={Team_A}", "at '/watchNamespaces/0'"),
		Entry("no CA bundle without cert-manager", "webhook.certManager.enabled=false", "webhook.caBundle is required"),
		Entry("a registry given as a URL", "admissionPolicies.allowedRegistries.registries={https://registry.example.com}", "at '/admissionPolicies/allowedRegistries/registries/0'"),
		Entry("an unknown validation action", "admissionPolicies.validationActions={Block}", "at '/admissionPolicies/validationActions/0'"),
		Entry("the registry policy without registries", "admissionPolicies.allowedRegistries.enabled=true", "admissionPolicies.allowedRegistries.registries must list at least one registry host"),
		Entry("Deny and Warn together", "admissionPolicies.forbidHostAccess.enabled=true,admissionPolicies.validationActions={Deny,Warn}", "Deny and Warn cannot be combined"),
		Entry("no pods per group", "maxPodsPerGroup=0", "at '/maxPodsPerGroup'"),
		Entry("pods per cluster over int32", "maxPodsPerCluster=2147483648", "at '/maxPodsPerCluster'"),
		Entry("ExternalName Services", "policy.allowedServiceTypes={ClusterIP,ExternalName}", "at '/policy/allowedServiceTypes/1'"),
		Entry("Service types without ClusterIP", "policy.allowedServiceTypes={LoadBalancer}", "at '/policy/allowedServiceTypes'"),
		Entry("an unknown Pod Security check", "policy.podSecurity.check=audit", "at '/policy/podSecurity/check'"),
		Entry("a registry with a path", "policy.allowedImageRegistries={docker.io/rayproject}", "at '/policy/allowedImageRegistries/0'"),
		Entry("a sync period without a unit", "syncPeriod=10", "at '/syncPeriod'"),
		Entry("HTTP/2 as a word", "enableHTTP2=yes", "at '/enableHTTP2'"),
		Entry("a Lease name with capitals", "leaderElection.id=Raygate", "at '/leaderElection/id'"),
		Entry("an unknown environment setting", "operatorEnv.enableEverything=true", "additional properties 'enableEverything' not allowed"),
		Entry("an unknown NetworkPolicy key", "networkPolicy.egress=true", "additional properties 'egress' not allowed"),
		Entry("a negative preStop sleep", "shutdown.preStopSleepSeconds=-1", "at '/shutdown/preStopSleepSeconds'"),
		Entry("a drain without a unit", "shutdown.webhookDrain=2", "at '/shutdown/webhookDrain'"),
		Entry("a grace period the preStop sleep fills", "shutdown.preStopSleepSeconds=30", "shutdown.terminationGracePeriodSeconds (30) must exceed shutdown.preStopSleepSeconds (30)"),
	)

	It("renders no admission policy by default, and binds them to the watched namespaces in namespace-scoped mode", func() {
		Expect(render().ofKind("ValidatingAdmissionPolicy")).To(BeEmpty())
		Expect(render().ofKind("ValidatingAdmissionPolicyBinding")).To(BeEmpty())

		objs := render("-f", filepath.Join(chartDir, "ci", "admission-policies-values.yaml"))
		Expect(objs.names("ValidatingAdmissionPolicy")).To(Equal([]string{"/raygate-system-raygate-allowed-registries",
			"/raygate-system-raygate-forbid-host-access", "/raygate-system-raygate-require-resource-limits"}))
		for _, b := range objs.ofKind("ValidatingAdmissionPolicyBinding") {
			Expect(b.Object["spec"]).To(HaveKeyWithValue("validationActions", ConsistOf("Deny")))
			Expect(b.Object["spec"]).To(HaveKeyWithValue("matchResources", HaveKeyWithValue("namespaceSelector", HaveKey("matchExpressions"))))
		}

		scoped := render("--set", "watchNamespaces={team-a,team-b}", "--set", "admissionPolicies.forbidHostAccess.enabled=true")
		bindings := scoped.ofKind("ValidatingAdmissionPolicyBinding")
		Expect(bindings).To(HaveLen(1))
		Expect(bindings[0].Object["spec"]).To(HaveKeyWithValue("matchResources", HaveKeyWithValue("namespaceSelector",
			HaveKeyWithValue("matchExpressions", ConsistOf(And(HaveKeyWithValue("key", "kubernetes.io/metadata.name"),
				HaveKeyWithValue("values", ConsistOf("team-a", "team-b"))))))))
	})

	It("refuses the admission policies on Kubernetes older than 1.34, whose CEL lacks what they use", func() {
		_, err := runHelm("template", release, chartDir, "--namespace", releaseNS, "--kube-version", "1.33.0",
			"--set", "admissionPolicies.requireResourceLimits.enabled=true")
		Expect(err).To(MatchError(ContainSubstring("admissionPolicies need Kubernetes 1.34 or newer")))
	})

	It("mounts the user's certificate and trusts the user's CA without cert-manager", func() {
		objs := render("-f", filepath.Join(chartDir, "ci", "byo-cert-values.yaml"))
		for _, kind := range []string{"Certificate", "Issuer"} {
			Expect(objs.ofKind(kind)).To(BeEmpty())
		}
		vol := objs.deployment().Spec.Template.Spec.Volumes[0]
		Expect(vol.Secret.SecretName).To(Equal("raygate-webhook-tls"))
		for _, u := range append(objs.ofKind("MutatingWebhookConfiguration"), objs.ofKind("ValidatingWebhookConfiguration")...) {
			Expect(u.GetAnnotations()).NotTo(HaveKey("cert-manager.io/inject-ca-from"))
		}
		expectManagerAccepts(objs)
	})

	It("runs without webhooks when they are turned off", func() {
		objs := render("--set", "webhook.enabled=false")
		for _, kind := range []string{"MutatingWebhookConfiguration", "ValidatingWebhookConfiguration", "Certificate", "Issuer"} {
			Expect(objs.ofKind(kind)).To(BeEmpty(), kind)
		}
		Expect(objs.get("Service", "raygate-webhook-service")).To(BeNil())
		spec := objs.deployment().Spec.Template.Spec
		Expect(spec.Containers[0].Args).To(ContainElement("--enable-webhooks=false"))
		Expect(spec.Volumes).To(BeEmpty())
		expectManagerAccepts(objs)
	})
})

// expectManagerAccepts parses the rendered container args with the manager's own flag set,
// so a flag the manager does not have, or a value it rejects, fails here and not in a
// user's CrashLoopBackOff.
func expectManagerAccepts(objs objects) {
	GinkgoHelper()
	c := objs.deployment().Spec.Template.Spec.Containers[0]
	Expect(c.Command).To(BeEmpty(), "the image's entrypoint is the manager")
	opts := app.DefaultOptions()
	fs := pflag.NewFlagSet("raygate", pflag.ContinueOnError)
	opts.BindFlags(fs)
	Expect(fs.Parse(c.Args)).To(Succeed())
	Expect(opts.Validate()).To(Succeed())
	Expect(fs.Args()).To(BeEmpty(), "positional arguments")
	if slices.Contains(c.Args, "--enable-webhooks=true") {
		Expect(c.VolumeMounts).To(ContainElement(HaveField("MountPath", opts.WebhookCertDir)))
		Expect(c.Ports).To(ContainElement(HaveField("ContainerPort", int32(opts.WebhookPort))))
	}
	probePort := strings.TrimPrefix(opts.ProbeAddr, ":")
	Expect(c.Ports).To(ContainElement(And(HaveField("Name", "health"), HaveField("ContainerPort", WithTransform(func(p int32) string { return strconv.Itoa(int(p)) }, Equal(probePort))))))
}

func expectRestrictedPod(spec corev1.PodSpec) {
	GinkgoHelper()
	Expect(spec.SecurityContext.RunAsNonRoot).To(Equal(ptr.To(true)))
	Expect(spec.SecurityContext.SeccompProfile.Type).To(Equal(corev1.SeccompProfileTypeRuntimeDefault))
	Expect(spec.HostNetwork || spec.HostPID || spec.HostIPC).To(BeFalse())
	for _, c := range spec.Containers {
		sc := c.SecurityContext
		Expect(sc).NotTo(BeNil())
		Expect(sc.AllowPrivilegeEscalation).To(Equal(ptr.To(false)))
		Expect(sc.ReadOnlyRootFilesystem).To(Equal(ptr.To(true)))
		Expect(sc.RunAsNonRoot).To(Equal(ptr.To(true)))
		Expect(sc.Capabilities.Drop).To(Equal([]corev1.Capability{"ALL"}))
		Expect(sc.Capabilities.Add).To(BeEmpty())
		Expect(sc.Privileged).To(BeNil())
		for _, m := range c.VolumeMounts {
			Expect(m.ReadOnly).To(BeTrue(), "volume %s is mounted writable", m.Name)
		}
	}
	for _, v := range spec.Volumes {
		Expect(v.HostPath).To(BeNil())
	}
}
