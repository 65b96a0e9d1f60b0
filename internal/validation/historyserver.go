package validation

import (
	"fmt"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/features"
	"github.com/raygate/raygate/internal/raypod"
)

// Warnings about the history server collector.
const (
	// WarnCollectorDefaultImage: no image given, so the pods run a moving tag.
	WarnCollectorDefaultImage = "%s is not set: the collector sidecar runs %s, a moving tag; pin a version"

	// WarnCollectorPostStart: the Ray container has its own postStart hook, which raygate
	// keeps, so the collector is not told the raylet's node ID.
	WarnCollectorPostStart = "%s is set, so raygate does not add the hook that records the raylet's node ID for the history server collector; the collector cannot file uploads under the Ray node"
)

var pullPolicies = []string{string(corev1.PullAlways), string(corev1.PullIfNotPresent), string(corev1.PullNever)}

// historyServer checks historyServerOptions (create/update-only): the feature gate, as
// KubeRay; then the collector container raygate adds to every Ray pod must be one the API
// server accepts, and must not clash with the templates' containers.
func (c *check) historyServer(spec *rayv1.RayClusterSpec, path *field.Path) (field.ErrorList, []string) {
	hs := spec.HistoryServerOptions
	if hs == nil {
		return nil, nil
	}
	hsPath := path.Child("historyServerOptions")
	if gate := string(features.RayClusterHistoryServer); !c.gates.Enabled(features.RayClusterHistoryServer) {
		// On update the ratchet lets an unchanged historyServerOptions through, so a cluster
		// stored before the gate was turned off can still be changed otherwise; its pods then
		// get no collector, as under KubeRay.
		return field.ErrorList{field.Forbidden(hsPath, fmt.Sprintf(
			"historyServerOptions needs the %s feature gate, which is disabled; %s", gate, GateHint(gate)))}, nil
	}
	o := hs.CollectorOptions
	if o == nil {
		return field.ErrorList{field.Required(hsPath.Child("collectorOptions"), "the collector sidecar is what historyServerOptions adds")}, nil
	}
	oPath := hsPath.Child("collectorOptions")
	var errs field.ErrorList
	var warnings []string
	if o.Image == nil || *o.Image == "" {
		warnings = append(warnings, fmt.Sprintf(WarnCollectorDefaultImage, oPath.Child("image"), raypod.DefaultCollectorImage))
	}
	if o.ImagePullPolicy != nil && *o.ImagePullPolicy != "" && !slices.Contains(pullPolicies, string(*o.ImagePullPolicy)) {
		errs = append(errs, field.NotSupported(oPath.Child("imagePullPolicy"), *o.ImagePullPolicy, pullPolicies))
	}
	if o.Resources != nil {
		errs = append(errs, requestsWithinLimits(o.Resources, oPath.Child("resources"))...)
	}
	for i, e := range o.Env {
		ePath := oPath.Child("env").Index(i)
		switch {
		case e.Name == "":
			errs = append(errs, field.Required(ePath.Child("name"), ""))
		case slices.Contains(raypod.CollectorReservedEnv, e.Name):
			errs = append(errs, field.Forbidden(ePath.Child("name"), fmt.Sprintf("%s is set by raygate on the collector sidecar", e.Name)))
		default:
			for _, msg := range utilvalidation.IsEnvVarName(e.Name) {
				errs = append(errs, field.Invalid(ePath.Child("name"), e.Name, msg))
			}
		}
		if e.Value != "" && e.ValueFrom != nil {
			errs = append(errs, field.Invalid(ePath.Child("valueFrom"), "", "may not be specified when `value` is not empty"))
		}
	}
	e, w := collectorClashes(&spec.HeadGroupSpec.Template, path.Child("headGroupSpec"))
	errs, warnings = append(errs, e...), append(warnings, w...)
	for i := range spec.WorkerGroupSpecs {
		e, w := collectorClashes(&spec.WorkerGroupSpecs[i].Template, path.Child("workerGroupSpecs").Index(i))
		errs, warnings = append(errs, e...), append(warnings, w...)
	}
	return errs, warnings
}

// collectorClashes: a template container named like the sidecar would make every pod of the
// group invalid; a postStart hook of the Ray container is kept, with a warning.
func collectorClashes(tmpl *corev1.PodTemplateSpec, groupPath *field.Path) (field.ErrorList, []string) {
	var errs field.ErrorList
	var warnings []string
	cPath := groupPath.Child("template", "spec", "containers")
	for i, c := range tmpl.Spec.Containers {
		if c.Name == raypod.CollectorContainer {
			errs = append(errs, field.Forbidden(cPath.Index(i).Child("name"),
				fmt.Sprintf("the name %q is taken by the history server collector sidecar raygate adds (historyServerOptions.collectorOptions)", c.Name)))
		}
	}
	if len(tmpl.Spec.Containers) > 0 {
		if lc := tmpl.Spec.Containers[rayv1.RayContainerIndex].Lifecycle; lc != nil && lc.PostStart != nil {
			warnings = append(warnings, fmt.Sprintf(WarnCollectorPostStart, cPath.Index(rayv1.RayContainerIndex).Child("lifecycle", "postStart")))
		}
	}
	return errs, warnings
}

// requestsWithinLimits: a request above its limit is refused by the API server.
func requestsWithinLimits(r *corev1.ResourceRequirements, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, name := range slices.Sorted(maps.Keys(r.Requests)) {
		req := r.Requests[name]
		if lim, ok := r.Limits[name]; ok && req.Cmp(lim) > 0 {
			errs = append(errs, field.Invalid(path.Child("requests").Key(string(name)), req.String(),
				fmt.Sprintf("must be less than or equal to the %s limit (%s)", name, lim.String())))
		}
	}
	return errs
}
