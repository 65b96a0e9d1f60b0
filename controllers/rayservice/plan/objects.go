package plan

import (
	"maps"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/raypod"
	"github.com/raygate/raygate/internal/rayspec"
)

// ownerRef makes the RayService the controller of an object.
func ownerRef(svc *rayv1.RayService) metav1.OwnerReference {
	return *metav1.NewControllerRef(svc, rayv1.GroupVersion.WithKind(rayv1.RayServiceKind))
}

// ownedMeta is the metadata of an object the RayService owns: its name, the RayService's
// namespace, labels and controller reference.
func ownedMeta(svc *rayv1.RayService, name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name, Namespace: svc.Namespace, Labels: serviceLabels(svc), OwnerReferences: []metav1.OwnerReference{ownerRef(svc)}}
}

// serviceLabels mark objects created for a RayService (KubeRay's keys). The created-by label
// is what raygate's cache selects Services, Gateways and HTTPRoutes on.
func serviceLabels(svc *rayv1.RayService) map[string]string {
	return map[string]string{
		rayv1.OriginatedFromCRNameLabelKey: svc.Name,
		rayv1.OriginatedFromCRDLabelKey:    RayServiceKind,
		rayv1.KubernetesCreatedByLabelKey:  rayv1.ComponentName,
	}
}

// stampAnnotations record which spec a cluster was built from, for the new-cluster decision:
// raygate's hash under its own key, KubeRay's under KubeRay's, so that KubeRay run on the same
// objects sees the cluster as current.
func stampAnnotations(g goal, version string) map[string]string {
	return map[string]string{
		rayv1.SpecHashKey: g.Hash,
		rayv1.HashWithoutReplicasAndWorkersToDeleteKey: g.KubeRayHash,
		rayv1.NumWorkerGroupsKey:                       strconv.Itoa(len(g.Spec.WorkerGroupSpecs)),
		rayv1.KubeRayVersionKey:                        version,
	}
}

// propagated is what a new cluster gets of the RayService's labels or annotations, as
// KubeRay copies them (queue labels, ray.io/overwrite-container-cmd, tools' annotations),
// minus what would be wrong on a RayCluster: raygate's own bookkeeping (raygate.ray.io/…)
// and kubectl's copy of the whole RayService. raygate's keys are set over them.
func propagated(m map[string]string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		if strings.HasPrefix(k, rayv1.RaygateKeyPrefix) || k == corev1.LastAppliedConfigAnnotation {
			continue
		}
		out[k] = v
	}
	return out
}

// newRayCluster builds a RayService's cluster. Labels and annotations are copied when the
// cluster is created, as in KubeRay: changing them on the RayService later starts no upgrade
// and does not reach the running cluster.
func newRayCluster(svc *rayv1.RayService, name string, g goal, version string, incrementalUpgrade bool) *rayv1.RayCluster {
	return &rayv1.RayCluster{
		TypeMeta: metav1.TypeMeta{APIVersion: rayv1.GroupVersion.String(), Kind: rayv1.RayClusterKind},
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: svc.Namespace,
			Labels:          merge(propagated(svc.Labels), serviceLabels(svc)),
			Annotations:     merge(propagated(svc.Annotations), stampAnnotations(g, version)),
			OwnerReferences: []metav1.OwnerReference{ownerRef(svc)},
		},
		Spec: pendingClusterSpec(g, incrementalUpgrade),
	}
}

// headService is the RayService-level head Service `<service>-head-svc`: the serving
// cluster's head Service (raypod.HeadService: its selector, ports, type, annotations and
// headGroupSpec.headService) placed under the RayService, as KubeRay builds it.
func headService(svc *rayv1.RayService, cluster *rayv1.RayCluster) *corev1.Service {
	return raypod.PlacedHeadService(cluster, raypod.Placement{
		Name:   rayspec.ServiceHeadServiceName(svc.Name),
		Labels: merge(serviceLabels(svc), map[string]string{rayv1.NodeTypeLabelKey: string(rayv1.HeadNode)}),
		Owner:  ownerRef(svc),
	})
}

// serveSelector selects a cluster's pods that serve traffic (workers, and the head unless
// excluded, once raygate labelled it ray.io/serve=true).
func serveSelector(cluster string) map[string]string {
	return map[string]string{rayv1.ClusterLabelKey: cluster, rayv1.ServeLabelKey: "true"}
}

// ServeServiceName is `<service>-serve-svc`, or spec.serveService's name when given.
func ServeServiceName(svc *rayv1.RayService) string {
	if svc.Spec.ServeService != nil && svc.Spec.ServeService.Name != "" {
		return svc.Spec.ServeService.Name
	}
	return rayspec.ServeServiceName(svc.Name)
}

