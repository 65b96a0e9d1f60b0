package raypod

import (
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/owned/ownerref"
	"github.com/raygate/raygate/internal/rayspec"
)

// A cluster's Services and a RayService's are built here, once: a RayService's head Service
// is its serving cluster's head Service placed under the RayService (as KubeRay builds it),
// and every serve Service, a standalone cluster's or a RayService's, comes from ServeService.

// headServiceSelector selects the head pod (KubeRay's selector, so KubeRay tooling agrees).
func headServiceSelector(cluster string) map[string]string {
	return map[string]string{
		rayv1.ClusterLabelKey:                   cluster,
		rayv1.NodeTypeLabelKey:                  string(rayv1.HeadNode),
		rayv1.IdentifierLabelKey:                rayspec.HeadIdentifier(cluster),
		rayv1.KubernetesApplicationNameLabelKey: rayv1.ApplicationName,
		rayv1.KubernetesCreatedByLabelKey:       rayv1.ComponentName,
	}
}

// Placement puts a Service built from a cluster under another owner: its name, the labels
// set over the user's (instead of the cluster's), and its controller.
type Placement struct {
	Name   string
	Labels map[string]string
	Owner  metav1.OwnerReference
}

// HeadService is the head Service of a (defaulted) cluster. Without overrides it is
// headless (a cluster has one head pod, so a virtual IP adds nothing) and publishes the head
// before it is ready, so workers can connect while the head's probes warm up.
// headGroupSpec.headService overrides anything but the selector; serviceType sets the type;
// headServiceAnnotations win over the override's annotations.
func HeadService(rc *rayv1.RayCluster) *corev1.Service {
	return headService(rc, Placement{
		Name: HeadServiceName(rc), Labels: headServiceSelector(rc.Name),
		Owner: *metav1.NewControllerRef(rc, rayv1.GroupVersion.WithKind(rayv1.RayClusterKind)),
	})
}

// PlacedHeadService is the cluster's head Service placed under another owner: a RayService's
// `<service>-head-svc`, which selects its serving cluster's head pod.
func PlacedHeadService(rc *rayv1.RayCluster, at Placement) *corev1.Service {
	return headService(rc, at)
}

func headService(rc *rayv1.RayCluster, at Placement) *corev1.Service {
	head := rc.Spec.HeadGroupSpec
	svc := &corev1.Service{}
	if head.HeadService != nil {
		svc.ObjectMeta = *head.HeadService.ObjectMeta.DeepCopy()
		svc.Spec = *head.HeadService.Spec.DeepCopy()
	}
	svc.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "Service"}
	svc.Name = at.Name
	svc.Namespace = rc.Namespace
	svc.GenerateName, svc.ResourceVersion, svc.UID = "", "", ""
	svc.OwnerReferences = []metav1.OwnerReference{at.Owner}
	if svc.Labels == nil {
		svc.Labels = map[string]string{}
	}
	maps.Copy(svc.Labels, at.Labels)
	if len(rc.Spec.HeadServiceAnnotations) > 0 {
		if svc.Annotations == nil {
			svc.Annotations = map[string]string{}
		}
		maps.Copy(svc.Annotations, rc.Spec.HeadServiceAnnotations)
	}
	svc.Spec.Selector = headServiceSelector(rc.Name)
	svc.Spec.Type = serviceType(svc.Spec.Type, head.ServiceType)
	svc.Spec.Ports = withGeneratedPorts(svc.Spec.Ports, headServicePorts(rc))
	if head.HeadService == nil && svc.Spec.Type == corev1.ServiceTypeClusterIP {
		svc.Spec.ClusterIP = corev1.ClusterIPNone
		svc.Spec.PublishNotReadyAddresses = true
	}
	return svc
}

// serviceType is the first type set, or ClusterIP.
func serviceType(types ...corev1.ServiceType) corev1.ServiceType {
	for _, t := range types {
		if t != "" {
			return t
		}
	}
	return corev1.ServiceTypeClusterIP
}

