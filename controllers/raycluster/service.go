package raycluster

import (
	"maps"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// isHeadless reports whether a Service has no virtual IP.
func isHeadless(s *corev1.Service) bool { return s.Spec.ClusterIP == corev1.ClusterIPNone }

// mergeService returns one of the cluster's existing Services (head, headless worker, serve)
// with the desired fields applied, keeping what
// the API server defaulted or allocated (cluster IPs, node ports, session affinity, ...), or
// nil when nothing differs. recreate is true when the change cannot be an update (a Service
// cannot switch between headless and a cluster IP).
func mergeService(existing, desired *corev1.Service) (updated *corev1.Service, recreate bool) {
	if desired.Spec.ClusterIP != "" && isHeadless(desired) != isHeadless(existing) {
		return nil, true
	}
	ports := mergePorts(existing.Spec.Ports, desired.Spec.Ports)
	if applied(existing, desired, ports) {
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

// applied says whether existing already has everything mergeService sets (the desired
// labels and annotations among its own, the selector, type, publishNotReadyAddresses and
// the merged ports), as comparing a merged copy with it would find.
func applied(existing, desired *corev1.Service, ports []corev1.ServicePort) bool {
	return hasEntries(existing.Labels, desired.Labels) && hasEntries(existing.Annotations, desired.Annotations) &&
		equality.Semantic.DeepEqual(existing.Spec.Selector, desired.Spec.Selector) &&
		existing.Spec.Type == desired.Spec.Type &&
		existing.Spec.PublishNotReadyAddresses == desired.Spec.PublishNotReadyAddresses &&
		equality.Semantic.DeepEqual(existing.Spec.Ports, ports)
}

// hasEntries says whether m holds every entry of sub.
func hasEntries(m, sub map[string]string) bool {
	for k, v := range sub {
		if got, ok := m[k]; !ok || got != v {
			return false
		}
	}
	return true
}

// mergePorts takes the desired ports, keeping allocated node ports and defaulted fields of
// ports that already exist under the same name.
func mergePorts(existing, desired []corev1.ServicePort) []corev1.ServicePort {
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
			if p.TargetPort.IntValue() == 0 && p.TargetPort.StrVal == "" {
				p.TargetPort = e.TargetPort
			}
			if p.AppProtocol == nil {
				p.AppProtocol = e.AppProtocol
			}
		}
		if p.Protocol == "" {
			p.Protocol = corev1.ProtocolTCP
		}
		if p.TargetPort.IntValue() == 0 && p.TargetPort.StrVal == "" {
			p.TargetPort = intstr.FromInt32(p.Port)
		}
		out = append(out, p)
	}
	return out
}
