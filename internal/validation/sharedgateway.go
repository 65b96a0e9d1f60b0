package validation

import (
	"fmt"
	"net"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/types"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/gatewayapi"
	"github.com/raygate/raygate/internal/rayspec"
)

var (
	sharedGatewayPath  = annotationsPath.Key(rayv1.SharedGatewayKey)
	routeHostnamesPath = annotationsPath.Key(rayv1.RouteHostnamesKey)
	routePathPath      = annotationsPath.Key(rayv1.RoutePathPrefixKey)
)

const (
	sharedGatewaysSetting = "the manager's --allowed-shared-gateways, Helm value policy.allowedSharedGateways"
	// maxRouteHostnames is the Gateway API's limit on an HTTPRoute's hostnames.
	maxRouteHostnames = 16
	// maxPathPrefix is the Gateway API's limit on a path match value.
	maxPathPrefix = 1024
	// DefaultPathPrefix is what the HTTPRoute matches without raygate.ray.io/path-prefix.
	DefaultPathPrefix = "/"
)

// RouteAttachment is where a RayService's routes attach and what they match, read from its
// raygate.ray.io/gateway, hostnames and path-prefix annotations.
type RouteAttachment struct {
	// Gateway is the shared Gateway (nil: raygate's own `<service>-gateway`).
	Gateway *types.NamespacedName
	// Hostnames the routes match (empty: any).
	Hostnames []string
	// PathPrefix the HTTPRoute matches.
	PathPrefix string
}

// ParseRouteAttachment reads the annotations; every malformed one is an error with its path,
// and what parsed is still returned with defaults in place of what did not.
func ParseRouteAttachment(annotations map[string]string) (RouteAttachment, field.ErrorList) {
	out := RouteAttachment{PathPrefix: DefaultPathPrefix}
	var errs field.ErrorList
	if v, ok := annotations[rayv1.SharedGatewayKey]; ok {
		ref, err := parseGatewayRef(v)
		if err != "" {
			errs = append(errs, field.Invalid(sharedGatewayPath, v, err))
		} else {
			out.Gateway = &ref
		}
	}
	if v, ok := annotations[rayv1.RouteHostnamesKey]; ok {
		hosts, e := parseHostnames(v)
		errs = append(errs, e...)
		out.Hostnames = hosts
	}
	if v, ok := annotations[rayv1.RoutePathPrefixKey]; ok {
		if why := pathPrefixProblem(v); why != "" {
			errs = append(errs, field.Invalid(routePathPath, v, why))
		} else {
			out.PathPrefix = v
		}
	}
	return out, errs
}

// parseGatewayRef reads "<namespace>/<name>".
func parseGatewayRef(v string) (types.NamespacedName, string) {
	ns, name, ok := strings.Cut(v, "/")
	if !ok || ns == "" || name == "" || strings.Contains(name, "/") {
		return types.NamespacedName{}, "must be <namespace>/<name> of a Gateway"
	}
	if msgs := utilvalidation.IsDNS1123Label(ns); len(msgs) > 0 {
		return types.NamespacedName{}, "namespace: " + strings.Join(msgs, "; ")
	}
	if msgs := utilvalidation.IsDNS1123Subdomain(name); len(msgs) > 0 {
		return types.NamespacedName{}, "name: " + strings.Join(msgs, "; ")
	}
	return types.NamespacedName{Namespace: ns, Name: name}, ""
}

// parseHostnames reads a comma-separated list of Gateway API hostnames: lower-case RFC 1123
// subdomains, optionally starting with "*." (one wildcard label, leftmost), no IP
// addresses, no port, at most 16, no duplicates.
func parseHostnames(v string) ([]string, field.ErrorList) {
	var out []string
	var errs field.ErrorList
	parts := strings.Split(v, ",")
	if len(parts) > maxRouteHostnames {
		return nil, field.ErrorList{field.TooMany(routeHostnamesPath, len(parts), maxRouteHostnames)}
	}
	for _, p := range parts {
		h := strings.TrimSpace(p)
		var why string
		switch {
		case h == "":
			why = "an empty hostname (stray comma?)"
		case net.ParseIP(h) != nil:
			why = fmt.Sprintf("%q is an IP address; Gateway API hostnames must be names", h)
		case strings.HasPrefix(h, "*."):
			if msgs := utilvalidation.IsWildcardDNS1123Subdomain(h); len(msgs) > 0 {
				why = fmt.Sprintf("%q: %s", h, strings.Join(msgs, "; "))
			}
		default:
			if msgs := utilvalidation.IsDNS1123Subdomain(h); len(msgs) > 0 {
				why = fmt.Sprintf("%q: %s (a wildcard is allowed only as a leading \"*.\")", h, strings.Join(msgs, "; "))
			}
		}
		if why == "" && slices.Contains(out, h) {
			why = fmt.Sprintf("%q is listed twice", h)
		}
		if why != "" {
			errs = append(errs, field.Invalid(routeHostnamesPath, v, why))
			continue
		}
		out = append(out, h)
	}
	return out, errs
}