// HeadlessWorkerService is `<cluster>-headless`, KubeRay's headless Service over all worker
// pods of a cluster with a multi-host worker group: the hosts of a replica find each other
// through it. It publishes pods before they are ready, since the hosts must talk to each other
// to become ready. It has no ports (DNS only).
func HeadlessWorkerService(rc *rayv1.RayCluster) *corev1.Service {
	return &corev1.Service{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: metav1.ObjectMeta{
			Name:      rayspec.HeadlessWorkerServiceName(rc.Name),
			Namespace: rc.Namespace,
			Labels: map[string]string{
				rayv1.HeadlessWorkerServiceLabelKey: rc.Name,
				rayv1.KubernetesCreatedByLabelKey:   rayv1.ComponentName,
			},
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(rc, rayv1.GroupVersion.WithKind(rayv1.RayClusterKind))},
		},
		Spec: corev1.ServiceSpec{
			Type:                     corev1.ServiceTypeClusterIP,
			ClusterIP:                corev1.ClusterIPNone,
			Selector:                 map[string]string{rayv1.ClusterLabelKey: rc.Name, rayv1.NodeTypeLabelKey: string(rayv1.WorkerNode)},
			PublishNotReadyAddresses: true,
		},
	}
}

// NeedsHeadlessWorkerService reports whether a worker group spans several hosts.
func NeedsHeadlessWorkerService(spec *rayv1.RayClusterSpec) bool {
	return slices.ContainsFunc(spec.WorkerGroupSpecs, func(g rayv1.WorkerGroupSpec) bool { return g.NumOfHosts > 1 })
}

// WantsServeService reports whether a standalone cluster asks for its own serve Service
// (annotation ray.io/enable-serve-service: "true", exactly, as KubeRay reads it).
func WantsServeService(rc *rayv1.RayCluster) bool {
	return rc.Annotations[rayv1.EnableServeServiceKey] == "true"
}

// ClusterServeService is `<cluster>-serve-svc` of a standalone cluster that asks for it, with
// KubeRay's labels: every pod of the cluster on the head's serve ports (Serve runs a proxy on
// each node; there is no RayService to mark which pods serve), of the head Service's type.
func ClusterServeService(rc *rayv1.RayCluster) *corev1.Service {
	return ServeService(rc, ServeOptions{
		Name: rayspec.ClusterServeServiceName(rc.Name),
		Labels: map[string]string{
			rayv1.OriginatedFromCRNameLabelKey: rc.Name,
			rayv1.OriginatedFromCRDLabelKey:    rayv1.RayClusterKind,
			rayv1.ServeLabelKey:                rc.Name + "-serve",
			rayv1.KubernetesCreatedByLabelKey:  rayv1.ComponentName,
		},
		Selector: map[string]string{rayv1.ClusterLabelKey: rc.Name},
		Owner:    *metav1.NewControllerRef(rc, rayv1.GroupVersion.WithKind(rayv1.RayClusterKind)),
	})
}

// ServeOptions say which serve Service ServeService builds over a cluster.
type ServeOptions struct {
	Name     string
	Labels   map[string]string
	Selector map[string]string
	// Type is the Service's type unless Override sets one ("": the cluster's
	// headGroupSpec.serviceType, else ClusterIP).
	Type corev1.ServiceType
	// Override is a user's Service (a RayService's spec.serveService; nil: none): its labels,
	// annotations and spec are kept but for the selector and the ports, and its port named
	// "serve" gives the serve port's number, unless the head's Ray container names one.
	Override *corev1.Service
	Owner    metav1.OwnerReference
}

