package defaulting_test

import (
	"math"
	"reflect"
	"testing"

	"k8s.io/utils/ptr"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/defaulting"
)

func TestRayJobDefaults(t *testing.T) {
	cases := []struct {
		name string
		in   rayv1.RayJobSpec
		want rayv1.RayJobSpec
	}{{
		name: "empty: mode and retries",
		want: rayv1.RayJobSpec{SubmissionMode: rayv1.K8sJobMode, BackoffLimit: ptr.To[int32](0)},
	}, {
		name: "given values are kept",
		in:   rayv1.RayJobSpec{SubmissionMode: rayv1.SidecarMode, BackoffLimit: ptr.To[int32](3)},
		want: rayv1.RayJobSpec{SubmissionMode: rayv1.SidecarMode, BackoffLimit: ptr.To[int32](3)},
	}, {
		name: "an unknown mode is left for validation to refuse",
		in:   rayv1.RayJobSpec{SubmissionMode: "Carrier-pigeon"},
		want: rayv1.RayJobSpec{SubmissionMode: "Carrier-pigeon", BackoffLimit: ptr.To[int32](0)},
	}, {
		name: "the cluster spec gets a RayCluster's defaults",
		in: rayv1.RayJobSpec{RayClusterSpec: &rayv1.RayClusterSpec{
			WorkerGroupSpecs: []rayv1.WorkerGroupSpec{{GroupName: "w", MinReplicas: ptr.To[int32](2)}},
		}},
		want: rayv1.RayJobSpec{SubmissionMode: rayv1.K8sJobMode, BackoffLimit: ptr.To[int32](0), RayClusterSpec: &rayv1.RayClusterSpec{
			HeadGroupSpec: rayv1.HeadGroupSpec{RayStartParams: map[string]string{}},
			WorkerGroupSpecs: []rayv1.WorkerGroupSpec{{
				GroupName: "w", NumOfHosts: 1, MinReplicas: ptr.To[int32](2), MaxReplicas: ptr.To[int32](math.MaxInt32),
				Replicas: ptr.To[int32](2), RayStartParams: map[string]string{},
			}},
		}},
	}, {
		name: "nothing is added under the submitter or the deletion strategy",
		in: rayv1.RayJobSpec{SubmitterConfig: &rayv1.SubmitterConfig{}, DeletionStrategy: &rayv1.DeletionStrategy{
			DeletionRules: []rayv1.DeletionRule{{Policy: rayv1.DeleteSelf, Condition: rayv1.DeletionCondition{JobStatus: ptr.To(rayv1.JobStatusFailed)}}},
		}},
		want: rayv1.RayJobSpec{SubmissionMode: rayv1.K8sJobMode, BackoffLimit: ptr.To[int32](0), SubmitterConfig: &rayv1.SubmitterConfig{},
			DeletionStrategy: &rayv1.DeletionStrategy{
				DeletionRules: []rayv1.DeletionRule{{Policy: rayv1.DeleteSelf, Condition: rayv1.DeletionCondition{JobStatus: ptr.To(rayv1.JobStatusFailed)}}},
			}},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			job := &rayv1.RayJob{Spec: *tc.in.DeepCopy()}
			defaulting.RayJob(job)
			if !reflect.DeepEqual(job.Spec, tc.want) {
				t.Fatalf("got  %+v\nwant %+v", job.Spec, tc.want)
			}
		})
	}
	defaulting.RayJob(nil)
	defaulting.RayJobSpec(nil)
}
