package validation

import (
	"fmt"
	"maps"
	"net"
	"slices"
	"strconv"
	"strings"

	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/batchscheduler"
	"github.com/raygate/raygate/internal/defaulting"
	"github.com/raygate/raygate/internal/features"
)

var (
	rayJobStatusPath        = field.NewPath("status")
	rayJobClusterPath       = specPath.Child("rayClusterSpec")
	submissionModePath      = specPath.Child("submissionMode")
	clusterSelectorPath     = specPath.Child("clusterSelector")
	submitterTemplatePath   = specPath.Child("submitterPodTemplate")
	submitterConfigPath     = specPath.Child("submitterConfig")
	jobBackoffLimitPath     = specPath.Child("backoffLimit")
	jobSuspendPath          = specPath.Child("suspend")
	shutdownPath            = specPath.Child("shutdownAfterJobFinishes")
	ttlAfterFinishedPath    = specPath.Child("ttlSecondsAfterFinished")
	entrypointPath          = specPath.Child("entrypoint")
	runtimeEnvPath          = specPath.Child("runtimeEnvYAML")
	jobMetadataPath         = specPath.Child("metadata")
	jobIDPath               = specPath.Child("jobId")
	headRestartPolicyPath   = rayJobClusterPath.Child("headGroupSpec", "template", "spec", "restartPolicy")
	supportedSubmissionMode = []string{string(rayv1.K8sJobMode), string(rayv1.HTTPMode), string(rayv1.InteractiveMode), string(rayv1.SidecarMode)}
)

// RayJob validates a (defaulted) RayJob on create.
func (v Validator) RayJob(job *rayv1.RayJob) (field.ErrorList, []string) {
	return v.AdmitRayJob(nil, nil, job)
}

// RayJobUpdate validates an update of a (defaulted) RayJob, ratcheted against old, plus the
// update rules: spec.managedBy is immutable, and neither the submission mode nor the cluster
// a job runs on may change while it runs.
func (v Validator) RayJobUpdate(old, job *rayv1.RayJob) (field.ErrorList, []string) {
	return v.AdmitRayJob(nil, old, job)
}

// AdmitRayJob validates a (defaulted) RayJob on create (old nil) or update, and, with what
// the webhook knows of its namespace (ns, may be nil), the pods raygate would create for it:
// its RayCluster's (with the submitter sidecar in SidecarMode) and the submitter Job's pod
// from spec.submitterPodTemplate: their Pod Security (errors and warnings) and whether they
// fit in the namespace's quotas (warnings).
func (v Validator) AdmitRayJob(ns *Namespace, old, job *rayv1.RayJob) (field.ErrorList, []string) {
	if job == nil || job.DeletionTimestamp != nil {
		return nil, nil
	}
	if ManagedByOther(job.Spec.ManagedBy) {
		ns = nil // its pods run where the other controller puts them (MultiKueue: another cluster)
	}
	return admit(v, old, job, (*check).rayJob, defaultedJob, func(c *check, stored *rayv1.RayJob) (field.ErrorList, []string) {
		e, w := c.jobPods(ns, stored, job)
		if stored == nil {
			return e, w
		}
		ue, uw := jobUpdateRules(stored, job)
		return append(e, ue...), append(w, uw...)
	})
}

// StoredRayJob validates a RayJob already stored, for the controller (after defaulting a
// copy in memory): every rule KubeRay's RayJob controller checks (a RayJob breaking one gets
// JobDeploymentStatus ValidationFailed there), what StoredRayCluster checks of
// spec.rayClusterSpec, the bounds on what the submitter is given, the submission mode, and
// KubeRay's status rule (Waiting only in InteractiveMode).
//
// Create/update-only, not checked here: the RayJobDeletionPolicy gate (a stored job keeps
// its deletionStrategy when the gate is turned off; the controller then falls back to
// shutdownAfterJobFinishes and says so), the entrypoint a mode needs, the submitter
// template's container, restart policy and image, entrypointResources and entrypoint
// resource counts, the admin's policy, Pod Security, quotas, warnings and the update rules.
func (v Validator) StoredRayJob(job *rayv1.RayJob) field.ErrorList {
	if job == nil || job.DeletionTimestamp != nil {
		return nil
	}
	errs, _ := v.check(stored).rayJob(nil, job)
	errs, _ = capped(append(errs, jobStatusErrors(job)...), nil)
	return errs
}

