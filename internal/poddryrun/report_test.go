package poddryrun

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/defaulting"
	"github.com/raygate/raygate/internal/features"
	"github.com/raygate/raygate/internal/raypod"
	"github.com/raygate/raygate/internal/validation"
	"github.com/raygate/raygate/test/builders"
)

const privilegedWorker = `privileged (containers "wait-gcs-ready", "ray-worker" must not set securityContext.privileged=true)`

func privileged(rc *rayv1.RayCluster) {
	rc.Spec.WorkerGroupSpecs[0].Template.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{Privileged: ptr.To(true)}
}

func podSecurityRefuses(level string) func(*corev1.Pod) ([]string, error) {
	return func(*corev1.Pod) ([]string, error) {
		return nil, forbidden(`violates PodSecurity "` + level + `": privileged (containers "wait-gcs-ready", "ray-worker" must not set securityContext.privileged=true)`)
	}
}

// The API server's Pod Security verdict (its admission configuration: defaults, exemptions)
// replaces raygate's, read from the namespace's labels alone, for the pods it decided.
func TestPodSecurityVerdictOfTheAPIServer(t *testing.T) {
	path := "spec.workerGroupSpecs[0].template.spec.containers[0].securityContext.privileged"
	local := field.ErrorList{
		field.Forbidden(field.NewPath("spec", "workerGroupSpecs").Index(0).Child("template", "spec", "containers").Index(0).Child("securityContext", "privileged"),
			`violates PodSecurity "baseline:latest": `+privilegedWorker),
		field.Invalid(field.NewPath("spec", "headGroupSpec", "rayStartParams"), "x", "other"),
	}
	tests := []struct {
		name   string
		answer func(*corev1.Pod) ([]string, error)
		mode   validation.PodSecurityMode
		errs   []string
		warns  []string
	}{
		{"the same level: the same error, once", podSecurityRefuses("baseline:latest"), validation.PodSecurityEnforce,
			[]string{`spec.headGroupSpec.rayStartParams: Invalid value: "x": other`, path + `: Forbidden: violates PodSecurity "baseline:latest": ` + privilegedWorker}, nil},
		{"the API server's default level", podSecurityRefuses("baseline:v1.30"), validation.PodSecurityEnforce,
			[]string{`spec.headGroupSpec.rayStartParams: Invalid value: "x": other`, path + `: Forbidden: violates PodSecurity "baseline:v1.30": ` + privilegedWorker}, nil},
		{"an exemption: admitted", nil, validation.PodSecurityEnforce, []string{`spec.headGroupSpec.rayStartParams: Invalid value: "x": other`}, nil},
		{"admitted by Pod Security, refused by a policy after it", func(*corev1.Pod) ([]string, error) {
			return nil, forbidden("ValidatingAdmissionPolicy 'p' with binding 'b' denied request: no")
		}, validation.PodSecurityEnforce, []string{
			`spec.headGroupSpec.rayStartParams: Invalid value: "x": other`,
			`spec.workerGroupSpecs[0].template: Forbidden: the API server refuses the pods of worker group "small-group": ValidatingAdmissionPolicy 'p' with binding 'b' denied request: no`,
		}, nil},
		{"--pod-security-check=warn", podSecurityRefuses("baseline:latest"), validation.PodSecurityWarn, []string{`spec.headGroupSpec.rayStartParams: Invalid value: "x": other`},
			[]string{path + `: violates PodSecurity "baseline:latest": ` + privilegedWorker + `; the API server will refuse these pods when raygate creates them`}},
		{"--pod-security-check=off", podSecurityRefuses("restricted:latest"), validation.PodSecurityOff, []string{`spec.headGroupSpec.rayStartParams: Invalid value: "x": other`}, nil},
		{"warnings of Pod Security are located like raygate's", func(*corev1.Pod) ([]string, error) {
			return []string{`would violate PodSecurity "baseline:latest": privileged (container "ray-worker" must not set securityContext.privileged=true)`}, nil
		}, validation.PodSecurityEnforce, []string{`spec.headGroupSpec.rayStartParams: Invalid value: "x": other`},
			[]string{path + `: would violate PodSecurity "baseline:latest": ` + privilegedWorker}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rc := twoGroups(privileged)
			api := &fakeAPIServer{answers: map[string]func(*corev1.Pod) ([]string, error){workerName: tt.answer}}
			rep := New(api).Check(context.Background(), Request{Namespace: "ns", Pods: RayClusterPods(rc, "ns", raypod.Settings{}), PodSecurity: tt.mode})
			errs, warnings := rep.Merge(local, nil)
			if d := cmp.Diff(tt.errs, messages(errs)); d != "" {
				t.Errorf("errors (-want +got):\n%s", d)
			}
			if d := cmp.Diff(tt.warns, warnings); d != "" {
				t.Errorf("warnings (-want +got):\n%s", d)
			}
		})
	}
}

