package validation

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strings"

	yaml "go.yaml.in/yaml/v3"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	utilversion "k8s.io/apimachinery/pkg/util/version"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/features"
	"github.com/raygate/raygate/internal/rayjob"
	"github.com/raygate/raygate/internal/rayspec"
)

// Bounds on what a RayJob hands to its submitter, exported for docs and tests. The submitter
// runs `ray job submit` as one `bash -c` argument holding the entrypoint, the runtime
// environment and the metadata as JSON, and Linux refuses a single argument over
// MaxSubmitCommandBytes (MAX_ARG_STRLEN, 32 pages), so the pod would start and fail.
const (
	// MaxEntrypointBytes bounds spec.entrypoint.
	MaxEntrypointBytes = 64 << 10
	// MaxRuntimeEnvYAMLBytes bounds spec.runtimeEnvYAML; its expansion is bounded like a
	// serve config's (MaxServeConfigValues, MaxServeConfigJSONBytes).
	MaxRuntimeEnvYAMLBytes = 64 << 10
	// MaxJobMetadataBytes bounds spec.metadata: its keys and values together.
	MaxJobMetadataBytes = 16 << 10
	// MaxSubmitCommandBytes bounds the submitter's shell command (K8sJobMode without a
	// command of the template's, and SidecarMode).
	MaxSubmitCommandBytes = 128<<10 - 1
	// MaxJobIDLength bounds spec.jobId.
	MaxJobIDLength = 253
)

// Warnings about a RayJob's submission.
const (
	// WarnEntrypointNotRun: a submitter template with a command of its own submits the job
	// itself; raygate's `ray job submit` command, with the entrypoint, is not run.
	WarnEntrypointNotRun = "%s is not run by raygate: the first container of spec.submitterPodTemplate has a command of its own, which must submit the job itself " +
		"(RAY_DASHBOARD_ADDRESS and RAY_JOB_SUBMISSION_ID are set for it)"
	// WarnInteractiveIgnored: InteractiveMode submits nothing, so what would be submitted is unused.
	WarnInteractiveIgnored = "%s: in InteractiveMode raygate submits nothing, so it does not use %s; submit the job yourself and set spec.jobId to its submission id"
	// WarnSidecarRestartRayVersion: the restarting sidecar checks the job's status with a Ray
	// CLI that can fail on older versions.
	WarnSidecarRestartRayVersion = "%s is %s: with the SidecarSubmitterRestart feature gate the submitter container restarts on failure, which needs Ray %s or newer (and Kubernetes 1.35)"
	// WarnClusterSelectorKeysIgnored: only ray.io/cluster picks the cluster.
	WarnClusterSelectorKeysIgnored = "%s: only ray.io/cluster names the RayCluster the job runs on; %s are ignored"
	// WarnPreRunningDeadlineUnused: the active deadline ends the job before the pre-running one.
	WarnPreRunningDeadlineUnused = "%s is %d, not less than activeDeadlineSeconds %d: the active deadline ends the job first, so it has no effect"
)

// MinRayVersionForSidecarRestart is the first Ray whose submitter can be restarted safely.
const MinRayVersionForSidecarRestart = "2.54.0"

var (
	minSidecarRestartVersion = utilversion.MustParseGeneric(MinRayVersionForSidecarRestart)
	// jobIDPattern: the submission id is passed to the shell unquoted in the submit command
	// (as KubeRay builds it) and is part of the Ray Jobs API's URLs.
	jobIDPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)
)

// usesSubmitCommand reports whether raygate's `ray job submit` command runs: always in
// SidecarMode, in K8sJobMode unless the submitter template's first container has a command.
func usesSubmitCommand(spec *rayv1.RayJobSpec, mode rayv1.JobSubmissionMode) bool {
	switch mode {
	case rayv1.SidecarMode:
		return true
	case rayv1.K8sJobMode:
		t := spec.SubmitterPodTemplate
		return t == nil || len(t.Spec.Containers) == 0 || len(t.Spec.Containers[rayv1.RayContainerIndex].Command) == 0
	}
	return false
}

