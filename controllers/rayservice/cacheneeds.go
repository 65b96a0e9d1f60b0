package rayservice

import (
	corev1 "k8s.io/api/core/v1"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/cacheneeds"
)

// PodFields are the fields of cached pods the controller reads:
//   - of each container the port named serve: the head's Serve proxy listens there;
//   - phase and the Ready condition: which pods serve, and whether the head is ready to be
//     asked for its applications;
//   - the pod IP: where the head's dashboard and Serve proxy are;
//   - the containers' restart counts: a restarted Ray forgets the serve config it was given;
//   - hostNetwork: a head in its node's network is never called (its IP is the node's).
const PodFields = cacheneeds.ServePort | cacheneeds.Phase | cacheneeds.ReadyCondition | cacheneeds.PodIP |
	cacheneeds.ContainerRestarts | cacheneeds.HostNetwork

// CacheNeeds is what the controller watches and reads from the manager's cache with cfg:
// the kinds SetupWithManager registers (a test checks they match), which objects of each,
// and PodFields. ConfigMaps (serve config records), Secrets (auth tokens) and UpgradePolicies
// are read from the API server by name, never cached.
func CacheNeeds(cfg Config) cacheneeds.Needs {
	created := cacheneeds.CreatedByRaygate
	kinds := []cacheneeds.Kind{
		{Object: &rayv1.RayService{}, Scope: cacheneeds.Everything},
		{Object: &rayv1.RayCluster{}, Scope: cacheneeds.Everything},
		{Object: &corev1.Service{}, Scope: created},
		{Object: &corev1.Pod{}, Scope: cacheneeds.RayPods},
	}
	if cfg.Capabilities.GatewayAPI {
		kinds = append(kinds, cacheneeds.Kind{Object: &gwv1.Gateway{}, Scope: created}, cacheneeds.Kind{Object: &gwv1.HTTPRoute{}, Scope: created})
		if cfg.Capabilities.GRPCRoute {
			kinds = append(kinds, cacheneeds.Kind{Object: &gwv1.GRPCRoute{}, Scope: created})
		}
	}
	return cacheneeds.Needs{Kinds: kinds, Pods: PodFields}
}
