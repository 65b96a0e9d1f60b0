package tenancy

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	rayscheme "github.com/raygate/raygate/apis/scheme"
	"github.com/raygate/raygate/internal/defaulting"
	"github.com/raygate/raygate/internal/raypod"
	"github.com/raygate/raygate/internal/testenv/tools"
	"github.com/raygate/raygate/test/builders"
)

const (
	enforceLabel        = "pod-security.kubernetes.io/enforce"
	enforceVersionLabel = "pod-security.kubernetes.io/enforce-version"
	warnLabel           = "pod-security.kubernetes.io/warn"
	auditLabel          = "pod-security.kubernetes.io/audit"
)

// sample is a KubeRay sample manifest of config/samples.
func sample(name string) *rayv1.RayCluster {
	GinkgoHelper()
	b, err := os.ReadFile(filepath.Join(tools.RepoRoot(), "config", "samples", name))
	Expect(err).NotTo(HaveOccurred())
	rc := &rayv1.RayCluster{}
	Expect(yaml.UnmarshalStrict(b, rc)).To(Succeed())
	return rc
}

// restrictedContainer and restrictedPod meet the restricted standard together.
func restrictedContainer() *corev1.SecurityContext {
	return &corev1.SecurityContext{AllowPrivilegeEscalation: ptr.To(false), Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}}
}

func restrictedPod() *corev1.PodSecurityContext {
	return &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true), SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}}
}

// compliant is a cluster with the autoscaler whose every pod meets the restricted standard.
func compliant(change func(*rayv1.RayCluster)) func() *rayv1.RayCluster {
	return func() *rayv1.RayCluster {
		rc := builders.RayCluster("ray", "").Autoscaling().Obj()
		rc.Spec.AutoscalerOptions = &rayv1.AutoscalerOptions{SecurityContext: restrictedContainer()}
		for _, t := range templates(rc) {
			t.Spec.SecurityContext = restrictedPod()
			t.Spec.Containers[0].SecurityContext = restrictedContainer()
		}
		if change != nil {
			change(rc)
		}
		return rc
	}
}

func plain(change func(*rayv1.RayCluster)) func() *rayv1.RayCluster {
	return func() *rayv1.RayCluster {
		rc := builders.RayCluster("ray", "").Obj()
		rc.Spec.WorkerGroupSpecs = append(rc.Spec.WorkerGroupSpecs, builders.WorkerGroup("gpu", 1))
		change(rc)
		return rc
	}
}

func templates(rc *rayv1.RayCluster) []*corev1.PodTemplateSpec {
	out := []*corev1.PodTemplateSpec{&rc.Spec.HeadGroupSpec.Template}
	for i := range rc.Spec.WorkerGroupSpecs {
		out = append(out, &rc.Spec.WorkerGroupSpecs[i].Template)
	}
	return out
}