// jobSubmitter: what each submission mode takes. A submitter template and config only where
// a submitter runs (KubeRay refuses them in SidecarMode; raygate in HTTPMode and
// InteractiveMode too, where they would be silently ignored), a Job's pod template that the
// Job API accepts, a head pod that never restarts in SidecarMode, and an entrypoint wherever
// raygate submits one.
func (c *check) jobSubmitter(spec *rayv1.RayJobSpec, mode rayv1.JobSubmissionMode) (field.ErrorList, []string) {
	var errs field.ErrorList
	var warnings []string
	if mode != rayv1.K8sJobMode && slices.Contains(rayv1.JobSubmissionModes, mode) {
		why := fmt.Sprintf("used only in K8sJobMode; in %s %s", mode, noSubmitterPod(mode))
		if spec.SubmitterPodTemplate != nil {
			errs = append(errs, c.related(field.Forbidden(submitterTemplatePath, why), submissionModePath))
		}
		if spec.SubmitterConfig != nil {
			errs = append(errs, c.related(field.Forbidden(submitterConfigPath, why), submissionModePath))
		}
	}
	if b := spec.SubmitterConfig; b != nil && b.BackoffLimit != nil && *b.BackoffLimit < 0 {
		errs = append(errs, field.Invalid(submitterConfigPath.Child("backoffLimit"), *b.BackoffLimit, "must be greater than or equal to 0"))
	}
	switch mode {
	case rayv1.K8sJobMode:
		if t := spec.SubmitterPodTemplate; t != nil && c.admission() {
			errs = append(errs, submitterTemplateErrors(t)...)
			errs = append(errs, c.registries(&t.Spec, submitterTemplatePath.Child("spec"))...)
			if !usesSubmitCommand(spec, mode) && strings.TrimSpace(spec.Entrypoint) != "" {
				warnings = append(warnings, fmt.Sprintf(WarnEntrypointNotRun, entrypointPath))
			}
		}
	case rayv1.SidecarMode:
		errs = append(errs, c.sidecarHead(spec)...)
		warnings = append(warnings, c.sidecarRestartWarnings(spec)...)
	case rayv1.InteractiveMode:
		if c.admission() {
			warnings = append(warnings, interactiveWarnings(spec)...)
		}
	}
	needsEntrypoint := mode == rayv1.HTTPMode || usesSubmitCommand(spec, mode)
	if needsEntrypoint && strings.TrimSpace(spec.Entrypoint) == "" && c.admission() {
		errs = append(errs, c.related(field.Required(entrypointPath, fmt.Sprintf("the command of the Ray job: raygate submits it in %s", mode)),
			submissionModePath, submitterTemplatePath))
	}
	return errs, warnings
}

func noSubmitterPod(mode rayv1.JobSubmissionMode) string {
	switch mode {
	case rayv1.SidecarMode:
		return "the submitter is a container raygate adds to the head pod"
	case rayv1.HTTPMode:
		return "raygate submits the job itself, over HTTP"
	}
	return "raygate submits nothing"
}

// submitterTemplateErrors: the submitter Job's pod template needs a container to run the
// submitter, with an image, and a restart policy a Job accepts (the API server would refuse
// the Job when the controller creates it).
func submitterTemplateErrors(t *corev1.PodTemplateSpec) field.ErrorList {
	specP := submitterTemplatePath.Child("spec")
	var errs field.ErrorList
	switch {
	case len(t.Spec.Containers) == 0:
		errs = append(errs, field.Required(specP.Child("containers"), "at least one container is required; the first one runs the submitter"))
	case t.Spec.Containers[rayv1.RayContainerIndex].Image == "":
		errs = append(errs, field.Required(specP.Child("containers").Index(rayv1.RayContainerIndex).Child("image"),
			"the first container runs the submitter and needs an image"))
	}
	switch p := t.Spec.RestartPolicy; p {
	case corev1.RestartPolicyNever, corev1.RestartPolicyOnFailure:
	case "":
		errs = append(errs, field.Required(specP.Child("restartPolicy"), "a Job's pod must have restartPolicy Never or OnFailure"))
	default:
		errs = append(errs, field.NotSupported(specP.Child("restartPolicy"), p, []string{string(corev1.RestartPolicyNever), string(corev1.RestartPolicyOnFailure)}))
	}
	return errs
}

// sidecarHead: in SidecarMode the head pod runs the submitter, so it must never restart as
// a whole (KubeRay's rule; a restart would run the submission again), and no container of
// the template may take the submitter's name.
func (c *check) sidecarHead(spec *rayv1.RayJobSpec) field.ErrorList {
	if spec.RayClusterSpec == nil {
		return nil
	}
	head := &spec.RayClusterSpec.HeadGroupSpec.Template.Spec
	var errs field.ErrorList
	if p := head.RestartPolicy; p != "" && p != corev1.RestartPolicyNever {
		errs = append(errs, c.related(field.Forbidden(headRestartPolicyPath, fmt.Sprintf(
			"must be Never or unset in SidecarMode: the submitter runs in the head pod, which must not restart as a whole (raygate sets Never), not %s", p)), submissionModePath))
	}
	if c.admission() {
		for i := range head.Containers {
			if head.Containers[i].Name == rayv1.SubmitterContainerName {
				errs = append(errs, c.related(field.Forbidden(rayJobClusterPath.Child("headGroupSpec", "template", "spec", "containers").Index(i).Child("name"),
					fmt.Sprintf("%s is the name of the submitter container raygate adds to the head pod in SidecarMode; rename this one", rayv1.SubmitterContainerName)), submissionModePath))
			}
		}
	}
	return errs
}

