package dashboard

import (
	"context"
	"net/netip"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/types"
)

// A head pod in its node's network has the node's IP: no resolver gives an address for its
// dashboard or its Serve proxy, whatever the IP looks like.
func TestHostNetworkHeadsAreNeverResolved(t *testing.T) {
	ctx := context.Background()
	head := func(hostNetwork bool) Head {
		return Head{Cluster: types.NamespacedName{Namespace: "team-a", Name: "demo"}, PodName: "demo-head-x7k2p",
			PodIP: "10.1.2.3", HostNetwork: hostNetwork, Port: 8265, ServePort: 8000}
	}
	apiProxy, _ := proxyFor(t, "https://10.0.0.1:6443")
	resolvers := []struct {
		name string
		r    Resolver
	}{
		{name: "pod IP", r: PodResolver{}},
		{name: "pod IP with simulated pods", r: PodResolver{SimulatedPods: netip.MustParsePrefix("127.64.0.0/10")}},
		{name: "API server proxy", r: apiProxy},
	}
	for _, tc := range resolvers {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := tc.r.DashboardURL(ctx, head(false)); err != nil {
				t.Fatalf("a pod-network head: %v", err)
			}
			if _, err := ProxyURL(ctx, tc.r, head(false)); err != nil {
				t.Fatalf("a pod-network head's Serve proxy: %v", err)
			}
			got, err := tc.r.DashboardURL(ctx, head(true))
			if err == nil || !strings.Contains(err.Error(), "hostNetwork") {
				t.Errorf("dashboard of a host-network head: %q, %v; want refused naming hostNetwork", got, err)
			}
			got, err = ProxyURL(ctx, tc.r, head(true))
			if err == nil || !strings.Contains(err.Error(), "hostNetwork") {
				t.Errorf("Serve proxy of a host-network head: %q, %v; want refused naming hostNetwork", got, err)
			}
		})
	}
}