// The clusters of the table: templates the standards treat differently.
var clusters = []struct {
	name string
	make func() *rayv1.RayCluster
}{
	{"the KubeRay sample", func() *rayv1.RayCluster { return sample("ray_v1_raycluster.yaml") }},
	{"restricted everywhere, autoscaler included", compliant(nil)},
	{"restricted, but the autoscaler sidecar without a securityContext", compliant(func(rc *rayv1.RayCluster) { rc.Spec.AutoscalerOptions = nil })},
	{"restricted, but no seccomp profile", compliant(func(rc *rayv1.RayCluster) {
		for _, t := range templates(rc) {
			t.Spec.SecurityContext.SeccompProfile = nil
		}
	})},
	{"restricted, with NET_BIND_SERVICE added", compliant(func(rc *rayv1.RayCluster) {
		rc.Spec.WorkerGroupSpecs[0].Template.Spec.Containers[0].SecurityContext.Capabilities.Add = []corev1.Capability{"NET_BIND_SERVICE"}
	})},
	{"restricted, but an init container allowing privilege escalation", compliant(func(rc *rayv1.RayCluster) {
		rc.Spec.WorkerGroupSpecs[0].Template.Spec.InitContainers = []corev1.Container{{Name: "setup", Image: "busybox",
			SecurityContext: &corev1.SecurityContext{AllowPrivilegeEscalation: ptr.To(true), Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}}}}
	})},
	{"restricted, but running as root", compliant(func(rc *rayv1.RayCluster) {
		rc.Spec.HeadGroupSpec.Template.Spec.SecurityContext.RunAsUser = ptr.To[int64](0)
	})},
	{"seccomp Unconfined on the pod", plain(func(rc *rayv1.RayCluster) {
		rc.Spec.WorkerGroupSpecs[1].Template.Spec.SecurityContext = &corev1.PodSecurityContext{SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeUnconfined}}
	})},
	{"a privileged second worker group", plain(func(rc *rayv1.RayCluster) {
		rc.Spec.WorkerGroupSpecs[1].Template.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{Privileged: ptr.To(true)}
	})},
	{"host network and a host port on the head", plain(func(rc *rayv1.RayCluster) {
		s := &rc.Spec.HeadGroupSpec.Template.Spec
		s.HostNetwork = true
		s.Containers[0].Ports = []corev1.ContainerPort{{Name: "dashboard", ContainerPort: 8265, HostPort: 8265}}
	})},
	{"a hostPath volume", plain(func(rc *rayv1.RayCluster) {
		rc.Spec.WorkerGroupSpecs[0].Template.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/data"}}}}
	})},
	{"SYS_ADMIN added", plain(func(rc *rayv1.RayCluster) {
		rc.Spec.WorkerGroupSpecs[0].Template.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{Capabilities: &corev1.Capabilities{Add: []corev1.Capability{"SYS_ADMIN"}}}
	})},
	{"an unsafe sysctl", plain(func(rc *rayv1.RayCluster) {
		rc.Spec.HeadGroupSpec.Template.Spec.SecurityContext = &corev1.PodSecurityContext{Sysctls: []corev1.Sysctl{{Name: "kernel.msgmax", Value: "65536"}}}
	})},
}

// The namespaces of the table: each level, with versions where the standards changed.
var levels = []struct {
	name   string
	labels map[string]string
}{
	{"privileged", map[string]string{enforceLabel: "privileged"}},
	{"baseline-v1-18", map[string]string{enforceLabel: "baseline", enforceVersionLabel: "v1.18"}},
	{"baseline", map[string]string{enforceLabel: "baseline", enforceVersionLabel: "latest"}},
	{"restricted-v1-18", map[string]string{enforceLabel: "restricted", enforceVersionLabel: "v1.18"}},
	{"restricted-v1-24", map[string]string{enforceLabel: "restricted", enforceVersionLabel: "v1.24"}},
	{"restricted", map[string]string{enforceLabel: "restricted"}},
	{"warn-restricted", map[string]string{enforceLabel: "baseline", warnLabel: "restricted", auditLabel: "restricted"}},
}

// raygatePods are the pods the RayCluster controller would create for a cluster as stored
// (defaulted): its head and one pod of each worker group.
func raygatePods(rc *rayv1.RayCluster, ns string) []*corev1.Pod {
	c := rc.DeepCopy()
	c.Namespace, c.UID = ns, "6f1f1d7e-0000-4000-8000-000000000001" // as stored: pods name it as their owner
	defaulting.RayCluster(c)
	pods := []*corev1.Pod{raypod.HeadPod(c, "", raypod.Settings{})}
	for i := range c.Spec.WorkerGroupSpecs {
		pods = append(pods, raypod.WorkerPod(c, &c.Spec.WorkerGroupSpecs[i], nil, raypod.Settings{}))
	}
	return pods
}

var (
	violatesLine = regexp.MustCompile(`violates PodSecurity "([^"]+)": (.*)$`)
	warningLine  = regexp.MustCompile(`^Warning: (?:.*: )?would violate PodSecurity "([^"]+)": (.*)$`)
)

