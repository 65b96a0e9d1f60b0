package localmode

import (
	"context"
	"net/netip"
	"slices"

	discoveryv1 "k8s.io/api/discovery/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/raygate/raygate/internal/rayspec"
)

// RoutePrefixes are the route_prefix values of a serveConfigV2 document, in order ("/" for
// an application without one, as in Ray Serve); nil when the document does not parse.
func RoutePrefixes(serveConfig string) []string {
	var doc struct {
		Applications []struct {
			RoutePrefix *string `json:"route_prefix"`
		} `json:"applications"`
	}
	if err := yaml.Unmarshal([]byte(serveConfig), &doc); err != nil {
		return nil
	}
	out := make([]string, 0, len(doc.Applications))
	for _, a := range doc.Applications {
		p := "/"
		if a.RoutePrefix != nil && *a.RoutePrefix != "" {
			p = *a.RoutePrefix
		}
		out = append(out, p)
	}
	return out
}

// AllLoopback says whether every address is in 127.0.0.0/8 (and there is one): only then may
// a request sent through the gateway reach them, as the network rule of the local mode
// allows traffic to loopback addresses only.
func AllLoopback(addrs []string) bool {
	return len(addrs) > 0 && !slices.ContainsFunc(addrs, func(a string) bool {
		ip, err := netip.ParseAddr(a)
		return err != nil || !ip.Is4() || !ip.IsLoopback()
	})
}

// ServeAddresses are the ready endpoint addresses of a cluster's serve Service, the backend
// the HTTPRoute sends that cluster's share of requests to.
func ServeAddresses(ctx context.Context, c client.Client, namespace, cluster string) ([]string, error) {
	var list discoveryv1.EndpointSliceList
	if err := c.List(ctx, &list, client.InNamespace(namespace),
		client.MatchingLabels{discoveryv1.LabelServiceName: rayspec.ClusterServeServiceName(cluster)}); err != nil {
		return nil, err
	}
	var out []string
	for _, s := range list.Items {
		for _, ep := range s.Endpoints {
			if ep.Conditions.Ready == nil || *ep.Conditions.Ready {
				out = append(out, ep.Addresses...)
			}
		}
	}
	return out, nil
}
