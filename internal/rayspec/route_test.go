package rayspec

import (
	"maps"
	"testing"

	"k8s.io/utils/ptr"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
)

func TestRouteWeights(t *testing.T) {
	ref := func(name string, w *int32) gwv1.HTTPBackendRef {
		return gwv1.HTTPBackendRef{BackendRef: gwv1.BackendRef{BackendObjectReference: gwv1.BackendObjectReference{Name: gwv1.ObjectName(name)}, Weight: w}}
	}
	cases := []struct {
		name  string
		rules [][]gwv1.HTTPBackendRef
		want  map[string]int32
	}{
		{"no rules", nil, map[string]int32{}},
		{"a split", [][]gwv1.HTTPBackendRef{{ref("svc-aaaaa-serve-svc", ptr.To[int32](85)), ref("svc-bbbbb-serve-svc", ptr.To[int32](15))}},
			map[string]int32{"svc-aaaaa": 85, "svc-bbbbb": 15}},
		{"no weight counts 1", [][]gwv1.HTTPBackendRef{{ref("a-serve-svc", nil)}}, map[string]int32{"a": 1}},
		{"refs to one cluster add up across rules", [][]gwv1.HTTPBackendRef{{ref("a-serve-svc", ptr.To[int32](30))}, {ref("a-serve-svc", ptr.To[int32](20))}},
			map[string]int32{"a": 50}},
		{"a backend that is not a cluster's serve Service keeps its name", [][]gwv1.HTTPBackendRef{{ref("other", ptr.To[int32](0))}},
			map[string]int32{"other": 0}},
	}
	for _, tc := range cases {
		rt := &gwv1.HTTPRoute{}
		for _, refs := range tc.rules {
			rt.Spec.Rules = append(rt.Spec.Rules, gwv1.HTTPRouteRule{BackendRefs: refs})
		}
		if got := RouteWeights(rt); !maps.Equal(got, tc.want) {
			t.Errorf("%s: got %v, want %v", tc.name, got, tc.want)
		}
	}
}