// checks are the check names ("privileged", "host namespaces") in kubectl output lines that
// match re, each as "level:version reason". A line lists checks as "reason (detail), reason
// (detail)"; commas inside a detail's parentheses belong to the detail.
func checks(out string, re *regexp.Regexp) []string {
	var found []string
	for _, line := range strings.Split(out, "\n") {
		m := re.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		depth, start := 0, 0
		list := m[2] + ", "
		for i := 0; i < len(list); i++ {
			switch {
			case list[i] == '(':
				depth++
			case list[i] == ')':
				depth--
			case depth == 0 && strings.HasPrefix(list[i:], ", "):
				reason, _, _ := strings.Cut(list[start:i], " (")
				found = append(found, m[1]+" "+reason)
				start = i + 2
				i++
			}
		}
	}
	slices.Sort(found)
	return slices.Compact(found)
}

// warningRecorder keeps the warnings the API server sends, as kubectl prints them.
type warningRecorder struct{ lines []string }

func (w *warningRecorder) HandleWarningHeader(_ int, _ string, text string) {
	w.lines = append(w.lines, "Warning: "+text)
}

// createPodDryRun creates a pod in a server-side dry run, as the RayCluster controller would
// create it, and returns the API server's warnings.
func createPodDryRun(ctx context.Context, pod *corev1.Pod) (string, error) {
	return createDryRun(ctx, pod.DeepCopy(), pod.Namespace)
}

// createDryRun creates an object in a server-side dry run and returns the warnings. (The
// table goes through the API client rather than kubectl to keep it fast; what kubectl prints
// is checked in the specs below.)
func createDryRun(ctx context.Context, obj client.Object, ns string) (string, error) {
	GinkgoHelper()
	rec := &warningRecorder{}
	cfg := rest.CopyConfig(env.Config)
	cfg.WarningHandler = rec
	c, err := client.New(cfg, client.Options{Scheme: rayscheme.New()})
	Expect(err).NotTo(HaveOccurred())
	obj.SetNamespace(ns)
	err = c.Create(ctx, obj, client.DryRunAll)
	return strings.Join(rec.lines, "\n"), err
}

// causes are the causes of a refusal, one per line as kubectl prints them.
func causes(err error) string {
	var status apierrors.APIStatus
	if !errors.As(err, &status) || status.Status().Details == nil {
		if err != nil {
			return err.Error()
		}
		return ""
	}
	var lines []string
	for _, c := range status.Status().Details.Causes {
		lines = append(lines, "* "+c.Field+": "+c.Message)
	}
	return strings.Join(lines, "\n")
}

var _ = Describe("Pod Security at admission", func() {
	It("admits exactly the RayClusters whose pods the API server's Pod Security admission admits, naming the same checks", func(ctx context.Context) {
		namespaces := map[string]string{}
		for _, l := range levels {
			namespaces[l.name] = newNamespace(ctx, "psa-"+l.name, l.labels)
		}
		refused, admitted := 0, 0
		for _, c := range clusters {
			for _, l := range levels {
				ns := namespaces[l.name]
				where := fmt.Sprintf("%s in a %s namespace", c.name, l.name)
				rc := c.make()
				rc.Name = "ray"

				rcWarnings, err := createDryRun(ctx, rc, ns)
				raygateAdmits := err == nil
				rcErr := causes(err)
				var podErr, podWarnings string
				podsAdmitted := true
				for _, pod := range raygatePods(rc, ns) {
					warnings, err := createPodDryRun(ctx, pod)
					podsAdmitted = podsAdmitted && err == nil
					if err != nil {
						podErr += err.Error() + "\n"
					} else {
						podWarnings += warnings
					}
				}
				Expect(raygateAdmits).To(Equal(podsAdmitted), "%s: raygate said\n%s\nthe API server said of the pods\n%s", where, rcErr, podErr)
				Expect(checks(rcErr, violatesLine)).To(Equal(checks(podErr, violatesLine)), "%s: the checks named", where)
				if raygateAdmits {
					admitted++
					Expect(checks(rcWarnings, warningLine)).To(Equal(checks(podWarnings, warningLine)), "%s: the checks warned about", where)
				} else {
					refused++
					Expect(apierrors.IsInvalid(err)).To(BeTrue(), "%s: %v", where, err)
				}
			}
		}
		Expect(refused).To(BeNumerically(">", 20), "the table exercises refusals")
		Expect(admitted).To(BeNumerically(">", 20), "and admissions")
	})
})