// pathPrefixProblem says why v is not a path prefix the Gateway API accepts ("": it is).
func pathPrefixProblem(v string) string {
	switch {
	case !strings.HasPrefix(v, "/"):
		return "must start with /"
	case len(v) > maxPathPrefix:
		return fmt.Sprintf("must be at most %d characters", maxPathPrefix)
	case strings.Contains(v, "//"):
		return "must not contain //"
	case strings.Contains(v, "/./") || strings.Contains(v, "/../") || strings.HasSuffix(v, "/.") || strings.HasSuffix(v, "/.."):
		return "must not contain . or .. segments"
	case strings.Contains(strings.ToLower(v), "%2f"):
		return "must not contain an encoded /"
	case strings.ContainsAny(v, "#? \t\n"):
		return "must not contain #, ?, or whitespace"
	}
	return ""
}

// AllowsSharedGateway reports whether the admin allows routes on a Gateway: an entry
// "<namespace>/<name>" or "<namespace>/*" names it. An empty list turns the feature off.
func (p Policy) AllowsSharedGateway(ref types.NamespacedName) bool {
	for _, e := range p.AllowedSharedGateways {
		ns, name, _ := strings.Cut(e, "/")
		if ns == ref.Namespace && (name == "*" || name == ref.Name) {
			return true
		}
	}
	return false
}

// ValidSharedGatewayEntry says why an --allowed-shared-gateways entry is malformed ("": it
// is fine).
func ValidSharedGatewayEntry(e string) string {
	ns, name, ok := strings.Cut(e, "/")
	if !ok || ns == "" || name == "" {
		return fmt.Sprintf("%q must be <namespace>/<name> or <namespace>/*", e)
	}
	if msgs := utilvalidation.IsDNS1123Label(ns); len(msgs) > 0 {
		return fmt.Sprintf("%q: namespace %s", e, strings.Join(msgs, "; "))
	}
	if name == "*" {
		return ""
	}
	if msgs := utilvalidation.IsDNS1123Subdomain(name); len(msgs) > 0 {
		return fmt.Sprintf("%q: name %s", e, strings.Join(msgs, "; "))
	}
	return ""
}

// routeAttachment checks the three annotations: their syntax always (the controller must
// not act on a malformed one); on admission, that the admin allows the shared Gateway; on
// update, that the Gateway does not change while an upgrade is in progress (its traffic
// would jump to a Gateway that never carried it). Warns when the strategy ignores them.
func (c *check) routeAttachment(old, svc *rayv1.RayService) (field.ErrorList, []string) {
	a, errs := ParseRouteAttachment(svc.Annotations)
	_, gwSet := svc.Annotations[rayv1.SharedGatewayKey]
	_, hostsSet := svc.Annotations[rayv1.RouteHostnamesKey]
	_, pathSet := svc.Annotations[rayv1.RoutePathPrefixKey]
	if !gwSet && !hostsSet && !pathSet {
		return errs, nil
	}
	var warnings []string
	if *effectiveStrategy(&svc.Spec).Type != rayv1.NewClusterWithIncrementalUpgrade {
		warnings = append(warnings, fmt.Sprintf(WarnRouteAnnotationsIgnored, annotationsPath, rayv1.NewClusterWithIncrementalUpgrade))
	}
	if c.admission() && a.Gateway != nil && !c.policy.AllowsSharedGateway(*a.Gateway) {
		msg := fmt.Sprintf("shared Gateways are off on this cluster (%s is empty)", sharedGatewaysSetting)
		if len(c.policy.AllowedSharedGateways) > 0 {
			msg = fmt.Sprintf("Gateway %s is not allowed here; allowed: %s (%s)", a.Gateway, strings.Join(c.policy.AllowedSharedGateways, ", "), sharedGatewaysSetting)
		}
		errs = append(errs, field.Forbidden(sharedGatewayPath, msg))
	}
	if c.admission() && old != nil && UpgradeInProgress(old) && old.Annotations[rayv1.SharedGatewayKey] != svc.Annotations[rayv1.SharedGatewayKey] {
		errs = append(errs, c.decide(field.Forbidden(sharedGatewayPath,
			"cannot change while an upgrade is in progress: its traffic would move to a Gateway that never carried it; wait until condition UpgradeInProgress becomes False"))...)
	}
	return errs, warnings
}