// serveService is the RayService's serve Service, pointed at the serving cluster. A user
// spec.serveService keeps its labels, annotations, type and its "serve" port; selector and
// namespace are raygate's (KubeRay's rules).
func serveService(svc *rayv1.RayService, cluster *rayv1.RayCluster) *corev1.Service {
	return raypod.ServeService(cluster, raypod.ServeOptions{
		Name:     ServeServiceName(svc),
		Labels:   merge(serviceLabels(svc), map[string]string{rayv1.ServeLabelKey: svc.Name + "-serve"}),
		Selector: serveSelector(cluster.Name),
		Override: svc.Spec.ServeService,
		Owner:    ownerRef(svc),
	})
}

// clusterServeService is `<cluster>-serve-svc`, an HTTPRoute backend during incremental
// upgrades. The RayCluster owns it, so it goes away with the cluster.
func clusterServeService(svc *rayv1.RayService, cluster *rayv1.RayCluster) *corev1.Service {
	return raypod.ServeService(cluster, raypod.ServeOptions{
		Name:     rayspec.ClusterServeServiceName(cluster.Name),
		Labels:   merge(serviceLabels(svc), map[string]string{rayv1.ClusterLabelKey: cluster.Name, rayv1.ServeLabelKey: cluster.Name + "-serve"}),
		Selector: serveSelector(cluster.Name),
		Type:     corev1.ServiceTypeClusterIP,
		Owner:    *metav1.NewControllerRef(cluster, rayv1.GroupVersion.WithKind(rayv1.RayClusterKind)),
	})
}

// gateway is `<service>-gateway`: one HTTP listener on port 80 of the given class.
func gateway(svc *rayv1.RayService, className string) *gwv1.Gateway {
	return &gwv1.Gateway{
		ObjectMeta: ownedMeta(svc, rayspec.GatewayName(svc.Name)),
		Spec: gwv1.GatewaySpec{
			GatewayClassName: gwv1.ObjectName(className),
			Listeners: []gwv1.Listener{{
				Name: gatewayListenerName, Protocol: gwv1.HTTPProtocolType, Port: gatewayListenerPort,
			}},
		},
	}
}

// backend is one weighted route backend: a cluster's serve Service.
type backend struct {
	Cluster string
	Port    int32
	Weight  int32
}

// ref is the backend as a route refers to it, with the fields the API server defaults set.
func (b backend) ref() gwv1.BackendRef {
	return gwv1.BackendRef{
		BackendObjectReference: gwv1.BackendObjectReference{
			Group: ptr.To(gwv1.Group("")), Kind: ptr.To(gwv1.Kind("Service")),
			Name: gwv1.ObjectName(rayspec.ClusterServeServiceName(b.Cluster)),
			Port: ptr.To(gwv1.PortNumber(b.Port)),
		},
		Weight: ptr.To(b.Weight),
	}
}

// refsTo are the backends as one kind of route refers to them (wrap makes its backendRef).
func refsTo[R any](backends []backend, wrap func(gwv1.BackendRef) R) []R {
	refs := make([]R, 0, len(backends))
	for _, b := range backends {
		refs = append(refs, wrap(b.ref()))
	}
	return refs
}

// httpRoute is `<service>-httproute`: the Gateway as parent, one rule for PathPrefix "/",
// and a weighted backendRef per cluster. Fields the API server defaults are set
// explicitly, so a semantic comparison with the stored object is exact.
func httpRoute(svc *rayv1.RayService, backends []backend) *gwv1.HTTPRoute {
	refs := refsTo(backends, func(r gwv1.BackendRef) gwv1.HTTPBackendRef { return gwv1.HTTPBackendRef{BackendRef: r} })
	return &gwv1.HTTPRoute{
		ObjectMeta: ownedMeta(svc, rayspec.HTTPRouteName(svc.Name)),
		Spec: gwv1.HTTPRouteSpec{
			CommonRouteSpec: gwv1.CommonRouteSpec{ParentRefs: []gwv1.ParentReference{{
				Group: ptr.To(gwv1.Group(gwv1.GroupName)), Kind: ptr.To(gwv1.Kind("Gateway")),
				Name: gwv1.ObjectName(rayspec.GatewayName(svc.Name)),
			}}},
			Rules: []gwv1.HTTPRouteRule{{
				Matches: []gwv1.HTTPRouteMatch{{Path: &gwv1.HTTPPathMatch{
					Type: ptr.To(gwv1.PathMatchPathPrefix), Value: ptr.To("/"),
				}}},
				BackendRefs: refs,
			}},
		},
	}
}

func merge(ms ...map[string]string) map[string]string {
	out := map[string]string{}
	for _, m := range ms {
		maps.Copy(out, m)
	}
	return out
}
