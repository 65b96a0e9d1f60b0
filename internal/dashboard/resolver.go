package dashboard

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/types"
)

// Head is a RayCluster's head pod as the controller observed it: a pod the cluster controls
// (by UID) that is ready. Its address comes from the pod's status, which the kubelet writes,
// never from a name the tenant could point elsewhere (a Service of type ExternalName, a DNS
// record).
type Head struct {
	// Cluster is the RayCluster.
	Cluster types.NamespacedName
	// Pod is the head pod's UID and Restarts how often its Ray container restarted: a new
	// head pod, or a restarted Ray, knows nothing of what the old one ran.
	Pod      types.UID
	Restarts int32
	// PodName is the head pod's name, in the cluster's namespace (the API server's proxy
	// addresses the pod by it).
	PodName string
	// PodIP is the pod's status.podIP.
	PodIP string
	// HostNetwork is the pod's spec.hostNetwork: its IP is then the node's, shared with
	// everything else on the node, so no resolver gives an address for it (RefuseHostNetwork).
	HostNetwork bool
	// Port is the dashboard port (rayStartParams dashboard-port, else 8265).
	Port int32
	// ServePort is where the head's Serve proxy listens (the Ray container's port named
	// serve, else 8000).
	ServePort int32
}

// Resolver gives the base URL of a RayCluster's dashboard.
type Resolver interface {
	DashboardURL(ctx context.Context, head Head) (string, error)
}

// ResolverFunc adapts a function to Resolver.
type ResolverFunc func(ctx context.Context, head Head) (string, error)

// DashboardURL implements Resolver.
func (f ResolverFunc) DashboardURL(ctx context.Context, head Head) (string, error) {
	return f(ctx, head)
}

// PodResolver is the production resolver: http://<head pod IP>:<dashboard port>. It refuses
// host-network heads (RefuseHostNetwork) and addresses a pod cannot legitimately have, so a head pod can never make raygate call its
// own loopback (the operator's metrics and pprof listeners), a link-local address (cloud
// metadata services) or a broadcast address.
type PodResolver struct {
	// SimulatedPods, when set, is a loopback range whose addresses are accepted as pod IPs:
	// the test harness and the local mode give simulated pods such addresses and listen on
	// them. It never contains 127.0.0.0/16, where the operator's own listeners are.
	SimulatedPods netip.Prefix
}

// DashboardURL implements Resolver.
func (r PodResolver) DashboardURL(_ context.Context, h Head) (string, error) {
	if err := RefuseHostNetwork(h); err != nil {
		return "", err
	}
	ip, err := netip.ParseAddr(h.PodIP)
	if err != nil || ip.Zone() != "" {
		return "", fmt.Errorf("the head pod of %s has no usable IP (%q)", h.Cluster.Name, h.PodIP)
	}
	if ip.IsUnspecified() || (ip.IsLoopback() && !r.simulated(ip)) || ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast() || ip.IsMulticast() ||
		ip == netip.AddrFrom4([4]byte{255, 255, 255, 255}) {
		return "", fmt.Errorf("the head pod of %s has IP %s, which raygate does not call", h.Cluster.Name, ip)
	}
	if h.Port < 1 || h.Port > 65535 {
		return "", fmt.Errorf("the dashboard port of %s is %d, not a port", h.Cluster.Name, h.Port)
	}
	return "http://" + net.JoinHostPort(ip.Unmap().String(), strconv.Itoa(int(h.Port))), nil
}

// RefuseHostNetwork refuses a head pod that runs in its node's network namespace: its IP is
// the node's, where the kubelet, other host-network pods (another tenant's among them) and
// node agents listen too, so nothing tells its dashboard from theirs, and a dashboard port
// the tenant chose would make raygate call any of them with its token and act on the answer.
func RefuseHostNetwork(h Head) error {
	if !h.HostNetwork {
		return nil
	}
	return fmt.Errorf("the head pod of %s uses the node's network (hostNetwork: true): its IP is the node's, and raygate calls no dashboard there; set hostNetwork to false in headGroupSpec.template", h.Cluster.Name)
}

// simulated reports whether ip is in SimulatedPods, a loopback range clear of 127.0.0.0/16.
func (r PodResolver) simulated(ip netip.Addr) bool {
	p := r.SimulatedPods
	return p.IsValid() && p.Addr().IsLoopback() && !p.Overlaps(operatorLoopback) && p.Contains(ip.Unmap())
}

// operatorLoopback holds the addresses the operator's own listeners use.
var operatorLoopback = netip.MustParsePrefix("127.0.0.0/16")

// TemplateResolver fills {namespace} and {name} in a URL template, e.g.
// "http://127.0.0.1:9000/{namespace}/{name}" for an operator running outside the cluster
// (port-forwarding proxy, or the simulator registry's front server in benchmarks).
type TemplateResolver string

// DashboardURL implements Resolver.
func (t TemplateResolver) DashboardURL(_ context.Context, h Head) (string, error) {
	s := strings.NewReplacer("{namespace}", url.PathEscape(h.Cluster.Namespace), "{name}", url.PathEscape(h.Cluster.Name)).Replace(string(t))
	return s, nil
}

// ValidateTemplate checks a --dashboard-url-template value.
func ValidateTemplate(t string) error {
	if !strings.Contains(t, "{name}") {
		return fmt.Errorf("--dashboard-url-template must contain {name}, got %q", t)
	}
	u, err := url.Parse(strings.NewReplacer("{namespace}", "ns", "{name}", "c").Replace(t))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("--dashboard-url-template must be an http(s) URL, got %q", t)
	}
	return nil
}
