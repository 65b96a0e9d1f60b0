package admissionjson

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"gomodules.xyz/jsonpatch/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
)

func TestStructPatch(t *testing.T) {
	base := func() *rayv1.RayCluster {
		return &rayv1.RayCluster{
			TypeMeta:   metav1.TypeMeta{Kind: "RayCluster"},
			ObjectMeta: metav1.ObjectMeta{Name: "c", Labels: map[string]string{"a": "1"}},
			Spec: rayv1.RayClusterSpec{
				HeadGroupSpec:    rayv1.HeadGroupSpec{RayStartParams: map[string]string{"num-cpus": "1"}},
				WorkerGroupSpecs: []rayv1.WorkerGroupSpec{{GroupName: "w", Replicas: ptr.To[int32](1)}},
			},
		}
	}
	for _, tt := range []struct {
		name    string
		change  func(*rayv1.RayCluster)
		want    []jsonpatch.Operation
		wantErr error
	}{
		{"nothing changed", func(*rayv1.RayCluster) {}, nil, nil},
		{"an absent pointer is added whole", func(c *rayv1.RayCluster) { c.Spec.Suspend = ptr.To(false) },
			[]jsonpatch.Operation{{Operation: "replace", Path: "/spec/suspend", Value: ptr.To(false)}}, nil},
		{"a nested scalar in a list is replaced alone", func(c *rayv1.RayCluster) { c.Spec.WorkerGroupSpecs[0].MinReplicas = ptr.To[int32](0) },
			[]jsonpatch.Operation{{Operation: "replace", Path: "/spec/workerGroupSpecs/0/minReplicas", Value: ptr.To[int32](0)}}, nil},
		{"a changed pointer value is replaced", func(c *rayv1.RayCluster) { *c.Spec.WorkerGroupSpecs[0].Replicas = 2 },
			[]jsonpatch.Operation{{Operation: "replace", Path: "/spec/workerGroupSpecs/0/replicas", Value: int32(2)}}, nil},
		{"a map key is added with an escaped pointer; inline metadata has no level of its own", func(c *rayv1.RayCluster) { c.Labels["ray.io/x"] = "y" },
			[]jsonpatch.Operation{{Operation: "replace", Path: "/metadata/labels/ray.io~1x", Value: "y"}}, nil},
		{"a changed map value is replaced alone", func(c *rayv1.RayCluster) { c.Labels["a"] = "2" },
			[]jsonpatch.Operation{{Operation: "replace", Path: "/metadata/labels/a", Value: "2"}}, nil},
		{"an absent map is added whole", func(c *rayv1.RayCluster) { c.Spec.HeadGroupSpec.Resources = map[string]string{"cpu": "1"} },
			[]jsonpatch.Operation{{Operation: "replace", Path: "/spec/headGroupSpec/resources", Value: map[string]string{"cpu": "1"}}}, nil},
		{"a type with its own marshaller is compared whole", func(c *rayv1.RayCluster) { c.CreationTimestamp = metav1.Unix(1, 0) },
			[]jsonpatch.Operation{{Operation: "replace", Path: "/metadata/creationTimestamp", Value: metav1.Unix(1, 0)}}, nil},
		{"a list that grew is replaced whole", func(c *rayv1.RayCluster) {
			c.Spec.WorkerGroupSpecs = append(c.Spec.WorkerGroupSpecs, rayv1.WorkerGroupSpec{GroupName: "v"})
		}, nil, nil},
		{"a value that became absent needs a remove", func(c *rayv1.RayCluster) { c.Labels = nil }, nil, errNeedsRemove},
		{"a removed key needs the whole map", func(c *rayv1.RayCluster) { c.Spec.HeadGroupSpec.RayStartParams = map[string]string{"x": "1"} },
			[]jsonpatch.Operation{{Operation: "replace", Path: "/spec/headGroupSpec/rayStartParams", Value: map[string]string{"x": "1"}}}, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			a, b := base(), base()
			tt.change(b)
			got, err := structPatch(a, b)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			if tt.name == "a list that grew is replaced whole" {
				if len(got) != 1 || got[0].Path != "/spec/workerGroupSpecs" {
					t.Errorf("got %v, want one replace of /spec/workerGroupSpecs", got)
				}
				return
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("patch (-want +got):\n%s", diff)
			}
		})
	}
}
