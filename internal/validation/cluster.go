package validation

import (
	"fmt"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/rayspec"
)

// NotSupportedYet is the detail of the error on a KubeRay field raygate does not implement.
// Rejecting is deliberate: silently ignoring e.g. authOptions would leave a cluster open.
const NotSupportedYet = "not supported by raygate yet; remove it (raygate would otherwise ignore it)"

// rayResourceParams are the rayStartParams that declare Ray logical resources, which the
// group's resources field declares too.
var rayResourceParams = []string{"num-cpus", "num-gpus", "memory", "resources"}

// clusterSpec checks everything in a cluster spec except upgradeStrategy, whose rules
// differ between a RayCluster and a RayService's rayClusterConfig. oldSpec is the stored
// spec on update (nil otherwise); the pod bounds compare against it.
func (c *check) clusterSpec(oldSpec, spec *rayv1.RayClusterSpec, path *field.Path) (field.ErrorList, []string) {
	var errs field.ErrorList
	head := &spec.HeadGroupSpec
	headPath := path.Child("headGroupSpec")
	errs = append(errs, c.group(&head.Template, head.RayStartParams, head.Resources, head.Labels, headPath)...)
	errs = append(errs, validateHeadServiceOverride(head, headPath)...)
	errs = append(errs, c.policyCluster(spec, path)...)

	var warnings []string
	firstIndex := make(map[string]int, len(spec.WorkerGroupSpecs))
	groupsPath := path.Child("workerGroupSpecs")
	for i := range spec.WorkerGroupSpecs {
		g := &spec.WorkerGroupSpecs[i]
		gPath := groupsPath.Index(i)
		errs = append(errs, c.groupName(g.GroupName, i, firstIndex, groupsPath)...)
		errs = append(errs, c.group(&g.Template, g.RayStartParams, g.Resources, g.Labels, gPath)...)
		e, w := c.replicas(g, gPath)
		errs, warnings = append(errs, e...), append(warnings, w...)
	}
	if c.admission() {
		e, w := c.autoscaler(spec, path)
		errs, warnings = append(errs, e...), append(warnings, w...)
		e, w = headIngress(head, headPath)
		errs, warnings = append(errs, e...), append(warnings, w...)
		e, w = c.historyServer(spec, path)
		errs, warnings = append(errs, e...), append(warnings, w...)
		e, w = c.mtls(spec, path)
		errs, warnings = append(errs, e...), append(warnings, w...)
	}
	e, w := c.authAndIsolation(oldSpec, spec, path)
	errs, warnings = append(errs, e...), append(warnings, w...)
	if !c.admission() {
		// A stored cluster over the pod bounds is not refused: the controller creates at
		// most the bounds (CapPods) and keeps reconciling, so it can still be scaled down.
		return errs, warnings
	}
	e, w = c.podBounds(oldSpec, spec, path)
	return append(errs, e...), append(warnings, w...)
}

// groupName: set, a DNS-1123 label once lower-cased, unique. Upper-case letters are accepted
// as in KubeRay: pod names use the name lower-cased, labels keep it as written. A duplicate
// is reported at the later group and compared on update with the earlier one's name too.
func (c *check) groupName(name string, i int, firstIndex map[string]int, groupsPath *field.Path) field.ErrorList {
	path := func() *field.Path { return groupsPath.Index(i).Child("groupName") }
	if name == "" {
		return field.ErrorList{field.Required(path(), "every worker group needs a name")}
	}
	var errs field.ErrorList
	lower := strings.ToLower(name)
	for _, msg := range utilvalidation.IsDNS1123Label(lower) {
		if lower != name {
			msg += " (upper-case letters are allowed: pod names use the name lower-cased)"
		}
		errs = append(errs, field.Invalid(path(), name, msg))
	}
	if first, seen := firstIndex[name]; seen {
		errs = append(errs, c.related(field.Duplicate(path(), name), groupsPath.Index(first).Child("groupName")))
	} else {
		firstIndex[name] = i
	}
	return errs
}

