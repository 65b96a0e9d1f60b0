package raycluster

import (
	"encoding/base64"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
)

func TestDesiredNetworkPolicies(t *testing.T) {
	tcp := ptr.To(corev1.ProtocolTCP)
	udp := ptr.To(corev1.ProtocolUDP)
	port := func(p int32) *intstr.IntOrString { v := intstr.FromInt32(p); return &v }
	sel := func(kv ...string) *metav1.LabelSelector {
		m := map[string]string{}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return &metav1.LabelSelector{MatchLabels: m}
	}
	fromCluster := networkingv1.NetworkPolicyIngressRule{From: []networkingv1.NetworkPolicyPeer{{PodSelector: sel("ray.io/cluster", "demo")}}}
	toCluster := networkingv1.NetworkPolicyEgressRule{To: []networkingv1.NetworkPolicyPeer{{PodSelector: sel("ray.io/cluster", "demo")}}}
	operator := func(p int32) networkingv1.NetworkPolicyIngressRule {
		return networkingv1.NetworkPolicyIngressRule{
			From: []networkingv1.NetworkPolicyPeer{{
				NamespaceSelector: sel("kubernetes.io/metadata.name", "raygate-system"),
				PodSelector:       sel("app.kubernetes.io/component", "operator"),
			}},
			Ports: []networkingv1.NetworkPolicyPort{{Protocol: tcp, Port: port(p)}},
		}
	}
	// User rules without a protocol: raygate writes TCP, as the API server would.
	dns := networkingv1.NetworkPolicyEgressRule{Ports: []networkingv1.NetworkPolicyPort{{Protocol: udp, Port: port(53)}, {Port: port(53)}}}
	dnsDefaulted := networkingv1.NetworkPolicyEgressRule{Ports: []networkingv1.NetworkPolicyPort{{Protocol: udp, Port: port(53)}, {Protocol: tcp, Port: port(53)}}}
	serve := networkingv1.NetworkPolicyIngressRule{Ports: []networkingv1.NetworkPolicyPort{{Port: port(8000)}}}
	serveDefaulted := networkingv1.NetworkPolicyIngressRule{Ports: []networkingv1.NetworkPolicyPort{{Protocol: tcp, Port: port(8000)}}}
	gpuRule := networkingv1.NetworkPolicyIngressRule{From: []networkingv1.NetworkPolicyPeer{{PodSelector: sel("app", "feeder")}}}

	type policy struct {
		name     string
		selector map[string]string
		types    []networkingv1.PolicyType
		ingress  []networkingv1.NetworkPolicyIngressRule
		egress   []networkingv1.NetworkPolicyEgressRule
	}
	head := map[string]string{"ray.io/cluster": "demo", "ray.io/node-type": "head"}
	workers := map[string]string{"ray.io/cluster": "demo", "ray.io/node-type": "worker", "ray.io/group": "workers"}
	gpu := map[string]string{"ray.io/cluster": "demo", "ray.io/node-type": "worker", "ray.io/group": "gpu"}
	both := []networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress}
	ingressOnly := []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}
	egressOnly := []networkingv1.PolicyType{networkingv1.PolicyTypeEgress}

	cases := map[string]struct {
		np     *rayv1.NetworkPolicyConfig
		params map[string]string
		opNS   string
		want   []policy
	}{
		"no networkPolicy: none": {},
		"DenyAll by default, with the user's rules per group": {
			np: &rayv1.NetworkPolicyConfig{
				Head:         &rayv1.NetworkPolicyRules{IngressRules: []networkingv1.NetworkPolicyIngressRule{serve}, EgressRules: []networkingv1.NetworkPolicyEgressRule{dns}},
				Worker:       &rayv1.NetworkPolicyRules{EgressRules: []networkingv1.NetworkPolicyEgressRule{dns}},
				WorkerGroups: []rayv1.WorkerGroupNetworkPolicyRules{{GroupName: "gpu", NetworkPolicyRules: rayv1.NetworkPolicyRules{IngressRules: []networkingv1.NetworkPolicyIngressRule{gpuRule}}}},
			},
			opNS: "raygate-system",
			want: []policy{
				{"demo-head", head, both, []networkingv1.NetworkPolicyIngressRule{fromCluster, operator(8265), serveDefaulted}, []networkingv1.NetworkPolicyEgressRule{toCluster, dnsDefaulted}},
				{"demo-workers-workers", workers, both, []networkingv1.NetworkPolicyIngressRule{fromCluster}, []networkingv1.NetworkPolicyEgressRule{toCluster, dnsDefaulted}},
				// workerGroups replaces worker for its group.
				{"demo-workers-gpu", gpu, both, []networkingv1.NetworkPolicyIngressRule{fromCluster, gpuRule}, []networkingv1.NetworkPolicyEgressRule{toCluster}},
			},
		},
		"DenyAllIngress, the dashboard on another port": {
			np:     &rayv1.NetworkPolicyConfig{Mode: ptr.To(rayv1.NetworkPolicyDenyAllIngress)},
			params: map[string]string{"dashboard-port": "9000"},
			opNS:   "raygate-system",
			want: []policy{
				{"demo-head", head, ingressOnly, []networkingv1.NetworkPolicyIngressRule{fromCluster, operator(9000)}, nil},
				{"demo-workers-workers", workers, ingressOnly, []networkingv1.NetworkPolicyIngressRule{fromCluster}, nil},
				{"demo-workers-gpu", gpu, ingressOnly, []networkingv1.NetworkPolicyIngressRule{fromCluster}, nil},
			},
		},
		"DenyAllEgress: ingress is open, no operator rule needed": {
			np:   &rayv1.NetworkPolicyConfig{Mode: ptr.To(rayv1.NetworkPolicyDenyAllEgress)},
			opNS: "raygate-system",
			want: []policy{
				{"demo-head", head, egressOnly, nil, []networkingv1.NetworkPolicyEgressRule{toCluster}},
				{"demo-workers-workers", workers, egressOnly, nil, []networkingv1.NetworkPolicyEgressRule{toCluster}},
				{"demo-workers-gpu", gpu, egressOnly, nil, []networkingv1.NetworkPolicyEgressRule{toCluster}},
			},
		},
		"operator namespace unknown: no operator rule": {
			np: &rayv1.NetworkPolicyConfig{Mode: ptr.To(rayv1.NetworkPolicyDenyAllIngress)},
			want: []policy{
				{"demo-head", head, ingressOnly, []networkingv1.NetworkPolicyIngressRule{fromCluster}, nil},
				{"demo-workers-workers", workers, ingressOnly, []networkingv1.NetworkPolicyIngressRule{fromCluster}, nil},
				{"demo-workers-gpu", gpu, ingressOnly, []networkingv1.NetworkPolicyIngressRule{fromCluster}, nil},
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			rc := cluster(func(rc *rayv1.RayCluster) {
				gpuGroup := rc.Spec.WorkerGroupSpecs[0].DeepCopy()
				gpuGroup.GroupName = "gpu"
				rc.Spec.WorkerGroupSpecs = append(rc.Spec.WorkerGroupSpecs, *gpuGroup)
				rc.Spec.NetworkPolicy = tc.np
				if tc.params != nil {
					rc.Spec.HeadGroupSpec.RayStartParams = tc.params
				}
			})
			before := rc.DeepCopy()
			got := desiredNetworkPolicies(rc, tc.opNS)
			if len(got) != len(tc.want) {
				t.Fatalf("got %d policies, want %d", len(got), len(tc.want))
			}
			for i, w := range tc.want {
				want := &networkingv1.NetworkPolicy{
					TypeMeta: metav1.TypeMeta{APIVersion: "networking.k8s.io/v1", Kind: "NetworkPolicy"},
					ObjectMeta: metav1.ObjectMeta{
						Name: w.name, Namespace: "team-a",
						Labels: map[string]string{"ray.io/cluster": "demo", "app.kubernetes.io/name": "kuberay", "app.kubernetes.io/created-by": "kuberay-operator"},
						OwnerReferences: []metav1.OwnerReference{{APIVersion: "ray.io/v1", Kind: "RayCluster", Name: "demo", UID: rc.UID,
							Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}},
					},
					Spec: networkingv1.NetworkPolicySpec{PodSelector: metav1.LabelSelector{MatchLabels: w.selector}, PolicyTypes: w.types, Ingress: w.ingress, Egress: w.egress},
				}
				if diff := cmp.Diff(want, got[i]); diff != "" {
					t.Errorf("%s (-want +got):\n%s", w.name, diff)
				}
			}
			if diff := cmp.Diff(before, rc); diff != "" {
				t.Errorf("building changed the cluster (-before +after):\n%s", diff)
			}
		})
	}
}

