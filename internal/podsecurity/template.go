package podsecurity

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/pod-security-admission/api"
)

// Pod evaluates a pod whose every container comes from a template of the user's (a RayJob's
// submitter pod, say) at a level and version; violations are located at the template's
// fields below tmplPath.
func (e *Evaluator) Pod(lv api.LevelVersion, pod *corev1.Pod, tmplPath *field.Path) []Violation {
	checks := e.checksFor(lv)
	if len(checks) == 0 {
		return nil
	}
	n := len(pod.Spec.Containers)
	found := locatePod(checks, pod, origin{userContainers: n, userInit: len(pod.Spec.InitContainers), firstSidecar: n})
	return materialize(found, tmplPath, tmplPath, "")
}