var _ = Describe("Pod Security through kubectl", func() {
	It("refuses the KubeRay sample in a restricted namespace, naming every field to set", func(ctx context.Context) {
		ns := newNamespace(ctx, "team-a", map[string]string{enforceLabel: "restricted", enforceVersionLabel: "latest"})
		_, stderr, err := kubectl(ctx, "", "apply", "-n", ns, "-f", filepath.Join(tools.RepoRoot(), "config", "samples", "ray_v1_raycluster.yaml"))
		Expect(err).To(HaveOccurred())
		Expect(stderr).To(Equal(sampleRefused))
	})

	It("refuses a privileged worker group in a baseline namespace at its field", func(ctx context.Context) {
		ns := newNamespace(ctx, "team-b", map[string]string{enforceLabel: "baseline"})
		_, stderr, err := kubectl(ctx, manifest(clusters[8].make()), "apply", "-n", ns, "-f", "-")
		Expect(err).To(HaveOccurred())
		Expect(stderr).To(Equal(`The RayCluster "ray" is invalid: spec.workerGroupSpecs[1].template.spec.containers[0].securityContext.privileged: ` +
			`Forbidden: violates PodSecurity "baseline:latest": privileged (containers "wait-gcs-ready", "ray-worker" must not set securityContext.privileged=true)` + "\n"))
	})

	It("creates a cluster that meets the enforce level and prints the warn level's violations", func(ctx context.Context) {
		ns := newNamespace(ctx, "team-c", map[string]string{enforceLabel: "baseline", warnLabel: "restricted"})
		stdout, stderr, err := kubectl(ctx, manifest(compliant(func(rc *rayv1.RayCluster) { rc.Spec.AutoscalerOptions = nil })()), "apply", "-n", ns, "-f", "-")
		Expect(err).NotTo(HaveOccurred(), stderr)
		Expect(stdout).To(Equal("raycluster.ray.io/ray created\n"))
		Expect(stderr).To(Equal(warnedAutoscaler))
	})

	It("refuses a RayService whose clusters' pods the namespace would refuse, under spec.rayClusterConfig", func(ctx context.Context) {
		ns := newNamespace(ctx, "team-d", map[string]string{enforceLabel: "baseline"})
		svc := builders.RayService("fruit", "").Obj()
		svc.Spec.RayClusterSpec.HeadGroupSpec.Template.Spec.HostNetwork = true
		_, stderr, err := kubectl(ctx, manifest(svc), "apply", "-n", ns, "-f", "-")
		Expect(err).To(HaveOccurred())
		Expect(stderr).To(Equal(`The RayService "fruit" is invalid: spec.rayClusterConfig.headGroupSpec.template.spec.hostNetwork: ` +
			`Forbidden: violates PodSecurity "baseline:latest": host namespaces (hostNetwork=true)` + "\n"))
	})

	It("lets a cluster created before its namespace was labelled be scaled, and refuses only new violations", func(ctx context.Context) {
		ns := newNamespace(ctx, "team-e", nil)
		_, stderr, err := kubectl(ctx, manifest(clusters[8].make()), "apply", "-n", ns, "-f", "-")
		Expect(err).NotTo(HaveOccurred(), stderr)
		_, stderr, err = kubectl(ctx, "", "label", "namespace", ns, enforceLabel+"=baseline")
		Expect(err).NotTo(HaveOccurred(), stderr)
		waitNamespaceLabels(ctx, ns, map[string]string{enforceLabel: "baseline"})
		stdout, stderr, err := kubectl(ctx, "", "-n", ns, "patch", "raycluster", "ray", "--type=json", "-p",
			`[{"op":"replace","path":"/spec/workerGroupSpecs/1/replicas","value":3}]`)
		Expect(err).NotTo(HaveOccurred(), stderr)
		Expect(stdout).To(Equal("raycluster.ray.io/ray patched\n"))
		_, stderr, err = kubectl(ctx, "", "-n", ns, "patch", "raycluster", "ray", "--type=json", "-p",
			`[{"op":"add","path":"/spec/headGroupSpec/template/spec/hostPID","value":true}]`)
		Expect(err).To(HaveOccurred())
		Expect(stderr).To(Equal(`The RayCluster "ray" is invalid: spec.headGroupSpec.template.spec.hostPID: ` +
			`Forbidden: violates PodSecurity "baseline:latest": host namespaces (hostPID=true)` + "\n"))
	})
})

