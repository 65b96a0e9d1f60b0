package validation

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/pod-security-admission/api"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/features"
	"github.com/raygate/raygate/internal/podquota"
	"github.com/raygate/raygate/internal/podsecurity"
	"github.com/raygate/raygate/internal/rayjob"
	"github.com/raygate/raygate/internal/raypod"
	"github.com/raygate/raygate/internal/rayspec"
)

// WarnRayJobChangeNotApplied: a running job's attempt was set up from the spec it started
// with; most changes apply from its next attempt.
const WarnRayJobChangeNotApplied = "%s: %s changed while the RayJob is %s; its current attempt keeps what it started with, " +
	"and the change applies from its next attempt (a retry, or a resume after suspending)"

// jobClusterSpec checks spec.rayClusterSpec with the rules of a RayCluster, as the cluster the
// job creates: the job's annotations reach that cluster, and its name is the job's plus five
// characters. A RayJob's cluster is never updated (each attempt gets a new one), so no
// upgradeStrategy (KubeRay refuses it on such a cluster).
func (c *check) jobClusterSpec(old, job *rayv1.RayJob) (field.ErrorList, []string) {
	spec := job.Spec.RayClusterSpec
	if spec == nil {
		return nil, nil
	}
	var oldSpec *rayv1.RayClusterSpec
	if old != nil {
		oldSpec = old.Spec.RayClusterSpec
	}
	errs, warnings := c.clusterSpec(oldSpec, spec, rayJobClusterPath)
	e, w := c.ingressPolicy(&job.ObjectMeta, spec, rayJobClusterPath)
	errs, warnings = append(errs, e...), append(warnings, w...)
	// No old spec: a change of backend simply applies to the next attempt's new cluster.
	e, w = c.gcsFaultTolerance(nil, &job.ObjectMeta, spec, rayJobClusterPath)
	errs, warnings = append(errs, e...), append(warnings, w...)
	if s := spec.UpgradeStrategy; s != nil && s.Type != nil {
		errs = append(errs, field.Forbidden(rayJobClusterPath.Child("upgradeStrategy"),
			"a RayJob's cluster is never updated (each attempt gets a new one), and KubeRay refuses an upgradeStrategy on it; remove it"))
	}
	if c.admission() {
		errs = append(errs, ingressClassAnnotation(&job.ObjectMeta, spec)...)
		if name := jobName(job); name != "" {
			errs = append(errs, tlsNames(rayjob.PlaceholderClusterName(name), spec, rayJobClusterPath)...)
		}
	}
	return errs, warnings
}

// jobName is a job's name, or its generateName with the API server's suffix.
func jobName(job *rayv1.RayJob) string {
	if job.Name != "" || job.GenerateName == "" {
		return job.Name
	}
	return job.GenerateName + generatedSuffix
}

// forBuilding is a copy of job for building its pods at admission: what only a running job
// knows (its submission id, its dashboard's address, its name when generated) filled with
// placeholders, and without what it submits, which only goes into the submit command's
// arguments (Pod Security and quotas do not read them; the rules about them, run first,
// bound them).
func forBuilding(job *rayv1.RayJob) *rayv1.RayJob {
	j := *job
	j.Spec.Entrypoint, j.Spec.RuntimeEnvYAML, j.Spec.Metadata, j.Spec.EntrypointResources = "", "", nil, ""
	j.Name = jobName(job)
	cluster := rayjob.PlaceholderClusterName(j.Name)
	if j.Status.JobId == "" {
		j.Status.JobId = job.Spec.JobId
	}
	if j.Status.JobId == "" {
		j.Status.JobId = j.Name + "-xxxxx"
	}
	if j.Status.DashboardURL == "" {
		j.Status.DashboardURL = fmt.Sprintf("%s.%s.svc.cluster.local:%d", rayspec.HeadServiceName(cluster), job.Namespace, rayjob.DashboardPort(job.Spec.RayClusterSpec))
	}
	return &j
}

// jobClusterFor is the RayCluster a job would create (nil without rayClusterSpec, or when it
// cannot be built: the rule about what stops it reports that).
func jobClusterFor(job *rayv1.RayJob, gates features.Gates) *rayv1.RayCluster {
	if job == nil || job.Spec.RayClusterSpec == nil {
		return nil
	}
	j := forBuilding(job)
	j.Spec.SubmissionMode = effectiveMode(&job.Spec)
	rc, err := rayjob.Cluster(j, rayjob.PlaceholderClusterName(j.Name), gates)
	if err != nil {
		return nil
	}
	return rc
}

