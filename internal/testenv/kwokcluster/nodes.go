package kwokcluster

import (
	"fmt"
	"net/netip"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// MaxNodes is the most Node objects a local cluster gets: each has its own /18 pod CIDR
// (16,382 pods) out of PodIPs, clear of the Service range 10.96.0.0/16.
const MaxNodes = 128

// PodIPs holds every simulated pod's IP: loopback, where every address is local on Linux, so
// simulators listen on pod IPs and no traffic leaves the machine; clear of 127.0.0.0/16,
// where the control plane and the operator listen.
var PodIPs = netip.MustParsePrefix("127.64.0.0/10")

// DefaultNodeCapacity is kwok's own default for a node without capacity: large enough that
// a handful of nodes hold thousands of simulated pods.
func DefaultNodeCapacity() corev1.ResourceList {
	return corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("1k"),
		corev1.ResourceMemory: resource.MustParse("1Ti"),
		corev1.ResourcePods:   resource.MustParse("1M"),
	}
}

// NodeName is the name of the i-th node.
func NodeName(i int) string { return fmt.Sprintf("kwok-node-%d", i) }

// podCIDR gives node i its own /18 so kwok never runs out of pod IPs on one node (its
// default pool is a single /24 shared by every node, and in 10.0.0.0/8): the i-th block of
// PodIPs this process claimed (ClaimPodIPBlocks), so a parallel process never gets the same.
func podCIDR(i int) (string, error) {
	blocks, err := ClaimPodIPBlocks(i + 1)
	if err != nil {
		return "", fmt.Errorf("node %d: %w", i, err)
	}
	return blocks[i].String(), nil
}

// nodeObject is the i-th Node: kwok manages it (--manage-all-nodes), the scheduler sees its
// capacity, and it has no taints so ordinary pods land on it.
func nodeObject(i int, capacity corev1.ResourceList) (*corev1.Node, error) {
	name := NodeName(i)
	cidr, err := podCIDR(i)
	if err != nil {
		return nil, err
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name: name,
			Labels: map[string]string{
				corev1.LabelHostname: name,
				corev1.LabelOSStable: "linux",
				"type":               "kwok",
			},
			Annotations: map[string]string{"kwok.x-k8s.io/node": "fake"},
		},
		Spec: corev1.NodeSpec{PodCIDR: cidr, PodCIDRs: []string{cidr}},
		Status: corev1.NodeStatus{
			Capacity:    capacity.DeepCopy(),
			Allocatable: capacity.DeepCopy(),
		},
	}, nil
}

// nodeReady reports whether kwok has initialised the node (Ready condition True).
func nodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// nodeBlockOf is node i's pod CIDR inside prefix: its i-th /18, or prefix itself when that is
// no larger than a /18 (every node then shares it).
func nodeBlockOf(prefix netip.Prefix, i int) netip.Prefix {
	if prefix.Bits() >= blockBits {
		return prefix.Masked()
	}
	return blockIn(prefix, i)
}
