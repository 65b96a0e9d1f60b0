package v1

// Annotations on a RayService that choose where its incremental upgrade's routes attach
// (raygate's own keys, so they never collide with fields KubeRay may add to ray.io/v1).
const (
	// SharedGatewayKey, "<namespace>/<name>", attaches the RayService's HTTPRoute (and
	// GRPCRoute) to an existing Gateway instead of creating `<service>-gateway`. The admin
	// must allow it (--allowed-shared-gateways); raygate never writes that Gateway.
	SharedGatewayKey = "raygate.ray.io/gateway"
	// RouteHostnamesKey is a comma-separated list of hostnames the routes match (Gateway API
	// hostnames: RFC 1123, a leading "*." allowed); unset: any host.
	RouteHostnamesKey = "raygate.ray.io/hostnames"
	// RoutePathPrefixKey is the path prefix the HTTPRoute matches (default "/").
	RoutePathPrefixKey = "raygate.ray.io/path-prefix"
)