func TestMergeNetworkPolicy(t *testing.T) {
	rc := cluster(func(rc *rayv1.RayCluster) { rc.Spec.NetworkPolicy = &rayv1.NetworkPolicyConfig{} })
	desired := desiredNetworkPolicies(rc, "raygate-system")[0]
	stored := desired.DeepCopy()
	stored.ResourceVersion, stored.UID = "5", "np-uid"
	stored.Labels["team"] = "ml"
	if u, _ := mergeNetworkPolicy(stored, desired); u != nil {
		t.Errorf("an unchanged policy (extra labels kept) must not be written, got %v", u)
	}
	changed := stored.DeepCopy()
	changed.Spec.Ingress = nil
	u, recreate := mergeNetworkPolicy(changed, desired)
	if u == nil || recreate || !cmp.Equal(u.Spec, desired.Spec) || u.Labels["team"] != "ml" || u.ResourceVersion != "5" {
		t.Errorf("a changed policy must get raygate's spec and keep others' labels and its resourceVersion, got %v", u)
	}
}

func TestAuthSecret(t *testing.T) {
	rc := cluster()
	token, err := newAuthToken()
	if err != nil {
		t.Fatal(err)
	}
	raw, err := base64.StdEncoding.DecodeString(token)
	if err != nil || len(raw) != 32 {
		t.Fatalf("token %d bytes of randomness (err %v), want 32", len(raw), err)
	}
	if other, _ := newAuthToken(); other == token {
		t.Fatal("two tokens are equal")
	}
	s := authSecret(rc, token)
	want := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Name: "demo", Namespace: "team-a",
			Labels: map[string]string{"ray.io/cluster": "demo", "app.kubernetes.io/name": "kuberay", "app.kubernetes.io/created-by": "kuberay-operator"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "ray.io/v1", Kind: "RayCluster", Name: "demo", UID: rc.UID,
				Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}},
		},
		Type:      corev1.SecretTypeOpaque,
		Immutable: ptr.To(true),
		Data:      map[string][]byte{"auth_token": []byte(token)},
	}
	if diff := cmp.Diff(want, s); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}
