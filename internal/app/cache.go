package app

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/raypod"
	"github.com/raygate/raygate/internal/rayspec"
)

// cacheOptions keep the informer cache to what the controllers read: most of the operator's
// memory is cached objects (a 4,000-pod benchmark had 78% of the live heap in the cache).
//   - managedFields are stripped from every object: no controller reads them, and updates
//     that omit them leave the server's copy alone.
//   - only pods labelled ray.io/cluster are cached (the controllers find pods by that label
//     and nothing else), and of each only what they read: metadata, container names and
//     ports named "serve", restartPolicy, nodeName and the status fields of slimPodStatus (of
//     the conditions only Ready). Pods are only ever patched (never updated) from the cache,
//     so a slim copy can never overwrite a pod's spec or status. Their repeated strings
//     (label keys and values, namespace, owner and container names) are shared among the
//     cached pods (stringTable).
//   - Services, ServiceAccounts, Roles, RoleBindings, Ingresses, NetworkPolicies, Gateways
//     and HTTPRoutes are cached only when raygate labelled them (app.kubernetes.io/created-by: kuberay-operator, KubeRay's
//     label, on everything raygate creates), so other tenants' objects, however many, cost
//     nothing. An object with a name raygate wants that the cache lacks is found when a
//     create meets it, read from the API server, and relabelled if raygate's (made by an
//     older raygate) or reported if not.
//   - RayClusters and RayServices share each distinct pod template among the cached objects
//     (templateInterner): at 1,000 RayClusters from one chart the templates were most of the
//     cached RayClusters' memory.
//   - ConfigMaps (RayService serve config records) and Secrets (Ray auth tokens) are never
//     cached: read from the API server by name, only when needed.
//
// gatewayAPI says whether the Gateway API is served (the cache cannot be told about kinds the
// API server does not have).
func cacheOptions(o Options, gatewayAPI bool) cache.Options {
	created := createdBySelector()
	templates := newTemplateInterner()
	opts := cache.Options{
		SyncPeriod:       &o.SyncPeriod,
		DefaultTransform: cache.TransformStripManagedFields(),
		ByObject: map[client.Object]cache.ByObject{
			&corev1.Pod{}:                 {Label: rayPodSelector(), Transform: slimSharedPod(newStringTable(maxSharedStrings))},
			&rayv1.RayCluster{}:           {Transform: templates.transform},
			&rayv1.RayService{}:           {Transform: templates.transform},
			&corev1.Service{}:             {Label: created},
			&corev1.ServiceAccount{}:      {Label: created},
			&rbacv1.Role{}:                {Label: created},
			&rbacv1.RoleBinding{}:         {Label: created},
			&networkingv1.NetworkPolicy{}: {Label: created},
			&networkingv1.Ingress{}:       {Label: created},
		},
	}
	if gatewayAPI {
		opts.ByObject[&gwv1.Gateway{}] = cache.ByObject{Label: created}
		opts.ByObject[&gwv1.HTTPRoute{}] = cache.ByObject{Label: created}
	}
	if gatewayAPI && o.grpcRoutes {
		opts.ByObject[&gwv1.GRPCRoute{}] = cache.ByObject{Label: created}
	}
	if o.certManager {
		// cert-manager Certificates and Issuers of TLS clusters, likewise only raygate's.
		for _, gvk := range []schema.GroupVersionKind{raypod.CertificateGVK, raypod.IssuerGVK} {
			u := &unstructured.Unstructured{}
			u.SetGroupVersionKind(gvk)
			opts.ByObject[u] = cache.ByObject{Label: created}
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

// gatewayAPIServed reports whether the API server serves the Gateway API kinds raygate uses.
func gatewayAPIServed(cfg *rest.Config) (bool, error) {
	return kindsServed(cfg, gwv1.GroupVersion.String(), "Gateway", "HTTPRoute")
}

// certManagerServed reports whether the API server serves cert-manager's Certificate and
// Issuer, which clusters with spec.tlsOptions need.
func certManagerServed(cfg *rest.Config) (bool, error) {
	return kindsServed(cfg, raypod.CertificateGVK.GroupVersion().String(), raypod.CertificateGVK.Kind, raypod.IssuerGVK.Kind)
}

// kindsServed reports whether the API server serves every given kind of a group version.
func kindsServed(cfg *rest.Config, groupVersion string, kinds ...string) (bool, error) {
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return false, err
	}
	list, err := dc.ServerResourcesForGroupVersion(groupVersion)
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("discovering %s: %w", groupVersion, err)
	}
	found := map[string]bool{}
	for _, r := range list.APIResources {
		found[r.Kind] = true
	}
	for _, k := range kinds {
		if !found[k] {
			return false, nil
		}
	}
	return true, nil
}

// createdBySelector selects the objects raygate creates.
func createdBySelector() labels.Selector {
	return labels.SelectorFromSet(labels.Set{rayv1.KubernetesCreatedByLabelKey: rayv1.ComponentName})
}

func rayPodSelector() labels.Selector {
	req, err := labels.NewRequirement(rayv1.ClusterLabelKey, selection.Exists, nil)
	if err != nil {
		panic(err) // a constant, valid label key
	}
	return labels.NewSelector().Add(*req)
}

// slimPod drops what the controllers never read from a cached pod. Of the containers it keeps
// the names and the port named "serve": the RayService controller reads the head's Serve
// port from the pod (controllers/rayservice servePortOf), which without it would always be
// Ray's default.
func slimPod(obj any) (any, error) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return obj, nil
	}
	containers := make([]corev1.Container, len(pod.Spec.Containers))
	for i, c := range pod.Spec.Containers {
		containers[i] = corev1.Container{Name: c.Name}
		for _, p := range c.Ports {
			if p.Name == rayspec.ServePortName {
				containers[i].Ports = []corev1.ContainerPort{p}
				break
			}
		}
	}
	pod.ManagedFields = nil
	pod.Spec = corev1.PodSpec{Containers: containers, RestartPolicy: pod.Spec.RestartPolicy, NodeName: pod.Spec.NodeName}
	pod.Status = slimPodStatus(pod.Status)
	return pod, nil
}

