package raycluster

import (
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/cacheneeds"
	"github.com/raygate/raygate/internal/raypod"
)

// PodFields are the fields of cached pods the controller reads:
//   - the container names: the Ray container's status is found by its name;
//   - restartPolicy: a terminated Ray container under Never means the pod is replaced;
//   - phase and the Ready condition: readiness counts, and HeadPodReady mirrors the head's
//     Ready condition (reason and message too);
//   - the pod IP: status.head.podIP, and the IPs mTLS certificates name;
//   - the start time: mTLS restarts pods started before their certificate names them;
//   - the container states: why the head is not ready, and whether the Ray container ended.
const PodFields = cacheneeds.ContainerNames | cacheneeds.RestartPolicy | cacheneeds.Phase | cacheneeds.ReadyCondition |
	cacheneeds.PodIP | cacheneeds.StartTime | cacheneeds.ContainerStates

// CacheNeeds is what the controller watches and reads from the manager's cache with cfg:
// the kinds SetupWithManager registers (a test checks they match), which objects of each,
// and PodFields. Everything else it reads from the API server (Jobs, Secrets, PVCs, objects
// whose name raygate wants that the cache lacks).
func CacheNeeds(cfg Config) cacheneeds.Needs {
	created := cacheneeds.CreatedByRaygate
	kinds := []cacheneeds.Kind{
		{Object: &rayv1.RayCluster{}, Scope: cacheneeds.Everything},
		{Object: &corev1.Pod{}, Scope: cacheneeds.RayPods},
		{Object: &corev1.Service{}, Scope: created},
		{Object: &corev1.ServiceAccount{}, Scope: created},
		{Object: &rbacv1.Role{}, Scope: created},
		{Object: &rbacv1.RoleBinding{}, Scope: created},
		{Object: &networkingv1.Ingress{}, Scope: created},
		{Object: &networkingv1.NetworkPolicy{}, Scope: created},
	}
	if cfg.Capabilities.CertManager {
		kinds = append(kinds, cacheneeds.Kind{Object: unstructuredOf(raypod.CertificateGVK), Scope: created},
			cacheneeds.Kind{Object: unstructuredOf(raypod.IssuerGVK), Scope: created})
	}
	if cfg.exposure().routesServed {
		kinds = append(kinds, cacheneeds.Kind{Object: unstructuredOf(raypod.RouteGVK), Scope: created})
	}
	if podGroupServed(cfg) {
		kinds = append(kinds, cacheneeds.Kind{Object: unstructuredOf(cfg.Scheduler.PodGroupKind()), Scope: created})
	}
	return cacheneeds.Needs{Kinds: kinds, Pods: PodFields}
}

// podGroupServed: the batch scheduler makes PodGroups and the API server served their kind
// when raygate started.
func podGroupServed(cfg Config) bool {
	if cfg.Scheduler == nil {
		return false
	}
	gvk := cfg.Scheduler.PodGroupKind()
	return !gvk.Empty() && cfg.Capabilities.PodGroup == gvk
}

func unstructuredOf(gvk schema.GroupVersionKind) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	return u
}