func TestOnlyPodSecurity(t *testing.T) {
	ps := field.Forbidden(field.NewPath("spec"), `violates PodSecurity "baseline:latest": x`)
	other := field.Forbidden(field.NewPath("spec"), "something else")
	for _, tt := range []struct {
		errs field.ErrorList
		want bool
	}{{nil, true}, {field.ErrorList{ps}, true}, {field.ErrorList{ps, other}, false}} {
		if got := OnlyPodSecurity(tt.errs); got != tt.want {
			t.Errorf("OnlyPodSecurity(%v) = %v", tt.errs, got)
		}
	}
}

func TestUnder(t *testing.T) {
	for _, tt := range []struct {
		path, prefix string
		want         bool
	}{
		{"spec.workerGroupSpecs[1].template", "spec.workerGroupSpecs[1].template", true},
		{"spec.workerGroupSpecs[1].template.spec", "spec.workerGroupSpecs[1].template", true},
		{"spec.workerGroupSpecs[10].template", "spec.workerGroupSpecs[1", false},
		{"spec.autoscalerOptions[x]", "spec.autoscalerOptions", true},
		{"spec.autoscalerOptionsX", "spec.autoscalerOptions", false},
	} {
		if got := under(tt.path, tt.prefix); got != tt.want {
			t.Errorf("under(%q, %q) = %v", tt.path, tt.prefix, got)
		}
	}
}

// The pods are those raygate creates, renamed, without owner, with the namespace's default
// ServiceAccount where raygate would create one first.
func TestBuiltPods(t *testing.T) {
	rc := builders.RayCluster("demo", "ns").Autoscaling().Obj()
	rc.Spec.WorkerGroupSpecs[0].Template.Spec.ServiceAccountName = "trainer"
	defaulting.RayCluster(rc)
	pods := RayClusterPods(rc, "team-a", raypod.Settings{})
	if len(pods) != 2 {
		t.Fatalf("%d pods; want the head and one worker", len(pods))
	}
	head, worker := pods[0].Pod, pods[1].Pod
	if head.Namespace != "team-a" || head.GenerateName != "raygate-dry-run-head-" || head.Labels[rayv1.ClusterLabelKey] != PlaceholderName || len(head.OwnerReferences) > 0 {
		t.Errorf("head: namespace %q, generateName %q, labels %v, owners %v", head.Namespace, head.GenerateName, head.Labels, head.OwnerReferences)
	}
	if head.Spec.ServiceAccountName != "default" || worker.Spec.ServiceAccountName != "trainer" {
		t.Errorf("service accounts: head %q (want the default), worker %q (want the template's)", head.Spec.ServiceAccountName, worker.Spec.ServiceAccountName)
	}

	svc := builders.RayService("svc", "ns").Obj()
	defaulting.RayService(svc)
	sp := RayServicePods(svc, "ns", raypod.Settings{})
	if len(sp) != 2 || sp[1].Origin.TemplatePath.String() != "spec.rayClusterConfig.workerGroupSpecs[0].template" || sp[1].Pod.Labels[rayv1.ServeLabelKey] != "true" {
		t.Errorf("RayService pods: want a head and a serving worker at spec.rayClusterConfig; got %d", len(sp))
	}

	job := builders.RayJob("job", "ns").SubmitterTemplate("rayproject/ray:2.52.0").Obj()
	defaulting.RayJob(job)
	jp := RayJobPods(job, "ns", features.Default(), raypod.Settings{})
	var paths []string
	for _, p := range jp {
		paths = append(paths, p.Origin.TemplatePath.String())
	}
	want := []string{"spec.rayClusterSpec.headGroupSpec.template", "spec.rayClusterSpec.workerGroupSpecs[0].template", "spec.submitterPodTemplate"}
	if d := cmp.Diff(want, paths); d != "" {
		t.Errorf("RayJob pods (-want +got):\n%s", d)
	}
	if s := jp[2].Pod; s.Namespace != "ns" || s.GenerateName != PlaceholderName+"-" {
		t.Errorf("submitter pod: namespace %q, generateName %q", s.Namespace, s.GenerateName)
	}
	// On an existing cluster, the default submitter's image is known only when the job runs.
	onCluster := builders.RayJob("job", "ns").OnCluster("existing").Obj()
	defaulting.RayJob(onCluster)
	if p := RayJobPods(onCluster, "ns", features.Default(), raypod.Settings{}); len(p) != 0 {
		t.Errorf("a job on an existing cluster without a submitter template: %d pods; want none", len(p))
	}
}
