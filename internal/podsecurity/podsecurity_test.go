package podsecurity

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/pod-security-admission/api"
	"k8s.io/pod-security-admission/policy"
	"k8s.io/utils/ptr"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/defaulting"
	"github.com/raygate/raygate/internal/raypod"
	"github.com/raygate/raygate/test/builders"
)

var (
	baseline   = api.LevelVersion{Level: api.LevelBaseline, Version: api.LatestVersion()}
	restricted = api.LevelVersion{Level: api.LevelRestricted, Version: api.LatestVersion()}
)

// compliant is a securityContext that meets the restricted standard.
func compliant() *corev1.SecurityContext {
	return &corev1.SecurityContext{
		AllowPrivilegeEscalation: ptr.To(false),
		RunAsNonRoot:             ptr.To(true),
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
}

func cluster(change func(rc *rayv1.RayCluster)) *rayv1.RayCluster {
	rc := builders.RayCluster("demo", "ns").Obj()
	if change != nil {
		change(rc)
	}
	defaulting.RayCluster(rc)
	return rc
}

func restrictedCluster(change func(rc *rayv1.RayCluster)) *rayv1.RayCluster {
	return cluster(func(rc *rayv1.RayCluster) {
		rc.Spec.HeadGroupSpec.Template.Spec.Containers[0].SecurityContext = compliant()
		rc.Spec.WorkerGroupSpecs[0].Template.Spec.Containers[0].SecurityContext = compliant()
		if change != nil {
			change(rc)
		}
	})
}

type violation struct{ Path, Message string }

func violations(vs []Violation) []violation {
	var out []violation
	for _, v := range vs {
		out = append(out, violation{v.Path.String(), v.Message})
	}
	return out
}

func TestClusterViolations(t *testing.T) {
	spec := field.NewPath("spec")
	tests := []struct {
		name string
		lv   api.LevelVersion
		rc   *rayv1.RayCluster
		want []violation
	}{
		{"privileged everywhere: nothing to check", api.LevelVersion{Level: api.LevelPrivileged, Version: api.LatestVersion()},
			cluster(func(rc *rayv1.RayCluster) { rc.Spec.HeadGroupSpec.Template.Spec.HostNetwork = true }), nil},
		{"a plain cluster meets baseline", baseline, cluster(nil), nil},
		{"a privileged worker group, the wait-gcs-ready init container copying its securityContext", baseline,
			cluster(func(rc *rayv1.RayCluster) {
				g := builders.WorkerGroup("gpu", 1)
				g.Template.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{Privileged: ptr.To(true)}
				rc.Spec.WorkerGroupSpecs = append(rc.Spec.WorkerGroupSpecs, g)
			}),
			[]violation{{"spec.workerGroupSpecs[1].template.spec.containers[0].securityContext.privileged",
				`privileged (containers "wait-gcs-ready", "ray-worker" must not set securityContext.privileged=true)`}}},
		{"pod-level host access, narrowed to the field", baseline,
			cluster(func(rc *rayv1.RayCluster) {
				s := &rc.Spec.HeadGroupSpec.Template.Spec
				s.HostNetwork, s.HostPID = true, true
				s.Volumes = []corev1.Volume{{Name: "cache", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
					{Name: "root", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/"}}}}
				s.Containers[0].Ports = []corev1.ContainerPort{{Name: "gcs", ContainerPort: 6379}, {Name: "web", ContainerPort: 80, HostPort: 8080}}
			}),
			[]violation{
				{"spec.headGroupSpec.template.spec.hostNetwork", "host namespaces (hostNetwork=true)"},
				{"spec.headGroupSpec.template.spec.hostPID", "host namespaces (hostPID=true)"},
				{"spec.headGroupSpec.template.spec.volumes[1].hostPath", `hostPath volumes (volume "root")`},
				{"spec.headGroupSpec.template.spec.containers[0].ports[1].hostPort", `hostPort (container "ray-head" uses hostPort 8080)`},
			}},
		{"an added capability and a user init container", baseline,
			cluster(func(rc *rayv1.RayCluster) {
				s := &rc.Spec.WorkerGroupSpecs[0].Template.Spec
				s.Containers[0].SecurityContext = &corev1.SecurityContext{Capabilities: &corev1.Capabilities{Add: []corev1.Capability{"NET_BIND_SERVICE", "SYS_ADMIN"}}}
				s.InitContainers = []corev1.Container{{Name: "setup", Image: "busybox", SecurityContext: &corev1.SecurityContext{Privileged: ptr.To(true)}}}
			}),
			[]violation{
				{"spec.workerGroupSpecs[0].template.spec.containers[0].securityContext.capabilities.add[1]",
					`non-default capabilities (containers "wait-gcs-ready", "ray-worker" must not include "SYS_ADMIN" in securityContext.capabilities.add)`},
				{"spec.workerGroupSpecs[0].template.spec.initContainers[0].securityContext.privileged",
					`privileged (container "setup" must not set securityContext.privileged=true)`},
			}},
		{"an AppArmor annotation on the template", baseline,
			cluster(func(rc *rayv1.RayCluster) {
				rc.Spec.HeadGroupSpec.Template.Annotations = map[string]string{"container.apparmor.security.beta.kubernetes.io/ray-head": "unconfined"}
			}),
			[]violation{{"spec.headGroupSpec.template.metadata.annotations[container.apparmor.security.beta.kubernetes.io/ray-head]",
				`forbidden AppArmor profile (annotation must not set AppArmor profile type to "container.apparmor.security.beta.kubernetes.io/ray-head="unconfined"")`}}},
		{"restricted: what every container must set, the autoscaler sidecar's at spec.autoscalerOptions", restricted,
			cluster(func(rc *rayv1.RayCluster) { rc.Spec.EnableInTreeAutoscaling = ptr.To(true) }),
			[]violation{
				{"spec.headGroupSpec.template.spec.containers[0].securityContext.allowPrivilegeEscalation", `allowPrivilegeEscalation != false (container "ray-head" must set securityContext.allowPrivilegeEscalation=false)`},
				{"spec.autoscalerOptions.securityContext.allowPrivilegeEscalation", `allowPrivilegeEscalation != false (container "autoscaler" must set securityContext.allowPrivilegeEscalation=false)`},
				{"spec.headGroupSpec.template.spec.containers[0].securityContext.capabilities", `unrestricted capabilities (container "ray-head" must set securityContext.capabilities.drop=["ALL"])`},
				{"spec.autoscalerOptions.securityContext.capabilities", `unrestricted capabilities (container "autoscaler" must set securityContext.capabilities.drop=["ALL"])`},
				{"spec.headGroupSpec.template.spec.containers[0].securityContext.runAsNonRoot", `runAsNonRoot != true (pod or container "ray-head" must set securityContext.runAsNonRoot=true)`},
				{"spec.autoscalerOptions.securityContext.runAsNonRoot", `runAsNonRoot != true (pod or container "autoscaler" must set securityContext.runAsNonRoot=true)`},
				{"spec.headGroupSpec.template.spec.containers[0].securityContext.seccompProfile", `seccompProfile (pod or container "ray-head" must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost")`},
				{"spec.autoscalerOptions.securityContext.seccompProfile", `seccompProfile (pod or container "autoscaler" must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost")`},
				{"spec.workerGroupSpecs[0].template.spec.containers[0].securityContext.allowPrivilegeEscalation", `allowPrivilegeEscalation != false (containers "wait-gcs-ready", "ray-worker" must set securityContext.allowPrivilegeEscalation=false)`},
				{"spec.workerGroupSpecs[0].template.spec.containers[0].securityContext.capabilities", `unrestricted capabilities (containers "wait-gcs-ready", "ray-worker" must set securityContext.capabilities.drop=["ALL"])`},
				{"spec.workerGroupSpecs[0].template.spec.containers[0].securityContext.runAsNonRoot", `runAsNonRoot != true (pod or containers "wait-gcs-ready", "ray-worker" must set securityContext.runAsNonRoot=true)`},
				{"spec.workerGroupSpecs[0].template.spec.containers[0].securityContext.seccompProfile", `seccompProfile (pod or containers "wait-gcs-ready", "ray-worker" must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost")`},
			}},
		{"restricted: compliant containers pass, the autoscaler sidecar needs its own", restricted,
			restrictedCluster(func(rc *rayv1.RayCluster) {
				rc.Spec.EnableInTreeAutoscaling = ptr.To(true)
				rc.Spec.AutoscalerOptions = &rayv1.AutoscalerOptions{SecurityContext: compliant()}
			}), nil},
		{"restricted: settings of the pod count for its containers; the pod's own wrong setting is named there", restricted,
			restrictedCluster(func(rc *rayv1.RayCluster) {
				s := &rc.Spec.WorkerGroupSpecs[0].Template.Spec
				s.SecurityContext = &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(false)}
				s.Containers[0].SecurityContext.RunAsNonRoot = nil
				s.Containers[0].SecurityContext.SeccompProfile = &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeUnconfined}
			}),
			[]violation{
				{"spec.workerGroupSpecs[0].template.spec.securityContext.runAsNonRoot", `runAsNonRoot != true (pod must not set securityContext.runAsNonRoot=false)`},
				{"spec.workerGroupSpecs[0].template.spec.containers[0].securityContext.seccompProfile", `seccompProfile (containers "wait-gcs-ready", "ray-worker" must not set securityContext.seccompProfile.type to "Unconfined")`},
			}},
		{"restricted: a hostPath volume is a restricted volume type", restricted,
			restrictedCluster(func(rc *rayv1.RayCluster) {
				rc.Spec.HeadGroupSpec.Template.Spec.Volumes = []corev1.Volume{{Name: "root", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/"}}}}
			}),
			[]violation{{"spec.headGroupSpec.template.spec.volumes[0]", `restricted volume types (volume "root" uses restricted volume type "hostPath")`}}},
		{"older versions of the standard: seccomp was not required before v1.19", api.LevelVersion{Level: api.LevelRestricted, Version: api.MajorMinorVersion(1, 18)},
			restrictedCluster(func(rc *rayv1.RayCluster) {
				rc.Spec.WorkerGroupSpecs[0].Template.Spec.Containers[0].SecurityContext.SeccompProfile = nil
			}), nil},
	}
	e := NewEvaluator()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := violations(e.Cluster(tt.lv, tt.rc, spec, raypod.Settings{}))
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("violations (-want +got):\n%s", d)
			}
		})
	}
}

