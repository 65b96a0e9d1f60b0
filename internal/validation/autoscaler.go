package validation

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	utilversion "k8s.io/apimachinery/pkg/util/version"
	"k8s.io/utils/ptr"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/rayspec"
)

// AutoscalerV2EnvVar is the head container variable that turns Ray's autoscaler v2 on.
const AutoscalerV2EnvVar = "RAY_enable_autoscaler_v2"

// autoscalerV2DefaultSince is the first Ray version whose autoscaler defaults to v2.
var autoscalerV2DefaultSince = utilversion.MustParseGeneric("2.47.0")

// AutoscalerV2 reports whether a cluster runs the Ray autoscaler v2. It needs
// enableInTreeAutoscaling; then autoscalerOptions.version decides, and when it is unset the
// head container's RAY_enable_autoscaler_v2 variable, and failing that rayVersion (v2 is
// Ray's default from 2.47.0; an unparsable or missing rayVersion counts as older).
func AutoscalerV2(spec *rayv1.RayClusterSpec) bool {
	if spec == nil || !rayspec.AutoscalingEnabled(spec) {
		return false
	}
	if o := spec.AutoscalerOptions; o != nil && o.Version != nil {
		return *o.Version == rayv1.AutoscalerVersionV2
	}
	if env, _, ok := headEnv(spec, AutoscalerV2EnvVar); ok {
		return envTrue(env.Value)
	}
	v, err := utilversion.ParseGeneric(spec.RayVersion)
	return err == nil && v.AtLeast(autoscalerV2DefaultSince)
}

func headEnv(spec *rayv1.RayClusterSpec, name string) (corev1.EnvVar, int, bool) {
	containers := spec.HeadGroupSpec.Template.Spec.Containers
	if len(containers) == 0 {
		return corev1.EnvVar{}, 0, false
	}
	for i, e := range containers[rayv1.RayContainerIndex].Env {
		if e.Name == name {
			return e, i, true
		}
	}
	return corev1.EnvVar{}, 0, false
}

func envTrue(v string) bool { return v == "1" || strings.EqualFold(v, "true") }

// autoscaler checks the requirements of the in-tree autoscaler (create/update-only). Whether
// autoscaling and autoscaler v2 are on depends on several fields, so each error is compared
// on update with them too.
func (c *check) autoscaler(spec *rayv1.RayClusterSpec, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	autoscaling := rayspec.AutoscalingEnabled(spec)
	v2 := AutoscalerV2(spec)
	headPath := path.Child("headGroupSpec", "template", "spec")
	headEnvPath := headPath.Child("containers").Index(rayv1.RayContainerIndex).Child("env")
	enablePath := path.Child("enableInTreeAutoscaling")
	versionInputs := []*field.Path{enablePath, path.Child("autoscalerOptions"), path.Child("rayVersion"), headEnvPath}

	if env, i, ok := headEnv(spec, AutoscalerV2EnvVar); ok {
		envPath := headEnvPath.Index(i)
		switch {
		case !autoscaling && envTrue(env.Value):
			errs = append(errs, c.related(field.Invalid(envPath.Child("value"), env.Value,
				AutoscalerV2EnvVar+" turns on autoscaler v2, which needs enableInTreeAutoscaling: true"), enablePath))
		case autoscaling && spec.AutoscalerOptions != nil && spec.AutoscalerOptions.Version != nil:
			errs = append(errs, c.related(field.Forbidden(envPath,
				"autoscalerOptions.version is set too; choose the autoscaler version only with autoscalerOptions.version"), versionInputs...))
		}
	}

	if v2 {
		if rp := spec.HeadGroupSpec.Template.Spec.RestartPolicy; rp != "" && rp != corev1.RestartPolicyNever {
			errs = append(errs, c.related(field.Invalid(headPath.Child("restartPolicy"), rp,
				"must be Never or unset with autoscaler v2, which replaces failed Ray pods itself"), versionInputs...))
		}
	}
	for i := range spec.WorkerGroupSpecs {
		g := &spec.WorkerGroupSpecs[i]
		gPath := path.Child("workerGroupSpecs").Index(i)
		if autoscaling && ptr.Deref(g.Suspend, false) {
			errs = append(errs, c.related(field.Forbidden(gPath.Child("suspend"),
				"a worker group cannot be suspended while enableInTreeAutoscaling is true: the autoscaler decides its replicas"), enablePath))
		}
		if v2 {
			if rp := g.Template.Spec.RestartPolicy; rp != "" && rp != corev1.RestartPolicyNever {
				errs = append(errs, c.related(field.Invalid(gPath.Child("template", "spec", "restartPolicy"), rp,
					"must be Never or unset with autoscaler v2, which replaces failed Ray pods itself"), versionInputs...))
			}
		}
		if g.IdleTimeoutSeconds != nil {
			switch {
			case *g.IdleTimeoutSeconds < 0:
				errs = append(errs, field.Invalid(gPath.Child("idleTimeoutSeconds"), *g.IdleTimeoutSeconds, "must be greater than or equal to 0"))
			case !v2:
				errs = append(errs, c.related(field.Forbidden(gPath.Child("idleTimeoutSeconds"),
					"needs autoscaler v2: set enableInTreeAutoscaling: true and autoscalerOptions.version: v2"), versionInputs...))
			}
		}
	}
	return errs
}