// submitterPod is the submitter Job's pod of a K8sJobMode job (nil otherwise, or when it
// cannot be built). Without a submitterPodTemplate only for quotas: the default pod takes
// its securityContext from the head, whose Pod Security is checked with the cluster.
func submitterPod(job *rayv1.RayJob, cluster *rayv1.RayCluster, gates features.Gates) *corev1.Pod {
	if job == nil || effectiveMode(&job.Spec) != rayv1.K8sJobMode {
		return nil
	}
	tmpl, err := rayjob.SubmitterTemplate(forBuilding(job), cluster, gates)
	if err != nil {
		return nil
	}
	return &corev1.Pod{ObjectMeta: tmpl.ObjectMeta, Spec: tmpl.Spec}
}

// jobPods checks the pods raygate would create for a job against its namespace: the Pod
// Security of its cluster's pods (the submitter sidecar's violations are reported at the
// head's Ray container, whose securityContext it takes) and of the submitter pod of its
// submitterPodTemplate, and whether all of them fit in the quotas (not for a suspended job,
// which creates nothing until it is resumed). old is the stored job on update.
func (c *check) jobPods(ns *Namespace, old, job *rayv1.RayJob) (field.ErrorList, []string) {
	if ns == nil || !c.admission() {
		return nil, nil
	}
	cluster, oldCluster := jobClusterFor(job, c.gates), jobClusterFor(old, c.gates)
	var errs field.ErrorList
	var warnings []string
	if cluster != nil {
		memo := &podsecurity.Memo{}
		e, w := c.podSecurityOf(ns, func(lv api.LevelVersion, ofStored bool) []podsecurity.Violation {
			rc, j := cluster, job
			if ofStored {
				rc, j = oldCluster, old
			}
			if rc == nil {
				return nil
			}
			return sidecarAtRayContainer(podSecurityEvaluator.ClusterWith(memo, lv, rc, rayJobClusterPath, c.policy.PodSettings), j)
		}, oldCluster != nil)
		errs, warnings = append(errs, e...), append(warnings, w...)
	}
	pod, oldPod := submitterPod(job, cluster, c.gates), submitterPod(old, oldCluster, c.gates)
	if pod != nil && job.Spec.SubmitterPodTemplate != nil {
		hadTemplate := oldPod != nil && old.Spec.SubmitterPodTemplate != nil
		e, w := c.podSecurityOf(ns, func(lv api.LevelVersion, ofStored bool) []podsecurity.Violation {
			if ofStored {
				return podSecurityEvaluator.Pod(lv, oldPod, submitterTemplatePath)
			}
			return podSecurityEvaluator.Pod(lv, pod, submitterTemplatePath)
		}, hadTemplate)
		errs, warnings = append(errs, e...), append(warnings, w...)
	}
	if len(ns.Quotas) == 0 || job.Spec.Suspend {
		return errs, warnings
	}
	pods, ok := jobQuotaPods(cluster, pod, c.policy.PodSettings)
	var oldPods []podquota.Pods
	if old != nil && ok {
		oldPods, ok = jobQuotaPods(oldCluster, oldPod, c.policy.PodSettings)
	}
	if !ok {
		return errs, append(warnings, fmt.Sprintf(WarnQuotaNotChecked, specPath, podquota.MaxPodKinds))
	}
	var what string
	switch n := countPods(pods); {
	case cluster == nil:
		what = "the submitter Job's pods"
	case pod == nil:
		what = fmt.Sprintf("the %d pods of the job's cluster", n)
	default:
		what = fmt.Sprintf("the job's %d pods (its cluster's and its submitter's)", n)
	}
	return errs, append(warnings, podQuotaWarnings(ns, oldPods, pods, old != nil, specPath, what)...)
}

func jobQuotaPods(cluster *rayv1.RayCluster, submitter *corev1.Pod, s raypod.Settings) ([]podquota.Pods, bool) {
	var pods []podquota.Pods
	if cluster != nil {
		var ok bool
		if pods, ok = podquota.ClusterPods(cluster, s); !ok {
			return nil, false
		}
	}
	if submitter != nil {
		pods = append(pods, podquota.Of(submitter, 1))
	}
	return pods, true
}