func TestRayServicePaths(t *testing.T) {
	svc := builders.RayService("svc", "ns").Obj()
	svc.Spec.RayClusterSpec.WorkerGroupSpecs[0].Template.Spec.HostIPC = true
	defaulting.RayService(svc)
	got := violations(NewEvaluator().Cluster(baseline, ClusterOf(svc), field.NewPath("spec", "rayClusterConfig"), raypod.Settings{}))
	want := []violation{{"spec.rayClusterConfig.workerGroupSpecs[0].template.spec.hostIPC", "host namespaces (hostIPC=true)"}}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
}

// The checks chosen per level and version are those of the library's own evaluator (which
// the API server runs), with the same verdicts, in the same order.
func TestChecksMatchTheLibrary(t *testing.T) {
	lib, err := policy.NewEvaluator(policy.DefaultChecks(), nil)
	if err != nil {
		t.Fatal(err)
	}
	e := NewEvaluator()
	var pods []*corev1.Pod
	for _, rc := range []*rayv1.RayCluster{
		cluster(nil),
		restrictedCluster(nil),
		cluster(func(rc *rayv1.RayCluster) {
			rc.Spec.EnableInTreeAutoscaling = ptr.To(true)
			s := &rc.Spec.HeadGroupSpec.Template.Spec
			s.HostNetwork = true
			s.SecurityContext = &corev1.PodSecurityContext{RunAsUser: ptr.To[int64](0), Sysctls: []corev1.Sysctl{{Name: "kernel.msgmax", Value: "1"}}}
			s.Containers[0].SecurityContext = &corev1.SecurityContext{Privileged: ptr.To(true), ProcMount: ptr.To(corev1.UnmaskedProcMount),
				Capabilities: &corev1.Capabilities{Add: []corev1.Capability{"NET_RAW", "SYS_ADMIN"}}, SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeUnconfined}}
		}),
		restrictedCluster(func(rc *rayv1.RayCluster) {
			rc.Spec.WorkerGroupSpecs[0].Template.Spec.Volumes = []corev1.Volume{{Name: "h", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/"}}}}
			rc.Spec.WorkerGroupSpecs[0].Template.Spec.Containers[0].SecurityContext.Capabilities.Add = []corev1.Capability{"NET_BIND_SERVICE"}
		}),
	} {
		pods = append(pods, raypod.HeadPod(rc, "", raypod.Settings{}), raypod.WorkerPod(rc, &rc.Spec.WorkerGroupSpecs[0], nil, raypod.Settings{}))
	}
	var versions []api.Version
	for minor := 0; minor <= 40; minor++ {
		versions = append(versions, api.MajorMinorVersion(1, minor))
	}
	versions = append(versions, api.LatestVersion())
	for _, pod := range pods {
		for _, level := range []api.Level{api.LevelPrivileged, api.LevelBaseline, api.LevelRestricted} {
			for _, v := range versions {
				lv := api.LevelVersion{Level: level, Version: v}
				want := policy.AggregateCheckResults(lib.EvaluatePod(lv, &pod.ObjectMeta, &pod.Spec)).ForbiddenReasons
				var got []string
				for _, c := range e.checksFor(lv) {
					if r := c.fn(&pod.ObjectMeta, &pod.Spec); !r.Allowed {
						got = append(got, r.ForbiddenReason)
					}
				}
				if d := cmp.Diff(want, got); d != "" {
					t.Errorf("pod %s at %s (-library +raygate):\n%s", pod.GenerateName, lv, d)
				}
			}
		}
	}
}

// Every distinct pod template is evaluated once, however many worker groups share it.
func TestEachDistinctTemplateOnce(t *testing.T) {
	calls := 0
	e := &Evaluator{checks: []policy.Check{{ID: "counting", Level: api.LevelBaseline, Versions: []policy.VersionedCheck{{
		MinimumVersion: api.MajorMinorVersion(1, 0),
		CheckPod: func(*metav1.ObjectMeta, *corev1.PodSpec) policy.CheckResult {
			calls++
			return policy.CheckResult{Allowed: true}
		},
	}}}}, maxVersion: api.MajorMinorVersion(1, 0)}
	rc := cluster(func(rc *rayv1.RayCluster) {
		rc.Spec.WorkerGroupSpecs = nil
		for i := range 50 {
			rc.Spec.WorkerGroupSpecs = append(rc.Spec.WorkerGroupSpecs, builders.WorkerGroup(fmt.Sprintf("g%d", i), 100))
		}
		// An image, command or resources the checks do not read: the same template to them.
		image := builders.WorkerGroup("image", 1)
		image.Template.Spec.Containers[0].Image = "rayproject/ray:2.53.0"
		image.Template.Spec.Containers[0].Command = []string{"ray", "start"}
		other := builders.WorkerGroup("other", 1)
		other.Template.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{RunAsNonRoot: ptr.To(true)}
		rc.Spec.WorkerGroupSpecs = append(rc.Spec.WorkerGroupSpecs, image, other)
	})
	e.Cluster(baseline, rc, field.NewPath("spec"), raypod.Settings{})
	if calls != 3 {
		t.Errorf("the check ran %d times; want 3 (the head, the shared worker template, the other one)", calls)
	}
}

func TestNamespacePolicy(t *testing.T) {
	for _, tt := range []struct {
		labels                 map[string]string
		enforce, warn, auditLV string
	}{
		{nil, "privileged:latest", "privileged:latest", "privileged:latest"},
		{map[string]string{api.EnforceLevelLabel: "baseline", api.EnforceVersionLabel: "v1.30"}, "baseline:v1.30", "baseline:v1.30", "privileged:latest"},
		{map[string]string{api.EnforceLevelLabel: "baseline", api.WarnLevelLabel: "restricted", api.AuditLevelLabel: "restricted"}, "baseline:latest", "restricted:latest", "restricted:latest"},
		{map[string]string{api.EnforceLevelLabel: "strict"}, "restricted:latest", "privileged:latest", "privileged:latest"},
	} {
		p := NamespacePolicy(tt.labels)
		if got := []string{p.Enforce.String(), p.Warn.String(), p.Audit.String()}; !cmp.Equal(got, []string{tt.enforce, tt.warn, tt.auditLV}) {
			t.Errorf("%v: enforce, warn, audit = %v", tt.labels, got)
		}
	}
}

// The pods checked are those the operator creates with its settings: the admin's sidecars
// too (reported at the template's containers, naming the sidecar and its setting, since no
// field of the RayCluster holds them), and no wait-gcs-ready where the operator adds none.
func TestClusterWithOperatorSettings(t *testing.T) {
	spec := field.NewPath("spec")
	shipper := corev1.Container{Name: "log-shipper", Image: "fluent/fluent-bit:3"}
	privileged := corev1.Container{Name: "debugger", Image: "busybox", SecurityContext: &corev1.SecurityContext{Privileged: ptr.To(true)}}
	for _, tc := range []struct {
		name string
		lv   api.LevelVersion
		rc   *rayv1.RayCluster
		s    raypod.Settings
		want []violation
	}{
		{name: "a restricted cluster and the admin's head sidecar that sets nothing", lv: restricted, rc: restrictedCluster(nil),
			s: raypod.Settings{Defaults: raypod.PodDefaults{HeadSidecars: []corev1.Container{shipper}}},
			want: []violation{
				{"spec.headGroupSpec.template.spec.containers", `allowPrivilegeEscalation != false (container "log-shipper" must set securityContext.allowPrivilegeEscalation=false) (a sidecar the operator adds to every such pod: headSidecarContainers of its configuration; ask the platform admin)`},
				{"spec.headGroupSpec.template.spec.containers", `unrestricted capabilities (container "log-shipper" must set securityContext.capabilities.drop=["ALL"]) (a sidecar the operator adds to every such pod: headSidecarContainers of its configuration; ask the platform admin)`},
				{"spec.headGroupSpec.template.spec.containers", `runAsNonRoot != true (pod or container "log-shipper" must set securityContext.runAsNonRoot=true) (a sidecar the operator adds to every such pod: headSidecarContainers of its configuration; ask the platform admin)`},
				{"spec.headGroupSpec.template.spec.containers", `seccompProfile (pod or container "log-shipper" must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost") (a sidecar the operator adds to every such pod: headSidecarContainers of its configuration; ask the platform admin)`},
			}},
		{name: "a privileged worker sidecar next to a privileged worker", lv: baseline,
			rc: cluster(func(rc *rayv1.RayCluster) {
				rc.Spec.WorkerGroupSpecs[0].Template.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{Privileged: ptr.To(true)}
			}),
			s: raypod.Settings{Defaults: raypod.PodDefaults{WorkerSidecars: []corev1.Container{privileged}}},
			want: []violation{
				{"spec.workerGroupSpecs[0].template.spec.containers[0].securityContext.privileged", `privileged (containers "wait-gcs-ready", "ray-worker" must not set securityContext.privileged=true)`},
				{"spec.workerGroupSpecs[0].template.spec.containers", `privileged (container "debugger" must not set securityContext.privileged=true) (a sidecar the operator adds to every such pod: workerSidecarContainers of its configuration; ask the platform admin)`},
			}},
		{name: "no wait-gcs-ready (ENABLE_INIT_CONTAINER_INJECTION=false): only the Ray container is named", lv: baseline,
			rc: cluster(func(rc *rayv1.RayCluster) {
				rc.Spec.WorkerGroupSpecs[0].Template.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{Privileged: ptr.To(true)}
			}),
			s: raypod.Settings{NoWaitGCSInitContainer: true},
			want: []violation{
				{"spec.workerGroupSpecs[0].template.spec.containers[0].securityContext.privileged", `privileged (container "ray-worker" must not set securityContext.privileged=true)`},
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := violations(NewEvaluator().Cluster(tc.lv, tc.rc, spec, tc.s))
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("violations (-want +got):\n%s", d)
			}
		})
	}
}