// RayJob validates a (defaulted) RayJob on create, with DefaultLimits.
func RayJob(job *rayv1.RayJob, gates features.Gates) (field.ErrorList, []string) {
	return Validator{Gates: gates}.RayJob(job)
}

// RayJobUpdate validates an update of a RayJob, with DefaultLimits.
func RayJobUpdate(old, job *rayv1.RayJob, gates features.Gates) (field.ErrorList, []string) {
	return Validator{Gates: gates}.RayJobUpdate(old, job)
}

// defaultedJob returns the stored object of an update defaulted, for reading only; what
// defaulting assigns (the spec's own fields, the cluster spec's worker groups) is copied.
func defaultedJob(job *rayv1.RayJob) *rayv1.RayJob {
	c := *job
	if rcs := job.Spec.RayClusterSpec; rcs != nil {
		cs := *rcs
		cs.WorkerGroupSpecs = slices.Clone(rcs.WorkerGroupSpecs)
		c.Spec.RayClusterSpec = &cs
	}
	defaulting.RayJob(&c)
	return &c
}

// effectiveMode is spec.submissionMode after defaulting.
func effectiveMode(spec *rayv1.RayJobSpec) rayv1.JobSubmissionMode {
	if spec.SubmissionMode == "" {
		return defaulting.SubmissionMode
	}
	return spec.SubmissionMode
}

// rayJob holds every rule of a RayJob's metadata and spec; old is the stored object on
// update (nil otherwise).
func (c *check) rayJob(old, job *rayv1.RayJob) (field.ErrorList, []string) {
	spec := &job.Spec
	errs := validateName(&job.ObjectMeta, jobNames)
	var oldManagedBy *string
	if old != nil {
		oldManagedBy = old.Spec.ManagedBy
	}
	errs = append(errs, managedByChange(oldManagedBy, spec.ManagedBy, old != nil)...)
	mode := effectiveMode(spec)
	if !slices.Contains(rayv1.JobSubmissionModes, mode) {
		errs = append(errs, field.NotSupported(submissionModePath, mode, supportedSubmissionMode))
	}
	var warnings []string
	for _, rule := range []func(*rayv1.RayJobSpec, rayv1.JobSubmissionMode) (field.ErrorList, []string){
		c.jobCluster, c.jobLifecycle, c.jobSubmitter, c.jobPayload,
	} {
		e, w := rule(spec, mode)
		errs, warnings = append(errs, e...), append(warnings, w...)
	}
	e, w := c.deletionStrategy(old, job)
	errs, warnings = append(errs, e...), append(warnings, w...)
	e, w = c.jobClusterSpec(old, job)
	errs, warnings = append(errs, e...), append(warnings, w...)
	if c.admission() {
		warnings = append(warnings, batchscheduler.LabelWarnings(job.Labels, labelsPath, c.policy.BatchScheduler)...)
	}
	return errs, warnings
}

