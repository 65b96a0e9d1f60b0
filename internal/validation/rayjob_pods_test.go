package validation

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/features"
)

func privilegedHead(j *rayv1.RayJob) {
	j.Spec.RayClusterSpec.HeadGroupSpec.Template.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{Privileged: ptr.To(true)}
}

func privilegedSubmitter(j *rayv1.RayJob) {
	j.Spec.SubmitterPodTemplate = &corev1.PodTemplateSpec{Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{
		Name: "submit", Image: "rayproject/ray:2.52.0", SecurityContext: &corev1.SecurityContext{Privileged: ptr.To(true)},
	}}}}
}

// The pods a job creates are checked against the namespace: its cluster's (the sidecar's
// violations at the Ray container it takes its securityContext from) and its submitter's.
func TestRayJobPodSecurity(t *testing.T) {
	const headPrivileged = "spec.rayClusterSpec.headGroupSpec.template.spec.containers[0].securityContext.privileged: Forbidden: violates PodSecurity \"baseline:latest\": "
	cases := map[string]struct {
		job  *rayv1.RayJob
		old  *rayv1.RayJob
		want []string
	}{
		"a privileged head": {
			job:  job(privilegedHead),
			want: []string{headPrivileged + `privileged (container "ray-head" must not set securityContext.privileged=true)`},
		},
		"a privileged head with the sidecar taking its securityContext: one error, at the Ray container": {
			job:  job(jobAll(privilegedHead, func(j *rayv1.RayJob) { j.Spec.SubmissionMode = rayv1.SidecarMode })),
			want: []string{headPrivileged + `privileged (container "ray-head" must not set securityContext.privileged=true)`},
		},
		"a privileged submitter": {
			job: job(privilegedSubmitter),
			want: []string{"spec.submitterPodTemplate.spec.containers[0].securityContext.privileged: Forbidden: violates PodSecurity \"baseline:latest\": " +
				`privileged (container "submit" must not set securityContext.privileged=true)`},
		},
		"a privileged submitter already stored is not refused again": {job: job(privilegedSubmitter), old: job(privilegedSubmitter)},
		"a job MultiKueue runs elsewhere":                            {job: job(jobAll(privilegedHead, func(j *rayv1.RayJob) { j.Spec.ManagedBy = ptr.To(MultiKueueManager) }))},
		"a job on an existing cluster, default submitter":            {job: job(onSelector)},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			errs, _ := Validator{Gates: features.Static{}}.AdmitRayJob(labelled(enforce, "baseline"), tc.old, tc.job)
			diffWarnings(t, tc.want, errorStrings(errs))
		})
	}
}

func TestRayJobQuota(t *testing.T) {
	ns := func(hard corev1.ResourceList) *Namespace {
		return &Namespace{Name: "ns", Quotas: []corev1.ResourceQuota{quota("q", hard, nil)}}
	}
	cases := map[string]struct {
		job  *rayv1.RayJob
		ns   *Namespace
		want []string
	}{
		"the cluster and the submitter fit": {job: job(nil), ns: ns(rl("pods", "3"))},
		"the submitter is one pod too many": {
			job: job(nil), ns: ns(rl("pods", "2")),
			want: []string{`spec: the job's 3 pods (its cluster's and its submitter's) do not fit in ResourceQuota "q": pods 3, 2 left (hard 2, used 0); ` +
				`the API server will refuse the pods that do not fit when raygate creates them`},
		},
		"a suspended job creates nothing yet": {job: job(jobAll(shutdown, func(j *rayv1.RayJob) { j.Spec.Suspend = true })), ns: ns(rl("pods", "0"))},
		"SidecarMode has no submitter pod":    {job: job(func(j *rayv1.RayJob) { j.Spec.SubmissionMode = rayv1.SidecarMode }), ns: ns(rl("pods", "2"))},
		"on an existing cluster only the submitter": {
			job: job(onSelector), ns: ns(rl("requests.cpu", "100m")),
			want: []string{`spec: the submitter Job's pods do not fit in ResourceQuota "q": requests.cpu 500m, 100m left (hard 100m, used 0); ` +
				`the API server will refuse the pods that do not fit when raygate creates them`},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			errs, warnings := Validator{Gates: features.Static{}}.AdmitRayJob(tc.ns, nil, tc.job)
			diffErrors(t, nil, errs)
			diffWarnings(t, tc.want, warnings)
		})
	}
}
