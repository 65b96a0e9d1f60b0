package raycluster

import (
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/rayspec"
)

// spec.networkPolicy, as under KubeRay: one NetworkPolicy for the head (`<cluster>-head`) and
// one per worker group (`<cluster>-workers-<group>`), selecting the pods by their Ray labels.
// The mode says which directions are restricted; a restricted direction allows all traffic
// between the cluster's own pods plus the user's extra rules. Beyond KubeRay, the head's
// policy admits the operator's pods (by namespace and label) on the dashboard port, so
// raygate's own Serve API calls keep working under DenyAll and DenyAllIngress.

// OperatorPodLabelKey and OperatorPodLabelValue select the operator's pods (the Helm chart
// and the kustomize manifests both set it) in the operator's namespace.
const (
	OperatorPodLabelKey   = "app.kubernetes.io/component"
	OperatorPodLabelValue = "operator"
)

// HeadNetworkPolicyName is the name of the head's NetworkPolicy.
func HeadNetworkPolicyName(cluster string) string { return cluster + "-head" }

// WorkerNetworkPolicyName is the name of a worker group's NetworkPolicy.
func WorkerNetworkPolicyName(cluster, group string) string { return cluster + "-workers-" + group }

// desiredNetworkPolicies are the NetworkPolicies the (defaulted) cluster asks for: none
// without spec.networkPolicy. operatorNamespace is where raygate runs ("" when unknown: no
// operator rule, the dashboard calls then need one of the user's rules).
func desiredNetworkPolicies(rc *rayv1.RayCluster, operatorNamespace string) []*networkingv1.NetworkPolicy {
	np := rc.Spec.NetworkPolicy
	if np == nil {
		return nil
	}
	mode := ptr.Deref(np.Mode, rayv1.NetworkPolicyDenyAll)
	out := []*networkingv1.NetworkPolicy{
		buildNetworkPolicy(rc, mode, HeadNetworkPolicyName(rc.Name),
			map[string]string{rayv1.NodeTypeLabelKey: string(rayv1.HeadNode)},
			headOperatorRules(rc, operatorNamespace), np.Head),
	}
	for i := range rc.Spec.WorkerGroupSpecs {
		g := rc.Spec.WorkerGroupSpecs[i].GroupName
		out = append(out, buildNetworkPolicy(rc, mode, WorkerNetworkPolicyName(rc.Name, g),
			map[string]string{rayv1.NodeTypeLabelKey: string(rayv1.WorkerNode), rayv1.NodeGroupLabelKey: g},
			nil, groupRules(np, g)))
	}
	return out
}

// groupRules are a worker group's extra rules: its workerGroups entry, else worker's.
func groupRules(np *rayv1.NetworkPolicyConfig, group string) *rayv1.NetworkPolicyRules {
	for i := range np.WorkerGroups {
		if np.WorkerGroups[i].GroupName == group {
			return &np.WorkerGroups[i].NetworkPolicyRules
		}
	}
	return np.Worker
}

// buildNetworkPolicy builds one policy: selector is added to the cluster label, base are
// extra ingress rules raygate needs, extra the user's.
func buildNetworkPolicy(rc *rayv1.RayCluster, mode rayv1.NetworkPolicyMode, name string, selector map[string]string,
	base []networkingv1.NetworkPolicyIngressRule, extra *rayv1.NetworkPolicyRules) *networkingv1.NetworkPolicy {
	sel := map[string]string{rayv1.ClusterLabelKey: rc.Name}
	for k, v := range selector {
		sel[k] = v
	}
	clusterPeer := []networkingv1.NetworkPolicyPeer{{PodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{rayv1.ClusterLabelKey: rc.Name}}}}
	spec := networkingv1.NetworkPolicySpec{PodSelector: metav1.LabelSelector{MatchLabels: sel}}
	if mode == rayv1.NetworkPolicyDenyAll || mode == rayv1.NetworkPolicyDenyAllIngress {
		spec.PolicyTypes = append(spec.PolicyTypes, networkingv1.PolicyTypeIngress)
		spec.Ingress = append([]networkingv1.NetworkPolicyIngressRule{{From: clusterPeer}}, base...)
		if extra != nil {
			spec.Ingress = append(spec.Ingress, extra.IngressRules...)
		}
	}
	if mode == rayv1.NetworkPolicyDenyAll || mode == rayv1.NetworkPolicyDenyAllEgress {
		spec.PolicyTypes = append(spec.PolicyTypes, networkingv1.PolicyTypeEgress)
		spec.Egress = []networkingv1.NetworkPolicyEgressRule{{To: clusterPeer}}
		if extra != nil {
			spec.Egress = append(spec.Egress, extra.EgressRules...)
		}
	}
	spec = *spec.DeepCopy() // the user's rules are not shared with the cluster object
	defaultProtocols(&spec)
	return &networkingv1.NetworkPolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: "networking.k8s.io/v1", Kind: "NetworkPolicy"},
		ObjectMeta: ownedMeta(rc, name),
		Spec:       spec,
	}
}

// headOperatorRules admit raygate's pods to the head's dashboard port: the RayService
// controller calls the Serve API there. Only pods in the operator's namespace match (by its
// immutable kubernetes.io/metadata.name label), so a tenant cannot label its own pods in.
func headOperatorRules(rc *rayv1.RayCluster, operatorNamespace string) []networkingv1.NetworkPolicyIngressRule {
	if operatorNamespace == "" {
		return nil
	}
	port := intstr.FromInt32(rayspec.PortParam(rc.Spec.HeadGroupSpec.RayStartParams, "dashboard-port", rayspec.DefaultDashboardPort))
	return []networkingv1.NetworkPolicyIngressRule{{
		From: []networkingv1.NetworkPolicyPeer{{
			NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: operatorNamespace}},
			PodSelector:       &metav1.LabelSelector{MatchLabels: map[string]string{OperatorPodLabelKey: OperatorPodLabelValue}},
		}},
		Ports: []networkingv1.NetworkPolicyPort{{Protocol: ptr.To(corev1.ProtocolTCP), Port: &port}},
	}}
}

// defaultProtocols sets what the API server defaults (a port's protocol is TCP), so a
// stored policy compares equal to the desired one and steady state writes nothing.
func defaultProtocols(spec *networkingv1.NetworkPolicySpec) {
	for i := range spec.Ingress {
		for j := range spec.Ingress[i].Ports {
			if spec.Ingress[i].Ports[j].Protocol == nil {
				spec.Ingress[i].Ports[j].Protocol = ptr.To(corev1.ProtocolTCP)
			}
		}
	}
	for i := range spec.Egress {
		for j := range spec.Egress[i].Ports {
			if spec.Egress[i].Ports[j].Protocol == nil {
				spec.Egress[i].Ports[j].Protocol = ptr.To(corev1.ProtocolTCP)
			}
		}
	}
}
