package webhooks

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
)

func TestTypeErrorsNameTheFieldAndItsType(t *testing.T) {
	tests := []struct {
		name string
		json string
		want []string
	}{
		{"Ray's docs: a number in rayStartParams",
			`{"spec":{"headGroupSpec":{"rayStartParams":{"num-cpus":0,"dashboard-host":"0.0.0.0"}}}}`,
			[]string{`spec.headGroupSpec.rayStartParams[num-cpus]: Invalid value: "integer": must be of type string`}},
		{"every one at once, in a worker group",
			`{"spec":{"workerGroupSpecs":[{"groupName":"a"},{"groupName":7,"rayStartParams":{"num-gpus":1.5,"block":true}}]}}`,
			[]string{
				`spec.workerGroupSpecs[1].groupName: Invalid value: "integer": must be of type string`,
				`spec.workerGroupSpecs[1].rayStartParams[block]: Invalid value: "boolean": must be of type string`,
				`spec.workerGroupSpecs[1].rayStartParams[num-gpus]: Invalid value: "number": must be of type string`,
			}},
		{"an object where a list is wanted",
			`{"spec":{"workerGroupSpecs":{"groupName":"a"}}}`,
			[]string{`spec.workerGroupSpecs: Invalid value: "object": must be of type array`}},
		{"a string where an integer is wanted, an integer too large",
			`{"spec":{"workerGroupSpecs":[{"replicas":"3","maxReplicas":3000000000}]}}`,
			[]string{
				`spec.workerGroupSpecs[0].maxReplicas: Invalid value: 3000000000: must be between -2147483648 and 2147483647`,
				`spec.workerGroupSpecs[0].replicas: Invalid value: "string": must be of type integer`,
			}},
		{"a fraction where an integer is wanted",
			`{"spec":{"workerGroupSpecs":[{"replicas":1.5}]}}`,
			[]string{`spec.workerGroupSpecs[0].replicas: Invalid value: "number": must be of type integer`}},
		{"inline metadata and types that decode themselves are read as such",
			`{"kind":"RayCluster","metadata":{"name":"a","labels":{"x":1}},"spec":{"headGroupSpec":{"template":{"spec":{"containers":[{"name":"c","resources":{"limits":{"cpu":2}},"ports":[{"containerPort":"80"}]}]}}}}}`,
			[]string{
				`metadata.labels[x]: Invalid value: "integer": must be of type string`,
				`spec.headGroupSpec.template.spec.containers[0].ports[0].containerPort: Invalid value: "string": must be of type integer`,
			}},
		{"null is the zero value", `{"spec":{"headGroupSpec":null,"workerGroupSpecs":[null]}}`, nil},
		{"not JSON", `{"spec": 7`, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, e := range typeErrors([]byte(tt.json), &rayv1.RayCluster{}) {
				got = append(got, e.Error())
			}
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
		})
	}
}

// Both webhooks answer an object that does not decode with its fields: the mutating one
// answers first, before the API server's schema check.
func TestUndecodableObjectsAreAnsweredWithFields(t *testing.T) {
	body := []byte(`{"apiVersion":"ray.io/v1","kind":"RayService","metadata":{"name":"svc","namespace":"ns"},
		"spec":{"rayClusterConfig":{"headGroupSpec":{"rayStartParams":{"num-cpus":0},"template":{"spec":{"containers":[{"name":"ray-head","image":"rayproject/ray"}]}}}}}}`)
	h := Handlers(Options{})
	req := review(admissionv1.Create, body, nil)
	req.Kind, req.Name = metav1.GroupVersionKind{Group: "ray.io", Version: "v1", Kind: "RayService"}, "svc"
	want := `RayService.ray.io "svc" is invalid: spec.rayClusterConfig.headGroupSpec.rayStartParams[num-cpus]: Invalid value: "integer": must be of type string`
	for _, path := range []string{MutateRayServicePath, ValidateRayServicePath} {
		resp := h[path].Handle(context.Background(), req)
		if resp.Allowed || resp.Result.Code != 422 || resp.Result.Message != want {
			t.Errorf("%s: want %q, got %+v", path, want, resp.Result)
		}
	}
	// What typeErrors cannot place goes through the mutating webhook unchanged, for the API
	// server's schema check.
	req.Object.Raw = []byte(`{"apiVersion":"ray.io/v1","kind":"RayService","metadata":{"name":"svc","creationTimestamp":"yesterday"},"spec":{}}`)
	if resp := h[MutateRayServicePath].Handle(context.Background(), req); !resp.Allowed || len(resp.Patches) > 0 {
		t.Errorf("mutating: want an unplaceable decoding error let through unchanged, got %+v", resp.Result)
	}
}
