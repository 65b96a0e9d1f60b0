package rayspec

import (
	"strings"

	"k8s.io/utils/ptr"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// RouteWeights reads an HTTPRoute's weight per RayCluster, naming each backend by the
// cluster its serve Service belongs to (ClusterServeServiceName in reverse). A backendRef
// without a weight counts 1, as the Gateway API defines; refs to the same cluster add up.
func RouteWeights(rt *gwv1.HTTPRoute) map[string]int32 {
	out := map[string]int32{}
	suffix := ClusterServeServiceName("")
	for _, r := range rt.Spec.Rules {
		for _, b := range r.BackendRefs {
			out[strings.TrimSuffix(string(b.Name), suffix)] += ptr.Deref(b.Weight, 1)
		}
	}
	return out
}