// slimPodStatus keeps of a pod's status what the controllers read: phase, the Ready condition
// (internal/rayspec.RunningAndReady and the head's HeadPodReady; no controller reads another pod
// condition), reason and message, the pod IP, start time, QoS class, and of each container its
// name, readiness, restarts and states. Images, image and container IDs, resources, volume
// mounts, host IPs and init containers' statuses go, and so do the four other conditions a
// kubelet sets (PodScheduled, Initialized, ContainersReady, PodReadyToStartContainers): every
// cached pod kept them for nothing (their cost is in docs/benchmarks.md).
func slimPodStatus(st corev1.PodStatus) corev1.PodStatus {
	containers := make([]corev1.ContainerStatus, len(st.ContainerStatuses))
	for i, c := range st.ContainerStatuses {
		containers[i] = corev1.ContainerStatus{Name: c.Name, Ready: c.Ready, Started: c.Started, RestartCount: c.RestartCount,
			State: c.State, LastTerminationState: c.LastTerminationState}
	}
	return corev1.PodStatus{
		ObservedGeneration: st.ObservedGeneration, Phase: st.Phase, Conditions: readyCondition(st.Conditions),
		Message: st.Message, Reason: st.Reason, PodIP: st.PodIP, StartTime: st.StartTime, QOSClass: st.QOSClass,
		ContainerStatuses: containers,
	}
}

// readyCondition returns a new slice holding only the pod's Ready condition (nil without one).
func readyCondition(conds []corev1.PodCondition) []corev1.PodCondition {
	for _, c := range conds {
		if c.Type == corev1.PodReady {
			return []corev1.PodCondition{c}
		}
	}
	return nil
}
