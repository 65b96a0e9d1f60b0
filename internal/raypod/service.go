package raypod

import (
	"cmp"
	"maps"
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/rayspec"
)

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

// headServicePorts are the ports of the head's Ray container (as HeadPod declares them),
// sorted by name so the order never changes between reconciles.
func headServicePorts(rc *rayv1.RayCluster) []corev1.ServicePort {
	head := rc.Spec.HeadGroupSpec
	c := head.Template.Spec.Containers[rayv1.RayContainerIndex].DeepCopy()
	params := startParams(rayv1.HeadNode, head.RayStartParams, head.Resources, head.Labels, *c, "", false)
	addHeadPorts(c, params)
	tcp := "tcp"
	ports := make([]corev1.ServicePort, 0, len(c.Ports))
	for _, p := range c.Ports {
		name := p.Name
		if name == "" {
			name = strconv.Itoa(int(p.ContainerPort)) + "-port"
		}
		proto := p.Protocol
		if proto == "" {
			proto = corev1.ProtocolTCP
		}
		ports = append(ports, corev1.ServicePort{Name: name, Port: p.ContainerPort, Protocol: proto, AppProtocol: &tcp,
			TargetPort: intstr.FromInt32(p.ContainerPort)})
	}
	slices.SortStableFunc(ports, func(a, b corev1.ServicePort) int { return cmp.Compare(a.Name, b.Name) })
	return ports
}

// HeadService is the head Service of a (defaulted) cluster. Without overrides it is
// headless (a cluster has one head pod, so a virtual IP adds nothing) and publishes the head
// before it is ready, so workers can connect while the head's probes warm up.
// headGroupSpec.headService overrides anything but the selector; serviceType sets the type;
// headServiceAnnotations win over the override's annotations.
func HeadService(rc *rayv1.RayCluster) *corev1.Service {
	head := rc.Spec.HeadGroupSpec
	svc := &corev1.Service{}
	if head.HeadService != nil {
		svc.ObjectMeta = *head.HeadService.ObjectMeta.DeepCopy()
		svc.Spec = *head.HeadService.Spec.DeepCopy()
	}
	svc.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "Service"}
	svc.Name = HeadServiceName(rc)
	svc.Namespace = rc.Namespace
	svc.GenerateName, svc.ResourceVersion, svc.UID = "", "", ""
	svc.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(rc, rayv1.GroupVersion.WithKind(rayv1.RayClusterKind))}
	if svc.Labels == nil {
		svc.Labels = map[string]string{}
	}
	maps.Copy(svc.Labels, headServiceSelector(rc.Name))
	if len(rc.Spec.HeadServiceAnnotations) > 0 {
		if svc.Annotations == nil {
			svc.Annotations = map[string]string{}
		}
		maps.Copy(svc.Annotations, rc.Spec.HeadServiceAnnotations)
	}
	svc.Spec.Selector = headServiceSelector(rc.Name)
	if svc.Spec.Type == "" {
		svc.Spec.Type = head.ServiceType
	}
	if svc.Spec.Type == "" {
		svc.Spec.Type = corev1.ServiceTypeClusterIP
	}
	for _, p := range headServicePorts(rc) {
		if !slices.ContainsFunc(svc.Spec.Ports, func(q corev1.ServicePort) bool { return q.Name == p.Name || q.Port == p.Port }) {
			svc.Spec.Ports = append(svc.Spec.Ports, p)
		}
	}
	if head.HeadService == nil && svc.Spec.Type == corev1.ServiceTypeClusterIP {
		svc.Spec.ClusterIP = corev1.ClusterIPNone
		svc.Spec.PublishNotReadyAddresses = true
	}
	return svc
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
	t := rc.Spec.HeadGroupSpec.ServiceType
	if t == "" {
		t = corev1.ServiceTypeClusterIP
	}
	return &corev1.Service{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: metav1.ObjectMeta{
			Name:      rayspec.ClusterServeServiceName(rc.Name),
			Namespace: rc.Namespace,
			Labels: map[string]string{
				rayv1.OriginatedFromCRNameLabelKey: rc.Name,
				rayv1.OriginatedFromCRDLabelKey:    rayv1.RayClusterKind,
				rayv1.ServeLabelKey:                rc.Name + "-serve",
				rayv1.KubernetesCreatedByLabelKey:  rayv1.ComponentName,
			},
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(rc, rayv1.GroupVersion.WithKind(rayv1.RayClusterKind))},
		},
		Spec: corev1.ServiceSpec{
			Type:     t,
			Selector: map[string]string{rayv1.ClusterLabelKey: rc.Name},
			Ports:    rayspec.ServePorts(rayspec.HeadRayContainer(&rc.Spec)),
		},
	}
}
