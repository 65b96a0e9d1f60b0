package raypod

import (
	"cmp"
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
)

// Service ports are merged in two places, each once: when a Service is built, a user's
// ports (headService's) come first and the generated ones fill in (withGeneratedPorts); when
// a built Service is compared with the stored one, what the API server allocated or
// defaulted is kept (MergePorts).

// headServicePorts are the ports of the head's Ray container (as HeadPod declares them),
// sorted by name so the order never changes between reconciles. A head without a container
// (refused at admission) has none.
func headServicePorts(rc *rayv1.RayCluster) []corev1.ServicePort {
	head := rc.Spec.HeadGroupSpec
	if len(head.Template.Spec.Containers) <= rayv1.RayContainerIndex {
		return nil
	}
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

// withGeneratedPorts is the user's ports followed by the generated ones whose name and
// number the user's do not use: a user's port wins (a Service cannot have a name or a number
// twice).
func withGeneratedPorts(user, generated []corev1.ServicePort) []corev1.ServicePort {
	out := user
	for _, p := range generated {
		if !slices.ContainsFunc(out, func(q corev1.ServicePort) bool { return q.Name == p.Name || q.Port == p.Port }) {
			out = append(out, p)
		}
	}
	return out
}

// MergePorts is the desired ports with what the API server allocated or defaulted on the
// stored ports of the same name (node port, protocol, target port, appProtocol), as the API
// server itself keeps node ports by name on an update.
func MergePorts(existing, desired []corev1.ServicePort) []corev1.ServicePort {
	out := make([]corev1.ServicePort, 0, len(desired))
	for _, d := range desired {
		p := *d.DeepCopy()
		for _, e := range existing {
			if e.Name != d.Name {
				continue
			}
			if p.NodePort == 0 {
				p.NodePort = e.NodePort
			}
			if p.Protocol == "" {
				p.Protocol = e.Protocol
			}
			if unsetTarget(p.TargetPort) {
				p.TargetPort = e.TargetPort
			}
			if p.AppProtocol == nil {
				p.AppProtocol = e.AppProtocol
			}
		}
		if p.Protocol == "" {
			p.Protocol = corev1.ProtocolTCP
		}
		if unsetTarget(p.TargetPort) {
			p.TargetPort = intstr.FromInt32(p.Port)
		}
		out = append(out, p)
	}
	return out
}

func unsetTarget(t intstr.IntOrString) bool { return t.IntValue() == 0 && t.StrVal == "" }