// jobCluster: exactly one of rayClusterSpec and clusterSelector, and what a job on an
// existing cluster cannot do (be suspended, retry on a new cluster, run a sidecar).
func (c *check) jobCluster(spec *rayv1.RayJobSpec, mode rayv1.JobSubmissionMode) (field.ErrorList, []string) {
	selector := len(spec.ClusterSelector) != 0
	switch {
	case !selector && spec.RayClusterSpec == nil:
		return field.ErrorList{c.related(field.Required(rayJobClusterPath,
			"one of rayClusterSpec (a RayCluster created for the job) and clusterSelector (an existing RayCluster) is required"), clusterSelectorPath)}, nil
	case !selector:
		return nil, nil
	}
	var errs field.ErrorList
	var warnings []string
	if spec.RayClusterSpec != nil {
		errs = append(errs, c.related(field.Forbidden(rayJobClusterPath,
			"not used with clusterSelector: the job runs on the RayCluster the selector names, and no cluster is created; remove one of the two"), clusterSelectorPath))
	}
	keyPath := clusterSelectorPath.Key(rayv1.RayJobClusterSelectorKey)
	if name := spec.ClusterSelector[rayv1.RayJobClusterSelectorKey]; name == "" {
		errs = append(errs, field.Required(keyPath, "names the RayCluster the job runs on"))
	} else {
		for _, msg := range utilvalidation.IsDNS1123Subdomain(name) {
			errs = append(errs, field.Invalid(keyPath, name, msg))
		}
	}
	if others := slices.DeleteFunc(slices.Sorted(maps.Keys(spec.ClusterSelector)), func(k string) bool { return k == rayv1.RayJobClusterSelectorKey }); len(others) > 0 && c.admission() {
		warnings = append(warnings, fmt.Sprintf(WarnClusterSelectorKeysIgnored, clusterSelectorPath, strings.Join(others, ", ")))
	}
	if spec.Suspend {
		errs = append(errs, c.related(field.Forbidden(jobSuspendPath,
			"a job on an existing RayCluster (clusterSelector) cannot be suspended: suspending deletes the job's cluster"), clusterSelectorPath))
	}
	if mode == rayv1.SidecarMode {
		errs = append(errs, c.related(field.Forbidden(clusterSelectorPath,
			"not with submissionMode SidecarMode: the submitter runs in the head pod of a cluster created for the job"), submissionModePath))
	}
	if b := ptr.Deref(spec.BackoffLimit, 0); b > 0 {
		errs = append(errs, c.related(field.Forbidden(jobBackoffLimitPath,
			"must be 0 with clusterSelector: each retry runs on a new RayCluster, and a job on an existing cluster has none"), clusterSelectorPath))
	}
	return errs, warnings
}

// jobLifecycle: suspension, the cluster's time to live, retries and deadlines.
func (c *check) jobLifecycle(spec *rayv1.RayJobSpec, mode rayv1.JobSubmissionMode) (field.ErrorList, []string) {
	var errs field.ErrorList
	if spec.Suspend && !spec.ShutdownAfterJobFinishes {
		errs = append(errs, c.related(field.Forbidden(jobSuspendPath,
			"a RayJob with shutdownAfterJobFinishes false cannot be suspended: suspending deletes its RayCluster"), shutdownPath))
	}
	switch ttl := spec.TTLSecondsAfterFinished; {
	case ttl < 0:
		errs = append(errs, field.Invalid(ttlAfterFinishedPath, ttl, "must be greater than or equal to 0"))
	case ttl > 0 && !spec.ShutdownAfterJobFinishes:
		errs = append(errs, c.related(field.Forbidden(ttlAfterFinishedPath,
			"used only with shutdownAfterJobFinishes: true (it is how long the RayCluster is kept after the job finished); set it, or remove ttlSecondsAfterFinished"), shutdownPath))
	}
	if b := spec.BackoffLimit; b != nil && *b < 0 {
		errs = append(errs, field.Invalid(jobBackoffLimitPath, *b, "must be greater than or equal to 0"))
	} else if mode == rayv1.InteractiveMode && ptr.Deref(b, 0) > 0 {
		errs = append(errs, c.related(field.Forbidden(jobBackoffLimitPath,
			"must be 0 in InteractiveMode: a retry would keep spec.jobId and take the finished job for the new one"), submissionModePath))
	}
	for _, d := range []struct {
		value *int32
		name  string
	}{{spec.ActiveDeadlineSeconds, "activeDeadlineSeconds"}, {spec.PreRunningDeadlineSeconds, "preRunningDeadlineSeconds"}} {
		if d.value != nil && *d.value <= 0 {
			errs = append(errs, field.Invalid(specPath.Child(d.name), *d.value, "must be greater than 0"))
		}
	}
	var warnings []string
	if a, p := ptr.Deref(spec.ActiveDeadlineSeconds, 0), ptr.Deref(spec.PreRunningDeadlineSeconds, 0); a > 0 && p >= a && c.admission() {
		warnings = append(warnings, fmt.Sprintf(WarnPreRunningDeadlineUnused, specPath.Child("preRunningDeadlineSeconds"), p, a))
	}
	return errs, warnings
}

