package validation

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
)

// NotSupportedYet is the detail of the error on a KubeRay field raygate does not implement.
// Rejecting is deliberate: silently ignoring e.g. authOptions would leave a cluster open.
const NotSupportedYet = "not supported by raygate yet; remove it (raygate would otherwise ignore it)"

// rayResourceParams are the rayStartParams that declare Ray logical resources, which the
// group's resources field declares too.
var rayResourceParams = []string{"num-cpus", "num-gpus", "memory", "resources"}

// validateClusterSpec checks everything in a cluster spec except upgradeStrategy, whose
// rules differ between a RayCluster and a RayService's rayClusterConfig.
func validateClusterSpec(spec *rayv1.RayClusterSpec, path *field.Path) (field.ErrorList, []string) {
	errs := unsupportedClusterFields(spec, path)
	head := &spec.HeadGroupSpec
	headPath := path.Child("headGroupSpec")
	errs = append(errs, validateGroup(&head.Template, head.RayStartParams, head.Resources, head.Labels, headPath)...)

	var warnings []string
	seen := map[string]bool{}
	for i := range spec.WorkerGroupSpecs {
		g := &spec.WorkerGroupSpecs[i]
		gPath := path.Child("workerGroupSpecs").Index(i)
		errs = append(errs, validateGroupName(g.GroupName, seen, gPath.Child("groupName"))...)
		errs = append(errs, validateGroup(&g.Template, g.RayStartParams, g.Resources, g.Labels, gPath)...)
		e, w := validateReplicas(g, gPath)
		errs, warnings = append(errs, e...), append(warnings, w...)
	}
	errs = append(errs, validateAutoscaler(spec, path)...)
	return errs, warnings
}

func unsupportedClusterFields(spec *rayv1.RayClusterSpec, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	forbid := func(set bool, p *field.Path) {
		if set {
			errs = append(errs, field.Forbidden(p, NotSupportedYet))
		}
	}
	forbid(spec.AuthOptions != nil, path.Child("authOptions"))
	forbid(spec.GcsFaultToleranceOptions != nil, path.Child("gcsFaultToleranceOptions"))
	forbid(spec.HistoryServerOptions != nil, path.Child("historyServerOptions"))
	forbid(spec.NetworkPolicy != nil, path.Child("networkPolicy"))
	forbid(spec.TLSOptions != nil, path.Child("tlsOptions"))
	forbid(ptr.Deref(spec.HeadGroupSpec.EnableIngress, false), path.Child("headGroupSpec", "enableIngress"))
	forbid(spec.HeadGroupSpec.IngressOptions != nil, path.Child("headGroupSpec", "ingressOptions"))
	return errs
}

// unsupportedAnnotations rejects KubeRay's annotation switch for GCS fault tolerance, the
// older way to ask for what gcsFaultToleranceOptions does.
func unsupportedAnnotations(meta *metav1.ObjectMeta) field.ErrorList {
	if v, ok := meta.Annotations[rayv1.FTEnabledKey]; ok && strings.EqualFold(v, "true") {
		return field.ErrorList{field.Forbidden(field.NewPath("metadata", "annotations").Key(rayv1.FTEnabledKey),
			"GCS fault tolerance is "+NotSupportedYet)}
	}
	return nil
}

func validateGroupName(name string, seen map[string]bool, path *field.Path) field.ErrorList {
	if name == "" {
		return field.ErrorList{field.Required(path, "every worker group needs a name")}
	}
	var errs field.ErrorList
	for _, msg := range utilvalidation.IsDNS1123Label(name) {
		errs = append(errs, field.Invalid(path, name, msg))
	}
	if seen[name] {
		errs = append(errs, field.Duplicate(path, name))
	}
	seen[name] = true
	return errs
}

// validateGroup checks what the head and worker groups share: the pod template's Ray
// container, where Ray resources are declared, and Ray node labels.
func validateGroup(tmpl *corev1.PodTemplateSpec, rayStartParams, resources, labels map[string]string, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	containersPath := path.Child("template", "spec", "containers")
	containers := tmpl.Spec.Containers
	switch {
	case len(containers) == 0:
		errs = append(errs, field.Required(containersPath, "at least one container is required; the first one runs Ray"))
	case containers[rayv1.RayContainerIndex].Image == "":
		errs = append(errs, field.Required(containersPath.Index(rayv1.RayContainerIndex).Child("image"),
			"the first container runs Ray and needs an image"))
	}
	if given := keysOf(rayStartParams, rayResourceParams...); len(given) > 0 && len(resources) > 0 {
		errs = append(errs, field.Forbidden(path.Child("resources"), fmt.Sprintf(
			"Ray resources are also given in rayStartParams (%s); declare them in only one of the two", strings.Join(given, ", "))))
	}
	if _, ok := rayStartParams["labels"]; ok {
		errs = append(errs, field.Forbidden(path.Child("rayStartParams").Key("labels"), "use the labels field for Ray node labels"))
	}
	labelsPath := path.Child("labels")
	for _, k := range sortedKeys(labels) {
		for _, msg := range utilvalidation.IsQualifiedName(k) {
			errs = append(errs, field.Invalid(labelsPath, k, msg))
		}
		for _, msg := range utilvalidation.IsValidLabelValue(labels[k]) {
			errs = append(errs, field.Invalid(labelsPath.Key(k), labels[k], msg))
		}
	}
	return errs
}

// validateReplicas reports each mistake at the field the user wrote: a negative minReplicas
// at minReplicas, a maxReplicas below minReplicas at maxReplicas. Defaulting fills
// minReplicas 0 and maxReplicas 2147483647, which can never be the wrong side.
func validateReplicas(g *rayv1.WorkerGroupSpec, path *field.Path) (field.ErrorList, []string) {
	var errs field.ErrorList
	minOK := true
	if g.MinReplicas != nil && *g.MinReplicas < 0 {
		errs = append(errs, field.Invalid(path.Child("minReplicas"), *g.MinReplicas, "must be greater than or equal to 0"))
		minOK = false
	}
	minR, maxR := ptr.Deref(g.MinReplicas, 0), ptr.Deref(g.MaxReplicas, 0)
	boundsOK := minOK && g.MaxReplicas != nil
	if boundsOK && maxR < minR {
		errs = append(errs, field.Invalid(path.Child("maxReplicas"), maxR, fmt.Sprintf("must be greater than or equal to minReplicas (%d)", minR)))
		boundsOK = false
	}
	if g.NumOfHosts < 1 {
		errs = append(errs, field.Invalid(path.Child("numOfHosts"), g.NumOfHosts, "must be at least 1"))
	}
	if g.Replicas == nil {
		return errs, nil
	}
	r := *g.Replicas
	if r < 0 {
		return append(errs, field.Invalid(path.Child("replicas"), r, "must be greater than or equal to 0")), nil
	}
	// 0 is the stored default ("as few as allowed"), so clamping it up is expected.
	if boundsOK && r != 0 && (r < minR || r > maxR) {
		return errs, []string{fmt.Sprintf(WarnReplicasClamped, path.Child("replicas"), r, minR, maxR, min(max(r, minR), maxR))}
	}
	return errs, nil
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
