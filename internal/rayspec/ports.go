package rayspec

import (
	"cmp"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
)

// Ports Ray listens on unless rayStartParams say otherwise, and the names the containers and
// the head Service give them. The names are KubeRay's, so tools built for KubeRay find them.
const (
	DefaultGCSPort            = 6379
	DefaultDashboardPort      = 8265
	DefaultClientPort         = 10001
	DefaultServePort          = 8000
	DefaultMetricsPort        = 8080
	DefaultDashboardAgentPort = 52365

	GCSPortName       = "gcs-server"
	DashboardPortName = "dashboard"
	ClientPortName    = "client"
	ServePortName     = "serve"
	MetricsPortName   = "metrics"
	// ServeGRPCPortName is the head container's port of Serve's gRPC proxy, exposed on the
	// serve Services like every "serve-..." port and routed with a GRPCRoute.
	ServeGRPCPortName = "serve-grpc"
)

// DefaultHeadPorts are the ports a head pod listens on by default, by name.
func DefaultHeadPorts() map[string]int32 {
	return map[string]int32{
		GCSPortName:       DefaultGCSPort,
		DashboardPortName: DefaultDashboardPort,
		ClientPortName:    DefaultClientPort,
		ServePortName:     DefaultServePort,
		MetricsPortName:   DefaultMetricsPort,
	}
}

// ContainerServePort is the container's port named "serve", or Serve's default port.
func ContainerServePort(c *corev1.Container) int32 {
	for _, p := range c.Ports {
		if p.Name == ServePortName {
			return p.ContainerPort
		}
	}
	return DefaultServePort
}

// ServePort is the port Ray Serve listens on in a cluster: the head's Ray container's port
// named "serve", or Serve's default port.
func ServePort(spec *rayv1.RayClusterSpec) int32 {
	if c := spec.HeadGroupSpec.Template.Spec.Containers; len(c) > 0 {
		return ContainerServePort(&c[rayv1.RayContainerIndex])
	}
	return DefaultServePort
}

// PortParams are the rayStartParams that set a port Ray listens on.
var PortParams = []string{"port", "dashboard-port", "ray-client-server-port", "metrics-export-port", "dashboard-agent-listen-port", "dashboard-agent-grpc-port", "node-manager-port", "object-manager-port", "min-worker-port", "max-worker-port"}

// ValidPort parses a port rayStartParams value: a decimal integer from 1 to 65535.
func ValidPort(v string) (int32, bool) {
	n, err := strconv.ParseInt(v, 10, 32)
	if err != nil || n < 1 || n > 65535 {
		return 0, false
	}
	return int32(n), true
}

// PortParam is the port rayStartParams[key] sets, or def when it sets none (or none that is
// a valid port: admission refuses those, so only an object stored past the webhook has one).
func PortParam(params map[string]string, key string, def int32) int32 {
	if p, ok := ValidPort(params[key]); ok {
		return p
	}
	return def
}

// ServePorts are the ports of a serve Service: first "serve" (the head Ray container's port of
// that name, or Serve's default port), then every port of the container named "serve-..."
// (such as serve-grpc for Serve's gRPC proxy), sorted by name, as KubeRay exposes them. A
// "serve-..." port on a number already exposed is left out: a Service cannot have it twice.
// head may be nil (a spec without containers, refused elsewhere).
func ServePorts(head *corev1.Container) []corev1.ServicePort {
	port := int32(DefaultServePort)
	if head != nil {
		port = ContainerServePort(head)
	}
	out := []corev1.ServicePort{{Name: ServePortName, Port: port, TargetPort: intstr.FromInt32(port), Protocol: corev1.ProtocolTCP}}
	if head == nil {
		return out
	}
	extra := slices.Clone(head.Ports)
	slices.SortStableFunc(extra, func(a, b corev1.ContainerPort) int { return cmp.Compare(a.Name, b.Name) })
	for _, p := range extra {
		if !strings.HasPrefix(p.Name, ServePortName+"-") ||
			slices.ContainsFunc(out, func(q corev1.ServicePort) bool { return q.Port == p.ContainerPort || q.Name == p.Name }) {
			continue
		}
		proto := p.Protocol
		if proto == "" {
			proto = corev1.ProtocolTCP
		}
		out = append(out, corev1.ServicePort{Name: p.Name, Port: p.ContainerPort, TargetPort: intstr.FromInt32(p.ContainerPort), Protocol: proto})
	}
	return out
}

// WithServePort is ports (as ServePorts returns them) with the "serve" port replaced by serve
// (a user's serve Service may give it another port number), leaving out any other port now
// on the same number.
func WithServePort(ports []corev1.ServicePort, serve corev1.ServicePort) []corev1.ServicePort {
	out := []corev1.ServicePort{serve}
	for _, p := range ports {
		if p.Name != ServePortName && p.Port != serve.Port {
			out = append(out, p)
		}
	}
	return out
}

// HeadRayContainer is the head's Ray container, or nil when the head template has none.
func HeadRayContainer(spec *rayv1.RayClusterSpec) *corev1.Container {
	if c := spec.HeadGroupSpec.Template.Spec.Containers; len(c) > rayv1.RayContainerIndex {
		return &c[rayv1.RayContainerIndex]
	}
	return nil
}