// ServeService is a Service over a cluster's Serve proxies on the head's serve ports
// (rayspec.ServePorts).
func ServeService(rc *rayv1.RayCluster, o ServeOptions) *corev1.Service {
	s := &corev1.Service{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Service"}}
	head := rayspec.HeadRayContainer(&rc.Spec)
	ports := rayspec.ServePorts(head)
	if u := o.Override; u != nil {
		s.Labels, s.Annotations = maps.Clone(u.Labels), maps.Clone(u.Annotations)
		s.Spec = *u.Spec.DeepCopy()
		if p, ok := overrideServePort(u, head); ok {
			ports = rayspec.WithServePort(ports, p)
		}
	}
	s.Name, s.Namespace = o.Name, rc.Namespace
	if s.Labels == nil {
		s.Labels = map[string]string{}
	}
	maps.Copy(s.Labels, o.Labels)
	s.Spec.Type = serviceType(s.Spec.Type, o.Type, rc.Spec.HeadGroupSpec.ServiceType)
	s.Spec.Ports = ports
	s.Spec.Selector = maps.Clone(o.Selector)
	s.OwnerReferences = []metav1.OwnerReference{o.Owner}
	return s
}

// overrideServePort is the serve port a user's Service gives (ok false: none, or the head's
// Ray container names its own).
func overrideServePort(u *corev1.Service, head *corev1.Container) (corev1.ServicePort, bool) {
	if head != nil && slices.ContainsFunc(head.Ports, func(p corev1.ContainerPort) bool { return p.Name == rayspec.ServePortName }) {
		return corev1.ServicePort{}, false
	}
	for _, p := range u.Spec.Ports {
		if p.Name == rayspec.ServePortName {
			port := corev1.ServicePort{Name: rayspec.ServePortName, Port: p.Port, TargetPort: p.TargetPort, NodePort: p.NodePort, Protocol: corev1.ProtocolTCP}
			if unsetTarget(port.TargetPort) {
				port.TargetPort = intstr.FromInt32(p.Port)
			}
			return port, true
		}
	}
	return corev1.ServicePort{}, false
}

// IsHeadless reports whether a Service has no virtual IP.
func IsHeadless(s *corev1.Service) bool { return s.Spec.ClusterIP == corev1.ClusterIPNone }

// MergeService returns a stored Service with the desired fields applied (labels and
// annotations among the existing ones, selector, type, publishNotReadyAddresses, ports),
// keeping what the API server defaulted or allocated (cluster IPs, node ports, session
// affinity, ...), or nil when nothing differs. recreate is true when the change cannot be an
// update: a Service cannot switch between headless and a cluster IP (a desired Service
// without a clusterIP keeps the stored one's).
func MergeService(existing, desired *corev1.Service) (updated *corev1.Service, recreate bool) {
	if desired.Spec.ClusterIP != "" && IsHeadless(desired) != IsHeadless(existing) {
		return nil, true
	}
	ports := MergePorts(existing.Spec.Ports, desired.Spec.Ports)
	if serviceApplied(existing, desired, ports) {
		return nil, false // every pass asks; most find nothing to change, without a copy
	}
	u := existing.DeepCopy()
	if u.Labels == nil {
		u.Labels = map[string]string{}
	}
	maps.Copy(u.Labels, desired.Labels)
	if len(desired.Annotations) > 0 {
		if u.Annotations == nil {
			u.Annotations = map[string]string{}
		}
		maps.Copy(u.Annotations, desired.Annotations)
	}
	u.Spec.Selector = desired.Spec.Selector
	u.Spec.Type = desired.Spec.Type
	u.Spec.PublishNotReadyAddresses = desired.Spec.PublishNotReadyAddresses
	u.Spec.Ports = ports
	if equality.Semantic.DeepEqual(existing, u) {
		return nil, false
	}
	return u, false
}

// serviceApplied says whether existing already has everything MergeService sets, as
// comparing a merged copy with it would find.
func serviceApplied(existing, desired *corev1.Service, ports []corev1.ServicePort) bool {
	return ownerref.HasEntries(existing.Labels, desired.Labels) && ownerref.HasEntries(existing.Annotations, desired.Annotations) &&
		equality.Semantic.DeepEqual(existing.Spec.Selector, desired.Spec.Selector) &&
		existing.Spec.Type == desired.Spec.Type &&
		existing.Spec.PublishNotReadyAddresses == desired.Spec.PublishNotReadyAddresses &&
		equality.Semantic.DeepEqual(existing.Spec.Ports, ports)
}
