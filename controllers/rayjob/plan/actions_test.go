package plan

import (
	"testing"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
)

func TestActionEvents(t *testing.T) {
	rc := &rayv1.RayCluster{}
	for _, tc := range []struct {
		a      Action
		failed string
	}{
		{CreateCluster{Cluster: rc, Done: Event{Reason: EventCreatedCluster}}, EventFailedCreateCluster},
		{DeleteCluster{Cluster: rc, Done: Event{Reason: EventDeletedCluster}}, EventFailedDeleteCluster},
		{SuspendWorkers{Cluster: rc, Done: Event{Reason: EventUpdatedCluster}}, EventFailedUpdateCluster},
		{PointJobService{Cluster: rc, Done: Event{Reason: EventCreatedService}}, EventFailedCreateService},
		{DeleteRayJob{Done: Event{Reason: EventDeletedRayJob}}, EventFailedDeleteRayJob},
		{BatchSchedulerHook{Phase: OnCompletion}, EventFailedBatchCleanup},
		{AddFinalizer{}, ""},
	} {
		if got := FailureReason(tc.a); got != tc.failed {
			t.Errorf("%s: failure reason %q, want %q", tc.a, got, tc.failed)
		}
		if d := Done(tc.a); tc.failed != "" && tc.failed != EventFailedBatchCleanup && d.IsZero() {
			t.Errorf("%s: no done event", tc.a)
		}
	}
}