// jobStatusErrors is KubeRay's status rule: only a job in InteractiveMode waits for its
// submission.
func jobStatusErrors(job *rayv1.RayJob) field.ErrorList {
	var errs field.ErrorList
	st := &job.Status
	if st.JobDeploymentStatus == rayv1.JobDeploymentStatusWaiting && effectiveMode(&job.Spec) != rayv1.InteractiveMode {
		errs = append(errs, field.Invalid(rayJobStatusPath.Child("jobDeploymentStatus"), st.JobDeploymentStatus,
			"only a RayJob in InteractiveMode waits for the user to submit its job"))
	}
	return append(errs, recordedNameErrors(st)...)
}

// recordedNameErrors checks the names a status records, which the controller builds from
// (the submit command, the cluster, the Jobs API's URLs): another operator (KubeRay before
// a switch) or anyone allowed to write the status may have written them, so they must be
// what raygate would have recorded: a submission id as spec.jobId allows, a RayCluster
// name, a dashboard address `host:port`.
func recordedNameErrors(st *rayv1.RayJobStatus) field.ErrorList {
	var errs field.ErrorList
	if id := st.JobId; id != "" && (len(id) > MaxJobIDLength || !jobIDPattern.MatchString(id)) {
		errs = append(errs, field.Invalid(rayJobStatusPath.Child("jobId"), omit,
			fmt.Sprintf("must be a submission id as spec.jobId allows (letters, digits, '.', '_' or '-', at most %d characters): it is given to the submitter's shell", MaxJobIDLength)))
	}
	if name := st.RayClusterName; name != "" {
		if msgs := utilvalidation.IsDNS1123Subdomain(name); len(msgs) > 0 {
			errs = append(errs, field.Invalid(rayJobStatusPath.Child("rayClusterName"), omit, "must be a RayCluster name: "+strings.Join(msgs, "; ")))
		}
	}
	if url := st.DashboardURL; url != "" && !isDashboardAddress(url) {
		errs = append(errs, field.Invalid(rayJobStatusPath.Child("dashboardURL"), omit,
			"must be the head Service's address, host:port (optionally after http://), with a DNS name or IP address as host: it is given to the submitter's shell"))
	}
	return errs
}

// isDashboardAddress: [http://]host:port, host a DNS subdomain or an IP address.
func isDashboardAddress(s string) bool {
	host, port, err := net.SplitHostPort(strings.TrimPrefix(s, "http://"))
	if err != nil {
		return false
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 || strconv.Itoa(n) != port {
		return false
	}
	// A fully qualified name may end with a dot (a cluster domain configured so).
	return net.ParseIP(host) != nil || len(utilvalidation.IsDNS1123Subdomain(strings.TrimSuffix(host, "."))) == 0
}

// isActive reports whether a job has started and not ended: its current attempt was set up
// from its spec, and some changes would be taken for another attempt's.
func isActive(s rayv1.JobDeploymentStatus) bool {
	switch s {
	case rayv1.JobDeploymentStatusNew, rayv1.JobDeploymentStatusSuspended, rayv1.JobDeploymentStatusValidationFailed:
		return false
	}
	return !rayv1.IsJobDeploymentTerminal(s)
}