// group checks what the head and worker groups share: the pod template's Ray container,
// where Ray resources are declared, and Ray node labels.
func (c *check) group(tmpl *corev1.PodTemplateSpec, rayStartParams, resources, labels map[string]string, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	containersPath := func() *field.Path { return path.Child("template", "spec", "containers") }
	containers := tmpl.Spec.Containers
	switch {
	case len(containers) == 0:
		errs = append(errs, field.Required(containersPath(), "at least one container is required; the first one runs Ray"))
	case containers[rayv1.RayContainerIndex].Image == "":
		errs = append(errs, field.Required(containersPath().Index(rayv1.RayContainerIndex).Child("image"),
			"the first container runs Ray and needs an image"))
	}
	if c.admission() {
		errs = append(errs, podTemplateSize(tmpl, path)...)
		// Create/update-only: the controllers give resources precedence, as KubeRay does.
		if given := keysOf(rayStartParams, rayResourceParams...); len(given) > 0 && len(resources) > 0 {
			errs = append(errs, c.related(field.Forbidden(path.Child("resources"), fmt.Sprintf(
				"Ray resources are also given in rayStartParams (%s); declare them in only one of the two", strings.Join(given, ", "))),
				path.Child("rayStartParams")))
		}
		if _, ok := rayStartParams["labels"]; ok {
			errs = append(errs, field.Forbidden(path.Child("rayStartParams").Key("labels"), "use the labels field for Ray node labels"))
		}
		for _, k := range rayspec.PortParams {
			if v, ok := rayStartParams[k]; ok {
				if _, valid := rayspec.ValidPort(v); !valid {
					errs = append(errs, field.Invalid(path.Child("rayStartParams").Key(k), v, "must be a port number from 1 to 65535"))
				}
			}
		}
		// The API server refuses every pod of a template with such a name (KubeRay's
		// vLLM sample leaves the placeholder $KSA_NAME): say so now, not when the pods fail.
		if name := tmpl.Spec.ServiceAccountName; name != "" {
			for _, msg := range utilvalidation.IsDNS1123Subdomain(name) {
				errs = append(errs, field.Invalid(path.Child("template", "spec", "serviceAccountName"), name, msg))
			}
		}
	}
	if len(labels) == 0 {
		return errs
	}
	labelsPath := path.Child("labels")
	for _, k := range slices.Sorted(maps.Keys(labels)) {
		for _, msg := range utilvalidation.IsQualifiedName(k) {
			errs = append(errs, field.Invalid(labelsPath, k, msg))
		}
		for _, msg := range utilvalidation.IsValidLabelValue(labels[k]) {
			errs = append(errs, field.Invalid(labelsPath.Key(k), labels[k], msg))
		}
	}
	return errs
}

// replicas reports each mistake at the field the user wrote: a negative minReplicas at
// minReplicas, a maxReplicas below minReplicas at maxReplicas. Defaulting fills minReplicas
// 0 and maxReplicas 2147483647, which can never be the wrong side.
func (c *check) replicas(g *rayv1.WorkerGroupSpec, path *field.Path) (field.ErrorList, []string) {
	var errs field.ErrorList
	minOK := true
	if g.MinReplicas != nil && *g.MinReplicas < 0 {
		errs = append(errs, field.Invalid(path.Child("minReplicas"), *g.MinReplicas, "must be greater than or equal to 0"))
		minOK = false
	}
	minR, maxR := ptr.Deref(g.MinReplicas, 0), ptr.Deref(g.MaxReplicas, 0)
	boundsOK := minOK && g.MaxReplicas != nil
	if boundsOK && maxR < minR {
		errs = append(errs, c.related(field.Invalid(path.Child("maxReplicas"), maxR, fmt.Sprintf("must be greater than or equal to minReplicas (%d)", minR)),
			path.Child("minReplicas")))
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

// validateClusterUpgradeStrategy: Recreate or None, and none at all on a cluster that a
// RayService owns (the RayService decides how its clusters are replaced).
func validateClusterUpgradeStrategy(rc *rayv1.RayCluster) field.ErrorList {
	s := rc.Spec.UpgradeStrategy
	if s == nil || s.Type == nil {
		return nil
	}
	path := upgradeTypePath
	if owner := owningRayService(rc); owner != "" {
		return field.ErrorList{field.Forbidden(path, fmt.Sprintf(
			"not allowed on a RayCluster managed by RayService %s; set spec.upgradeStrategy on the RayService instead", owner))}
	}
	switch *s.Type {
	case rayv1.RayClusterRecreate, rayv1.RayClusterUpgradeNone:
		return nil
	default:
		return field.ErrorList{field.NotSupported(path, *s.Type, []string{string(rayv1.RayClusterRecreate), string(rayv1.RayClusterUpgradeNone)})}
	}
}

// owningRayService names the RayService behind a cluster (by owner reference, or by the
// originated-from label KubeRay sets), or returns "".
func owningRayService(rc *rayv1.RayCluster) string {
	for _, ref := range rc.OwnerReferences {
		if gv, err := schema.ParseGroupVersion(ref.APIVersion); err == nil && ref.Kind == rayv1.RayServiceKind && gv.Group == rayv1.GroupVersion.Group {
			return fmt.Sprintf("%q", ref.Name)
		}
	}
	if rc.Labels[rayv1.OriginatedFromCRDLabelKey] == rayv1.RayServiceKind {
		if name := rc.Labels[rayv1.OriginatedFromCRNameLabelKey]; name != "" {
			return fmt.Sprintf("%q", name)
		}
		return "(label " + rayv1.OriginatedFromCRDLabelKey + ")"
	}
	return ""
}
