package validation

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/raypod"
)

// Admission checks the pods the operator would create with its settings: a privileged
// sidecar of the admin's is refused in a namespace enforcing baseline, as the API server
// would refuse the pods, and the quota counts the sidecars' requests.
func TestAdmissionSeesTheOperatorsPodSettings(t *testing.T) {
	debugger := corev1.Container{Name: "debugger", Image: "busybox", SecurityContext: &corev1.SecurityContext{Privileged: ptr.To(true)},
		Resources: corev1.ResourceRequirements{Requests: rl("cpu", "4")}}
	p := Policy{PodSettings: raypod.Settings{Defaults: raypod.PodDefaults{WorkerSidecars: []corev1.Container{debugger}}}}
	errs, _ := Validator{Policy: p}.AdmitRayCluster(labelled(enforce, "baseline"), nil, cluster(nil))
	diffWarnings(t, []string{`spec.workerGroupSpecs[0].template.spec.containers: Forbidden: violates PodSecurity "baseline:latest": privileged (container "debugger" must not set securityContext.privileged=true) (a sidecar the operator adds to every such pod: workerSidecarContainers of its configuration; ask the platform admin)`},
		errorStrings(errs))
	// Without the sidecar the same cluster is admitted.
	if errs, _ := (Validator{}).AdmitRayCluster(labelled(enforce, "baseline"), nil, cluster(nil)); len(errs) > 0 {
		t.Errorf("refused without the sidecar: %v", errs)
	}
	ns := labelled()
	ns.Quotas = []corev1.ResourceQuota{quota("cpu", rl("requests.cpu", "3"), nil)}
	_, without := Validator{}.AdmitRayCluster(ns, nil, cluster(nil))
	_, with := Validator{Policy: Policy{PodSettings: raypod.Settings{Defaults: raypod.PodDefaults{WorkerSidecars: []corev1.Container{{Name: "d", Image: "busybox",
		Resources: debugger.Resources}}}}}}.AdmitRayCluster(ns, nil, cluster(nil))
	if len(without) != 0 || len(with) == 0 {
		t.Errorf("quota warnings without the sidecar %v, with it %v", without, with)
	}
}

// A template container named like one of the admin's sidecars is refused: the pod would
// have two containers of that name.
func TestTemplateContainerNamedLikeASidecar(t *testing.T) {
	p := Policy{PodSettings: raypod.Settings{Defaults: raypod.PodDefaults{
		HeadSidecars:   []corev1.Container{{Name: "log-shipper", Image: "x"}},
		WorkerSidecars: []corev1.Container{{Name: "profiler", Image: "x"}},
	}}}
	rc := cluster(func(rc *rayv1.RayCluster) {
		rc.Spec.HeadGroupSpec.Template.Spec.Containers = append(rc.Spec.HeadGroupSpec.Template.Spec.Containers, corev1.Container{Name: "log-shipper", Image: "y"})
		rc.Spec.WorkerGroupSpecs[0].Template.Spec.InitContainers = []corev1.Container{{Name: "profiler", Image: "y"}}
		// A worker container of the head sidecar's name is fine: the head sidecar is not added there.
		rc.Spec.WorkerGroupSpecs[0].Template.Spec.Containers = append(rc.Spec.WorkerGroupSpecs[0].Template.Spec.Containers, corev1.Container{Name: "log-shipper", Image: "y"})
	})
	errs, _ := Validator{Policy: p}.RayCluster(rc)
	diffWarnings(t, []string{
		`spec.headGroupSpec.template.spec.containers[1].name: Invalid value: "log-shipper": the operator adds a sidecar of this name to every such pod (headSidecarContainers of its configuration): choose another name`,
		`spec.workerGroupSpecs[0].template.spec.initContainers[0].name: Invalid value: "profiler": the operator adds a sidecar of this name to every such pod (workerSidecarContainers of its configuration): choose another name`,
	}, errorStrings(errs))
}
