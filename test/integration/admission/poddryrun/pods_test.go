package poddryrun

import (
	"context"
	"fmt"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/test/builders"
)

// manifest is an object as YAML, for kubectl.
func manifest(obj any) string {
	GinkgoHelper()
	b, err := yaml.Marshal(obj)
	Expect(err).NotTo(HaveOccurred())
	return string(b)
}

// object is a RayCluster or a RayService named name whose cluster spec change alters, and the
// path of that cluster spec in it.
func object(kind, name string, change func(*rayv1.RayClusterSpec)) (string, string) {
	if kind == rayv1.RayServiceKind {
		svc := builders.RayService(name, "").Obj()
		change(&svc.Spec.RayClusterSpec)
		return manifest(svc), "spec.rayClusterConfig"
	}
	rc := builders.RayCluster(name, "").Obj()
	change(&rc.Spec)
	return manifest(rc), "spec"
}

func worker(s *rayv1.RayClusterSpec) *corev1.Container {
	return &s.WorkerGroupSpecs[0].Template.Spec.Containers[0]
}

// refused is what kubectl prints for an object refused with one error.
func refused(kind, name, line string) string {
	return fmt.Sprintf("The %s %q is invalid: %s\n", kind, name, line)
}

// created is what kubectl prints for a created object.
func created(kind, name string) string {
	return strings.ToLower(kind) + ".ray.io/" + name + " created\n"
}

// expectApply applies a manifest in ns and checks kubectl's answer: with the dry-run, the
// refusal (empty: created without warnings); without it (RAYGATE_POD_DRY_RUN=false),
// created as before.
func expectApply(ctx context.Context, ns, kind, name, doc, withDryRun string) {
	GinkgoHelper()
	stdout, stderr, err := kubectl(ctx, doc, "apply", "-n", ns, "-f", "-")
	if !dryRun || withDryRun == "" {
		Expect(err).NotTo(HaveOccurred(), stderr)
		Expect(stdout).To(Equal(created(kind, name)))
		Expect(stderr).To(BeEmpty())
		return
	}
	Expect(err).To(HaveOccurred())
	Expect(stderr).To(Equal(withDryRun))
}

// limitRange caps each container at 2 CPUs in ns.
func limitRange(ctx context.Context, ns string) {
	GinkgoHelper()
	lr := &corev1.LimitRange{ObjectMeta: metav1.ObjectMeta{Name: "cpu-cap", Namespace: ns}, Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{{
		Type: corev1.LimitTypeContainer, Max: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")},
	}}}}
	Expect(env.Client.Create(ctx, lr)).To(Succeed())
}

// noLatestImages is a ValidatingAdmissionPolicy refusing pods with :latest images in the
// namespaces labelled raygate-test/vap=on.
func noLatestImages(ctx context.Context) {
	GinkgoHelper()
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "no-latest-images"},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: ptr.To(admissionregistrationv1.Fail),
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionregistrationv1.RuleWithOperations{
					Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
					Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}},
				},
			}}},
			Validations: []admissionregistrationv1.Validation{{
				Expression: `object.spec.containers.all(c, !c.image.endsWith(':latest'))`,
				Message:    "images must name a version, not :latest",
			}},
		},
	}
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "no-latest-images"},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        policy.Name,
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
			MatchResources:    &admissionregistrationv1.MatchResources{NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"raygate-test/vap": "on"}}},
		},
	}
	Expect(env.Client.Create(ctx, policy)).To(Succeed())
	Expect(env.Client.Create(ctx, binding)).To(Succeed())
	DeferCleanup(func(ctx context.Context) {
		Expect(env.Client.Delete(ctx, binding)).To(Succeed())
		Expect(env.Client.Delete(ctx, policy)).To(Succeed())
	})
}

// waitForPolicy waits until the API server enforces the admission policy in ns.
func waitForPolicy(ctx context.Context, ns string) {
	GinkgoHelper()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{GenerateName: "probe-", Namespace: ns},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox:latest"}}}}
	Eventually(func() error { return env.Client.Create(ctx, pod.DeepCopy(), client.DryRunAll) }).Should(MatchError(ContainSubstring("no-latest-images")))
}