func (c *check) sidecarRestartWarnings(spec *rayv1.RayJobSpec) []string {
	if !c.admission() || !c.gates.Enabled(features.SidecarSubmitterRestart) || spec.RayClusterSpec == nil {
		return nil
	}
	v, err := utilversion.ParseGeneric(spec.RayClusterSpec.RayVersion)
	if err != nil || v.AtLeast(minSidecarRestartVersion) {
		return nil
	}
	return []string{fmt.Sprintf(WarnSidecarRestartRayVersion, rayJobClusterPath.Child("rayVersion"), spec.RayClusterSpec.RayVersion, MinRayVersionForSidecarRestart)}
}

func interactiveWarnings(spec *rayv1.RayJobSpec) []string {
	var unused []string
	for _, f := range []struct {
		set  bool
		name string
	}{
		{strings.TrimSpace(spec.Entrypoint) != "", "entrypoint"}, {spec.RuntimeEnvYAML != "", "runtimeEnvYAML"},
		{len(spec.Metadata) > 0, "metadata"}, {spec.EntrypointNumCpus != 0, "entrypointNumCpus"},
		{spec.EntrypointNumGpus != 0, "entrypointNumGpus"}, {spec.EntrypointResources != "", "entrypointResources"},
	} {
		if f.set {
			unused = append(unused, f.name)
		}
	}
	if len(unused) == 0 {
		return nil
	}
	return []string{fmt.Sprintf(WarnInteractiveIgnored, submissionModePath, strings.Join(unused, ", "))}
}

// jobPayload: what the job hands to Ray, bounded and in the form Ray takes.
func (c *check) jobPayload(spec *rayv1.RayJobSpec, mode rayv1.JobSubmissionMode) (field.ErrorList, []string) {
	var errs field.ErrorList
	if n := len(spec.Entrypoint); n > MaxEntrypointBytes {
		errs = append(errs, tooLong(entrypointPath, n, MaxEntrypointBytes, "keep scripts in the image, a volume or runtimeEnvYAML's working_dir"))
	}
	errs = append(errs, validateRuntimeEnv(spec.RuntimeEnvYAML, runtimeEnvPath)...)
	if n := metadataBytes(spec.Metadata); n > MaxJobMetadataBytes {
		errs = append(errs, tooLong(jobMetadataPath, n, MaxJobMetadataBytes, "its keys and values together"))
	}
	if id := spec.JobId; id != "" {
		if len(id) > MaxJobIDLength {
			errs = append(errs, field.TooLong(jobIDPath, omit, MaxJobIDLength))
		} else if !jobIDPattern.MatchString(id) {
			errs = append(errs, field.Invalid(jobIDPath, id,
				"must consist of letters, digits, '.', '_' or '-' and start with a letter or digit: it is the Ray job's submission id, given to `ray job submit` and used in the Ray Jobs API's URLs"))
		}
	}
	if len(spec.Metadata) > 0 && (mode == rayv1.K8sJobMode || mode == rayv1.SidecarMode) {
		errs = append(errs, c.metadataRayVersion(spec)...)
	}
	if c.admission() {
		errs = append(errs, entrypointResourceErrors(spec)...)
	}
	if len(errs) == 0 && usesSubmitCommand(spec, mode) {
		errs = append(errs, c.submitCommandLength(spec, mode)...)
	}
	return errs, nil
}

func tooLong(path *field.Path, n, limit int, hint string) *field.Error {
	e := field.TooLong(path, omit, limit)
	e.Detail = fmt.Sprintf("must be at most %d bytes (%d KiB), not %d bytes; %s", limit, limit>>10, n, hint)
	return e
}

func metadataBytes(m map[string]string) int {
	n := 0
	for k, v := range m {
		n += len(k) + len(v)
	}
	return n
}

// validateRuntimeEnv: runtimeEnvYAML must be a YAML mapping (a Ray runtime environment),
// bounded before and after its aliases are expanded; KubeRay refuses what does not parse
// into a mapping.
func validateRuntimeEnv(env string, path *field.Path) field.ErrorList {
	if n := len(env); n > MaxRuntimeEnvYAMLBytes {
		return field.ErrorList{tooLong(path, n, MaxRuntimeEnvYAMLBytes, "keep large files out of it (e.g. in working_dir)")}
	}
	if strings.TrimSpace(env) == "" {
		return nil
	}
	root, err := parseServeYAML(env)
	if err == nil && root != nil {
		err = measureServeConfig(root)
	}
	if bound := (*errServeConfigBound)(nil); errors.As(err, &bound) {
		return field.ErrorList{field.Invalid(path, omit, bound.detail)}
	}
	if err != nil {
		return field.ErrorList{field.Invalid(path, omit, "must be valid YAML: "+yamlError(env, err))}
	}
	if top := deref(root); top != nil && top.Kind != yaml.MappingNode && !isNull(top) {
		return field.ErrorList{field.Invalid(path, omit, "must be a YAML mapping (a Ray runtime environment, e.g. pip: [...] or env_vars: {...}), not "+kindOf(top))}
	}
	return nil
}

