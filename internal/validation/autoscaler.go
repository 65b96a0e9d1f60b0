package validation

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	utilversion "k8s.io/apimachinery/pkg/util/version"
	"k8s.io/utils/ptr"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/raypod"
	"github.com/raygate/raygate/internal/rayspec"
)

// AutoscalerV2EnvVar is the head container variable that turns Ray's autoscaler v2 on.
const AutoscalerV2EnvVar = "RAY_enable_autoscaler_v2"

// autoscalerV2DefaultSince is the first Ray version whose autoscaler defaults to v2.
var autoscalerV2DefaultSince = utilversion.MustParseGeneric("2.47.0")

// v2Choice is whether autoscaler v2 runs and what chose it.
type v2Choice int

const (
	v2Off v2Choice = iota
	// v2Explicit: autoscalerOptions.version is v2; raygate then runs the Ray pods with
	// restartPolicy Never, as KubeRay does.
	v2Explicit
	// v2ByEnv: the head container's RAY_enable_autoscaler_v2 asks for it.
	v2ByEnv
	// v2ByRayVersion: Ray's own default for rayVersion; the pods keep their restartPolicy.
	v2ByRayVersion
)

// autoscalerV2Choice: autoscaler v2 needs enableInTreeAutoscaling; then
// autoscalerOptions.version decides, and when it is unset the head container's
// RAY_enable_autoscaler_v2 variable, and failing that rayVersion (v2 is Ray's default from
// 2.47.0; an unparsable or missing rayVersion counts as older).
func autoscalerV2Choice(spec *rayv1.RayClusterSpec) v2Choice {
	if spec == nil || !rayspec.AutoscalingEnabled(spec) {
		return v2Off
	}
	if o := spec.AutoscalerOptions; o != nil && o.Version != nil {
		if *o.Version == rayv1.AutoscalerVersionV2 {
			return v2Explicit
		}
		return v2Off
	}
	if env, _, ok := headEnv(spec, AutoscalerV2EnvVar); ok {
		if envTrue(env.Value) {
			return v2ByEnv
		}
		return v2Off
	}
	if v, err := utilversion.ParseGeneric(spec.RayVersion); err == nil && v.AtLeast(autoscalerV2DefaultSince) {
		return v2ByRayVersion
	}
	return v2Off
}

// AutoscalerV2 reports whether a cluster runs the Ray autoscaler v2, however it was chosen
// (autoscalerV2Choice).
func AutoscalerV2(spec *rayv1.RayClusterSpec) bool { return autoscalerV2Choice(spec) != v2Off }