var _ = Describe("what the API server refuses in the pods raygate would create", func() {
	for _, kind := range []string{rayv1.RayClusterKind, rayv1.RayServiceKind} {
		Context("a "+kind, func() {
			It("refuses a container whose CPU request is above its limit", func(ctx context.Context) {
				ns := newNamespace(ctx, "limits", "", nil)
				doc, spec := object(kind, "over-limit", func(s *rayv1.RayClusterSpec) {
					worker(s).Resources.Requests[corev1.ResourceCPU] = resource.MustParse("2")
				})
				expectApply(ctx, ns, kind, "over-limit", doc, refused(kind, "over-limit",
					spec+`.workerGroupSpecs[0].template.spec.containers[0].resources.requests: Invalid value: "2": must be less than or equal to cpu limit of 1`))
			})

			It("refuses an environment variable name with '='", func(ctx context.Context) {
				ns := newNamespace(ctx, "env", "", nil)
				doc, spec := object(kind, "bad-env", func(s *rayv1.RayClusterSpec) {
					worker(s).Env = []corev1.EnvVar{{Name: "MODEL", Value: "x"}, {Name: "1BAD=", Value: "y"}}
				})
				expectApply(ctx, ns, kind, "bad-env", doc, refused(kind, "bad-env",
					spec+`.workerGroupSpecs[0].template.spec.containers[0].env[1].name: Invalid value: "1BAD=": `+env.EnvVarNameRefusal()))
			})

			It("refuses a volume mount without its volume", func(ctx context.Context) {
				ns := newNamespace(ctx, "mount", "", nil)
				doc, spec := object(kind, "no-volume", func(s *rayv1.RayClusterSpec) {
					head := &s.HeadGroupSpec.Template.Spec.Containers[0]
					head.VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}
				})
				expectApply(ctx, ns, kind, "no-volume", doc, refused(kind, "no-volume",
					spec+`.headGroupSpec.template.spec.containers[0].volumeMounts[0].name: Not found: "data"`))
			})

			It("refuses a container above the namespace's LimitRange maximum", func(ctx context.Context) {
				ns := newNamespace(ctx, "limitrange", "", nil)
				limitRange(ctx, ns)
				doc, spec := object(kind, "too-big", func(s *rayv1.RayClusterSpec) {
					four := resource.MustParse("4")
					worker(s).Resources.Requests[corev1.ResourceCPU], worker(s).Resources.Limits[corev1.ResourceCPU] = four, four
				})
				expectApply(ctx, ns, kind, "too-big", doc, refused(kind, "too-big",
					spec+`.workerGroupSpecs[0].template: Forbidden: the API server refuses the pods of worker group "workers": maximum cpu usage per Container is 2, but limit is 4`))
			})

			It("refuses what a ValidatingAdmissionPolicy on pods refuses", func(ctx context.Context) {
				ns := newNamespace(ctx, "vap", "", map[string]string{"raygate-test/vap": "on"})
				noLatestImages(ctx)
				waitForPolicy(ctx, ns)
				doc, spec := object(kind, "latest", func(s *rayv1.RayClusterSpec) { worker(s).Image = "rayproject/ray:latest" })
				expectApply(ctx, ns, kind, "latest", doc, refused(kind, "latest",
					spec+`.workerGroupSpecs[0].template: Forbidden: the API server refuses the pods of worker group "workers": ValidatingAdmissionPolicy 'no-latest-images' with binding 'no-latest-images' denied request: images must name a version, not :latest`))
			})

			It("refuses what the API server's Pod Security default enforces in a namespace without labels", func(ctx context.Context) {
				ns := newNamespace(ctx, "psa-default", "", nil)
				doc, spec := object(kind, "privileged", func(s *rayv1.RayClusterSpec) {
					worker(s).SecurityContext = &corev1.SecurityContext{Privileged: ptr.To(true)}
				})
				expectApply(ctx, ns, kind, "privileged", doc, refused(kind, "privileged",
					spec+`.workerGroupSpecs[0].template.spec.containers[0].securityContext.privileged: Forbidden: violates PodSecurity "baseline:latest": privileged (containers "wait-gcs-ready", "ray-worker" must not set securityContext.privileged=true)`))
			})

			It("admits what the API server's Pod Security configuration exempts, whatever the namespace's labels say", func(ctx context.Context) {
				doc, _ := object(kind, "exempt", func(*rayv1.RayClusterSpec) {})
				stdout, stderr, err := kubectl(ctx, doc, "apply", "-n", exemptNamespace, "-f", "-")
				if dryRun {
					Expect(err).NotTo(HaveOccurred(), stderr)
					Expect(stdout).To(Equal(created(kind, "exempt")))
					Expect(stderr).To(BeEmpty())
					return
				}
				Expect(err).To(HaveOccurred(), "raygate reads only the labels: restricted")
				Expect(stderr).To(ContainSubstring(`securityContext.runAsNonRoot: Forbidden: violates PodSecurity "restricted:latest"`))
			})

			It("admits pods the API server admits, without a word", func(ctx context.Context) {
				ns := newNamespace(ctx, "fine", "", nil)
				limitRange(ctx, ns)
				doc, _ := object(kind, "fine", func(*rayv1.RayClusterSpec) {})
				expectApply(ctx, ns, kind, "fine", doc, "")
			})
		})
	}

	BeforeEach(func(ctx context.Context) {
		// Created once: Pod Security exemptions are by namespace name.
		ns := &corev1.Namespace{}
		if err := env.Client.Get(ctx, client.ObjectKey{Name: exemptNamespace}, ns); err != nil {
			newNamespace(ctx, "", exemptNamespace, map[string]string{"pod-security.kubernetes.io/enforce": "restricted"})
		}
	})

	It("lists every refusal of a RayJob's pods, its submitter's included", func(ctx context.Context) {
		ns := newNamespace(ctx, "job", "", nil)
		job := builders.RayJob("job", "").SubmitterTemplate("rayproject/ray:2.52.0").Obj()
		job.Spec.SubmitterPodTemplate.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}
		worker(job.Spec.RayClusterSpec).Env = []corev1.EnvVar{{Name: "1BAD=", Value: "y"}}
		want := `The RayJob "job" is invalid: ` + "\n" +
			`* spec.rayClusterSpec.workerGroupSpecs[0].template.spec.containers[0].env[0].name: Invalid value: "1BAD=": ` + env.EnvVarNameRefusal() + "\n" +
			`* spec.submitterPodTemplate.spec.containers[0].volumeMounts[0].name: Not found: "data"` + "\n"
		expectApply(ctx, ns, rayv1.RayJobKind, "job", manifest(job), want)
	})
})