// SharedGatewayToCheck returns the shared Gateway an incremental RayService attaches to, for
// the webhook to look up (ok is false otherwise, or when the annotation is malformed).
func SharedGatewayToCheck(svc *rayv1.RayService) (RouteAttachment, bool) {
	if svc == nil || svc.DeletionTimestamp != nil || *effectiveStrategy(&svc.Spec).Type != rayv1.NewClusterWithIncrementalUpgrade {
		return RouteAttachment{}, false
	}
	a, errs := ParseRouteAttachment(svc.Annotations)
	return a, a.Gateway != nil && len(errs) == 0
}

// SharedGatewayState is what the webhook found when it looked up a shared Gateway.
type SharedGatewayState int

const (
	// SharedGatewayUnknown: not looked up; no warning.
	SharedGatewayUnknown SharedGatewayState = iota
	// SharedGatewayFound: read; its listeners are checked.
	SharedGatewayFound
	// SharedGatewayNotFound: the Gateway does not exist (yet).
	SharedGatewayNotFound
	// SharedGatewayUnreadable: the lookup failed (RBAC, timeout, no Gateway API).
	SharedGatewayUnreadable
)

// SharedGatewayWarnings turns the lookup of a shared Gateway into warnings: it does not
// exist yet, it cannot be read, or its listeners' allowedRoutes (or hostnames) would not
// admit the RayService's routes. These are warnings, not refusals: the Gateway's owner may
// change it at any time, and the controller reports the Gateway's real answer as condition
// RouteAccepted and moves no traffic until it is True.
func SharedGatewayWarnings(svc *rayv1.RayService, a RouteAttachment, state SharedGatewayState, gw *gwv1.Gateway, ns *Namespace) []string {
	if a.Gateway == nil {
		return nil
	}
	switch state {
	case SharedGatewayNotFound:
		return []string{fmt.Sprintf("%s: Gateway %s does not exist yet; the routes carry no traffic until it exists and accepts them (condition RouteAccepted)", sharedGatewayPath, a.Gateway)}
	case SharedGatewayUnreadable:
		return []string{fmt.Sprintf("%s: Gateway %s could not be read, so its allowedRoutes were not checked; the controller reports whether it accepts the routes as condition RouteAccepted", sharedGatewayPath, a.Gateway)}
	case SharedGatewayFound:
	default:
		return nil
	}
	kinds := []string{gatewayapi.KindHTTPRoute}
	if ExposesServeGRPC(&svc.Spec.RayClusterSpec) {
		kinds = append(kinds, gatewayapi.KindGRPCRoute)
	}
	var out []string
	for _, k := range kinds {
		rt := gatewayapi.Route{Kind: k, Namespace: svc.Namespace, Hostnames: a.Hostnames}
		if ns != nil {
			rt.NamespaceLabels, rt.LabelsKnown = ns.Labels, ns.LabelsKnown
		}
		if v := gatewayapi.Admits(gw, rt); !v.Allowed && !v.Undecided {
			out = append(out, fmt.Sprintf("%s: Gateway %s would not accept a %s from namespace %s (%s: %s); no traffic moves until it does (condition RouteAccepted)",
				sharedGatewayPath, a.Gateway, k, svc.Namespace, v.Reason, v.Message))
		}
	}
	return out
}

// ExposesServeGRPC: the head's Ray container names a serve-grpc port, so the serve Services
// carry Serve's gRPC proxy and raygate routes it with a GRPCRoute.
func ExposesServeGRPC(spec *rayv1.RayClusterSpec) bool {
	for _, p := range rayspec.ServePorts(rayspec.HeadRayContainer(spec)) {
		if p.Name == rayspec.ServeGRPCPortName {
			return true
		}
	}
	return false
}