// prioritySince is the first Ray version whose autoscaler reads a worker group's priority.
var prioritySince = utilversion.MustParseGeneric("2.56.0")

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
func (c *check) autoscaler(spec *rayv1.RayClusterSpec, path *field.Path) (field.ErrorList, []string) {
	var errs field.ErrorList
	var warnings []string
	autoscaling := rayspec.AutoscalingEnabled(spec)
	choice := autoscalerV2Choice(spec)
	v2 := choice != v2Off
	// The paths are built when a problem is reported (most specs have none).
	headPath := func() *field.Path { return path.Child("headGroupSpec", "template", "spec") }
	headEnvPath := func() *field.Path {
		return headPath().Child("containers").Index(rayv1.RayContainerIndex).Child("env")
	}
	enablePath := func() *field.Path { return path.Child("enableInTreeAutoscaling") }
	optionsPath := path.Child("autoscalerOptions")
	versionInputs := func() []*field.Path {
		return []*field.Path{enablePath(), optionsPath, path.Child("rayVersion"), headEnvPath()}
	}

	if env, i, ok := headEnv(spec, AutoscalerV2EnvVar); ok {
		envPath := headEnvPath().Index(i)
		switch {
		case !autoscaling && envTrue(env.Value):
			errs = append(errs, c.related(field.Invalid(envPath.Child("value"), env.Value,
				AutoscalerV2EnvVar+" turns on autoscaler v2, which needs enableInTreeAutoscaling: true"), enablePath()))
		case autoscaling && spec.AutoscalerOptions != nil && spec.AutoscalerOptions.Version != nil:
			errs = append(errs, c.related(field.Forbidden(envPath,
				"autoscalerOptions.version is set too; choose the autoscaler version only with autoscalerOptions.version"), versionInputs()...))
		}
	}
	errs = append(errs, autoscalerOptions(spec.AutoscalerOptions, optionsPath)...)

	restartPolicy := func(rp corev1.RestartPolicy, at func() *field.Path) {
		if rp == "" || rp == corev1.RestartPolicyNever {
			return
		}
		p := at()
		switch choice {
		case v2Explicit:
			errs = append(errs, c.related(field.Invalid(p, rp,
				"must be Never or unset with autoscalerOptions.version v2: autoscaler v2 replaces failed Ray pods itself"), versionInputs()...))
		case v2ByEnv:
			warnings = append(warnings, fmt.Sprintf(WarnRestartPolicyImplicitV2, p, rp, AutoscalerV2EnvVar+" in the head container"))
		case v2ByRayVersion:
			warnings = append(warnings, fmt.Sprintf(WarnRestartPolicyImplicitV2, p, rp,
				fmt.Sprintf("rayVersion %s (Ray's default from %s)", spec.RayVersion, autoscalerV2DefaultSince)))
		}
	}
	restartPolicy(spec.HeadGroupSpec.Template.Spec.RestartPolicy, func() *field.Path { return headPath().Child("restartPolicy") })
	for i := range spec.WorkerGroupSpecs {
		g := &spec.WorkerGroupSpecs[i]
		gPath := func() *field.Path { return path.Child("workerGroupSpecs").Index(i) }
		if autoscaling && ptr.Deref(g.Suspend, false) {
			errs = append(errs, c.related(field.Forbidden(gPath().Child("suspend"),
				"a worker group cannot be suspended while enableInTreeAutoscaling is true: the autoscaler decides its replicas"), enablePath()))
		}
		restartPolicy(g.Template.Spec.RestartPolicy, func() *field.Path { return gPath().Child("template", "spec", "restartPolicy") })
		if g.IdleTimeoutSeconds != nil {
			switch {
			case *g.IdleTimeoutSeconds < 0:
				errs = append(errs, field.Invalid(gPath().Child("idleTimeoutSeconds"), *g.IdleTimeoutSeconds, "must be greater than or equal to 0"))
			case !v2:
				errs = append(errs, c.related(field.Forbidden(gPath().Child("idleTimeoutSeconds"),
					"needs autoscaler v2: set enableInTreeAutoscaling: true and autoscalerOptions.version: v2"), versionInputs()...))
			}
		}
		if g.Priority != nil && *g.Priority != 0 {
			if detail := priorityProblem(spec.RayVersion, v2); detail != "" {
				errs = append(errs, c.related(field.Forbidden(gPath().Child("priority"), detail), versionInputs()...))
			}
		}
	}
	return errs, warnings
}

// priorityProblem says why a worker group's non-zero priority cannot work, or "": the Ray
// autoscaler reads it from Ray 2.56.0, and only autoscaler v2.
func priorityProblem(rayVersion string, v2 bool) string {
	const needs = "needs Ray 2.56.0 or later, whose autoscaler v2 reads it"
	v, err := utilversion.ParseGeneric(rayVersion)
	switch {
	case rayVersion == "":
		return needs + "; set spec.rayVersion"
	case err != nil:
		return fmt.Sprintf("%s; spec.rayVersion %q is not a version", needs, rayVersion)
	case !v.AtLeast(prioritySince):
		return fmt.Sprintf("%s; spec.rayVersion is %s", needs, rayVersion)
	case !v2:
		return "needs autoscaler v2: set enableInTreeAutoscaling: true (and leave autoscalerOptions.version unset or v2)"
	}
	return ""
}

// autoscalerOptions: a non-negative idle timeout, and no value for the variable raygate sets
// to the autoscaler's generated command (a second value would shadow it for custom args that
// run $KUBERAY_GEN_AUTOSCALER_START_CMD).
func autoscalerOptions(o *rayv1.AutoscalerOptions, path *field.Path) field.ErrorList {
	if o == nil {
		return nil
	}
	var errs field.ErrorList
	if o.IdleTimeoutSeconds != nil && *o.IdleTimeoutSeconds < 0 {
		errs = append(errs, field.Invalid(path.Child("idleTimeoutSeconds"), *o.IdleTimeoutSeconds, "must be greater than or equal to 0"))
	}
	for i, e := range o.Env {
		if e.Name == raypod.EnvGeneratedAutoscalerCmd {
			errs = append(errs, field.Forbidden(path.Child("env").Index(i), raypod.EnvGeneratedAutoscalerCmd+
				" is set by raygate to the autoscaler's generated start command, which custom args can run as $"+
				raypod.EnvGeneratedAutoscalerCmd+"; remove it from env"))
		}
	}
	return errs
}
