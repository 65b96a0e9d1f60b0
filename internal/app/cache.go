package app

import (
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/cacheneeds"
)

// cacheOptions keep the informer cache to what the controllers declare they read
// (internal/cacheneeds; each controller's CacheNeeds): most of the operator's memory is
// cached objects.
//   - managedFields are stripped from every object: no controller reads them, and updates
//     that omit them leave the server's copy alone.
//   - a kind declared with a label scope is cached only with that label: pods labelled
//     ray.io/cluster; Services, ServiceAccounts, Roles, RoleBindings, Ingresses,
//     NetworkPolicies, RayJob submitter Jobs, Gateway API routes, cert-manager objects and PodGroups only when
//     raygate labelled them (app.kubernetes.io/created-by: kuberay-operator, KubeRay's label,
//     on everything raygate creates), so other tenants' objects, however many, cost nothing.
//   - a cached pod keeps its metadata and the fields some controller declares
//     (cacheneeds.SlimPod), and shares its repeated strings (label keys and values,
//     namespace, owner and container names) with the other cached pods (stringTable).
//   - RayClusters, RayServices and RayJobs share each distinct pod template among the cached
//     objects (templateInterner): a fleet from one chart repeats the same templates.
//   - kinds no controller declares (ConfigMaps, Secrets ...) are not configured: the
//     controllers read them from the API server by name, only when needed.
func cacheOptions(o Options, needs cacheneeds.Needs) cache.Options {
	templates := newTemplateInterner()
	opts := cache.Options{
		SyncPeriod:       &o.SyncPeriod,
		DefaultTransform: cache.TransformStripManagedFields(),
		ByObject:         map[client.Object]cache.ByObject{},
	}
	for _, k := range needs.Kinds {
		by := cache.ByObject{Label: k.Scope.Selector()}
		switch k.Object.(type) {
		case *corev1.Pod:
			by.Transform = slimSharedPod(needs.Pods, newStringTable(maxSharedStrings))
		case *rayv1.RayCluster, *rayv1.RayService, *rayv1.RayJob:
			by.Transform = templates.transform
		}
		if by.Label != nil || by.Transform != nil {
			opts.ByObject[k.Object] = by
		}
	}
	if len(o.WatchNamespaces) > 0 {
		opts.DefaultNamespaces = map[string]cache.Config{}
		for _, ns := range o.WatchNamespaces {
			opts.DefaultNamespaces[ns] = cache.Config{}
		}
	}
	return opts
}