// metadataRayVersion: `ray job submit --metadata-json` exists from Ray 2.6.0, and KubeRay
// cannot build the submit command for a rayVersion that is not a version.
func (c *check) metadataRayVersion(spec *rayv1.RayJobSpec) field.ErrorList {
	if spec.RayClusterSpec == nil || spec.RayClusterSpec.RayVersion == "" {
		return nil
	}
	vp := rayJobClusterPath.Child("rayVersion")
	v, err := utilversion.ParseGeneric(spec.RayClusterSpec.RayVersion)
	if err != nil {
		return field.ErrorList{c.related(field.Invalid(vp, spec.RayClusterSpec.RayVersion,
			"must be a Ray version such as 2.52.0: the submit command passes spec.metadata only to a Ray that has --metadata-json"), jobMetadataPath)}
	}
	if !v.AtLeast(utilversion.MustParseGeneric(rayjob.MinRayVersionForMetadata)) {
		return field.ErrorList{c.related(field.Forbidden(jobMetadataPath, fmt.Sprintf(
			"needs Ray %s or newer (`ray job submit --metadata-json`); rayClusterSpec.rayVersion is %s", rayjob.MinRayVersionForMetadata, spec.RayClusterSpec.RayVersion)), vp)}
	}
	return nil
}

// entrypointResourceErrors: Ray takes the entrypoint's resources as counts (a CPU, GPU or
// custom resource count below 0, or one that is not a number, fails the submission after
// the cluster was created).
func entrypointResourceErrors(spec *rayv1.RayJobSpec) field.ErrorList {
	var errs field.ErrorList
	for _, r := range []struct {
		value float32
		name  string
	}{{spec.EntrypointNumCpus, "entrypointNumCpus"}, {spec.EntrypointNumGpus, "entrypointNumGpus"}} {
		if f := float64(r.value); f < 0 || math.IsNaN(f) || math.IsInf(f, 0) {
			errs = append(errs, field.Invalid(specPath.Child(r.name), fmt.Sprint(r.value), "must be a number greater than or equal to 0"))
		}
	}
	if r := spec.EntrypointResources; r != "" {
		if msg := resourceCountsError(r); msg != "" {
			errs = append(errs, field.Invalid(specPath.Child("entrypointResources"), r, msg))
		}
	}
	return errs
}

func resourceCountsError(r string) string {
	dec := json.NewDecoder(bytes.NewReader([]byte(r)))
	dec.UseNumber()
	var counts map[string]any
	if err := dec.Decode(&counts); err != nil || counts == nil || dec.More() {
		return `must be a JSON object of resource names and counts, e.g. {"resource1": 1}`
	}
	for name, v := range counts {
		n, ok := v.(json.Number)
		if f, err := n.Float64(); !ok || err != nil || f < 0 {
			return fmt.Sprintf("the count of %q must be a number greater than or equal to 0", name)
		}
	}
	return ""
}

// submitCommandLength builds the submit command as the controller will (placeholders of the
// same length for what only the running job knows) and bounds it.
func (c *check) submitCommandLength(spec *rayv1.RayJobSpec, mode rayv1.JobSubmissionMode) field.ErrorList {
	job := &rayv1.RayJob{Spec: *spec}
	job.Spec.SubmissionMode = mode
	job.Status.JobId = spec.JobId
	if job.Status.JobId == "" {
		job.Status.JobId = rayjob.PlaceholderClusterName(strings.Repeat("x", 47)) // a generated id's longest
	}
	job.Status.DashboardURL = fmt.Sprintf("%s.%s.svc.cluster.local:%d", rayspec.HeadServiceName(rayjob.PlaceholderClusterName(strings.Repeat("x", 47))),
		strings.Repeat("x", 63), rayjob.DashboardPort(spec.RayClusterSpec))
	cmd, err := rayjob.SubmitCommand(job, mode, c.gates)
	if err != nil {
		return nil // what it refuses is reported by the rule about it
	}
	if n := len(strings.Join(cmd, " ")); n > MaxSubmitCommandBytes {
		e := field.TooLong(entrypointPath, omit, MaxSubmitCommandBytes)
		e.Detail = fmt.Sprintf("the submitter's `ray job submit` command, with entrypoint, runtimeEnvYAML and metadata, would be %d bytes; "+
			"Linux refuses a command argument over %d bytes, so make them smaller", n, MaxSubmitCommandBytes)
		return field.ErrorList{c.related(e, runtimeEnvPath, jobMetadataPath)}
	}
	return nil
}