const sampleRefused = `The RayCluster "raycluster-sample" is invalid: ` + "\n" +
	`* spec.headGroupSpec.template.spec.containers[0].securityContext.allowPrivilegeEscalation: Forbidden: violates PodSecurity "restricted:latest": allowPrivilegeEscalation != false (container "ray-head" must set securityContext.allowPrivilegeEscalation=false)` + "\n" +
	`* spec.headGroupSpec.template.spec.containers[0].securityContext.capabilities: Forbidden: violates PodSecurity "restricted:latest": unrestricted capabilities (container "ray-head" must set securityContext.capabilities.drop=["ALL"])` + "\n" +
	`* spec.headGroupSpec.template.spec.containers[0].securityContext.runAsNonRoot: Forbidden: violates PodSecurity "restricted:latest": runAsNonRoot != true (pod or container "ray-head" must set securityContext.runAsNonRoot=true)` + "\n" +
	`* spec.headGroupSpec.template.spec.containers[0].securityContext.seccompProfile: Forbidden: violates PodSecurity "restricted:latest": seccompProfile (pod or container "ray-head" must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost")` + "\n" +
	`* spec.workerGroupSpecs[0].template.spec.containers[0].securityContext.allowPrivilegeEscalation: Forbidden: violates PodSecurity "restricted:latest": allowPrivilegeEscalation != false (containers "wait-gcs-ready", "ray-worker" must set securityContext.allowPrivilegeEscalation=false)` + "\n" +
	`* spec.workerGroupSpecs[0].template.spec.containers[0].securityContext.capabilities: Forbidden: violates PodSecurity "restricted:latest": unrestricted capabilities (containers "wait-gcs-ready", "ray-worker" must set securityContext.capabilities.drop=["ALL"])` + "\n" +
	`* spec.workerGroupSpecs[0].template.spec.containers[0].securityContext.runAsNonRoot: Forbidden: violates PodSecurity "restricted:latest": runAsNonRoot != true (pod or containers "wait-gcs-ready", "ray-worker" must set securityContext.runAsNonRoot=true)` + "\n" +
	`* spec.workerGroupSpecs[0].template.spec.containers[0].securityContext.seccompProfile: Forbidden: violates PodSecurity "restricted:latest": seccompProfile (pod or containers "wait-gcs-ready", "ray-worker" must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost")` + "\n"

const warnedAutoscaler = `Warning: spec.autoscalerOptions.securityContext.allowPrivilegeEscalation: would violate PodSecurity "restricted:latest": allowPrivilegeEscalation != false (container "autoscaler" must set securityContext.allowPrivilegeEscalation=false)` + "\n" +
	`Warning: spec.autoscalerOptions.securityContext.capabilities: would violate PodSecurity "restricted:latest": unrestricted capabilities (container "autoscaler" must set securityContext.capabilities.drop=["ALL"])` + "\n"