// sidecarAtRayContainer reports the violations of the submitter sidecar (the last head
// container, in SidecarMode) at the head's Ray container, which its securityContext comes
// from, once: the Ray container fails the same checks.
func sidecarAtRayContainer(vs []podsecurity.Violation, job *rayv1.RayJob) []podsecurity.Violation {
	if effectiveMode(&job.Spec) != rayv1.SidecarMode || len(vs) == 0 {
		return vs
	}
	containers := rayJobClusterPath.Child("headGroupSpec", "template", "spec", "containers")
	sidecar := containers.Index(len(job.Spec.RayClusterSpec.HeadGroupSpec.Template.Spec.Containers)).String()
	ray := containers.Index(rayv1.RayContainerIndex).String()
	seen := map[string]bool{}
	out := vs[:0:0]
	for _, v := range vs {
		if p := v.Path.String(); strings.HasPrefix(p, sidecar) && (len(p) == len(sidecar) || p[len(sidecar)] == '.') {
			v.Path = field.NewPath(ray + p[len(sidecar):])
		}
		if key := v.Path.String() + "/" + v.Check; !seen[key] {
			seen[key] = true
			out = append(out, v)
		}
	}
	return out
}

// jobUpdateRules are the rules about an update of a job that has started and not ended
// (stored is the defaulted stored object): the submission mode and the cluster it runs on
// cannot change (the controller would look for a submitter or a cluster the attempt does
// not have, and could delete a cluster it did not create), and changes that apply only from
// the next attempt are pointed out.
func jobUpdateRules(stored, job *rayv1.RayJob) (field.ErrorList, []string) {
	status := stored.Status.JobDeploymentStatus
	if !isActive(status) {
		return nil, nil
	}
	var errs field.ErrorList
	if was, is := effectiveMode(&stored.Spec), effectiveMode(&job.Spec); was != is {
		errs = append(errs, field.Forbidden(submissionModePath, fmt.Sprintf(
			"cannot change from %s while the RayJob is %s: its current attempt was set up for %s; change it once the job has ended, or while it is suspended", was, status, was)))
	}
	if was, is := clusterTarget(stored), clusterTarget(job); was != is {
		errs = append(errs, field.Forbidden(clusterSelectorPath, fmt.Sprintf(
			"the RayJob is %s on %s; the cluster a running job uses cannot change (to %s)", status, was, is)))
	}
	var changed []string
	for _, f := range []struct {
		name     string
		old, new any
	}{
		{"entrypoint", stored.Spec.Entrypoint, job.Spec.Entrypoint},
		{"runtimeEnvYAML", stored.Spec.RuntimeEnvYAML, job.Spec.RuntimeEnvYAML},
		{"metadata", stored.Spec.Metadata, job.Spec.Metadata},
		{"jobId", stored.Spec.JobId, job.Spec.JobId},
		{"entrypointNumCpus", stored.Spec.EntrypointNumCpus, job.Spec.EntrypointNumCpus},
		{"entrypointNumGpus", stored.Spec.EntrypointNumGpus, job.Spec.EntrypointNumGpus},
		{"entrypointResources", stored.Spec.EntrypointResources, job.Spec.EntrypointResources},
		{"rayClusterSpec", stored.Spec.RayClusterSpec, job.Spec.RayClusterSpec},
		{"submitterPodTemplate", stored.Spec.SubmitterPodTemplate, job.Spec.SubmitterPodTemplate},
		{"submitterConfig", stored.Spec.SubmitterConfig, job.Spec.SubmitterConfig},
	} {
		// While Waiting (InteractiveMode), setting jobId is how the user names the job they
		// submitted: the current attempt takes it up.
		waitingForID := f.name == "jobId" && status == rayv1.JobDeploymentStatusWaiting
		if !apiequality.Semantic.DeepEqual(f.old, f.new) && !waitingForID {
			changed = append(changed, f.name)
		}
	}
	if len(changed) == 0 || len(errs) > 0 {
		return errs, nil
	}
	return nil, []string{fmt.Sprintf(WarnRayJobChangeNotApplied, specPath, strings.Join(changed, ", "), status)}
}

// clusterTarget describes the cluster a job runs on: an existing one, or its own.
func clusterTarget(job *rayv1.RayJob) string {
	if len(job.Spec.ClusterSelector) != 0 {
		return fmt.Sprintf("RayCluster %q (clusterSelector)", job.Spec.ClusterSelector[rayv1.RayJobClusterSelectorKey])
	}
	return "a RayCluster created for it (rayClusterSpec)"
}

// JobCluster is the RayCluster a job would create, as admission builds it (placeholders for
// what only a running job knows); nil without rayClusterSpec or when it cannot be built.
// internal/poddryrun builds the pods it dry-runs from it.
func JobCluster(job *rayv1.RayJob, gates features.Gates) *rayv1.RayCluster {
	return jobClusterFor(job, gates)
}

// SubmitterPod is the submitter Job's pod of a K8sJobMode job, as admission builds it
// (cluster is JobCluster's); nil in other modes or when it cannot be built.
func SubmitterPod(job *rayv1.RayJob, cluster *rayv1.RayCluster, gates features.Gates) *corev1.Pod {
	return submitterPod(job, cluster, gates)
}
