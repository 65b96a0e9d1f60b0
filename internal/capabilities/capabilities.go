// Package capabilities finds out, once at start, which optional APIs the API server serves:
// the Gateway API, cert-manager, the batch scheduler's PodGroup, OpenShift's Route. The cache and every
// controller are set up from the one answer, so they never disagree about a kind (a
// controller watching a kind the cache was not told about, or asking for one the server
// lacks). A CRD installed later takes effect when raygate restarts.
package capabilities

import (
	"fmt"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/raygate/raygate/internal/raypod"
)

// Capabilities are the optional kinds the API server served when raygate started.
type Capabilities struct {
	// GatewayAPI: gateway.networking.k8s.io/v1 Gateway and HTTPRoute are served. A
	// RayService's incremental upgrade needs them; without them raygate serves the other
	// strategies.
	GatewayAPI bool
	// GRPCRoute: the Gateway API's GRPCRoute is served too (never true without GatewayAPI).
	GRPCRoute bool
	// CertManager: cert-manager.io/v1 Certificate and Issuer are served, which clusters with
	// spec.tlsOptions need.
	CertManager bool
	// PodGroup is the batch scheduler's PodGroup kind that was asked for, when it is served;
	// empty when none was asked for or its CRD is not installed.
	PodGroup schema.GroupVersionKind
	// Route: OpenShift's route.openshift.io/v1 Route is served. As under KubeRay, a cluster's
	// dashboard is then exposed by a Route instead of an Ingress.
	Route bool
}

// Discoverer is what Discover asks: client-go's discovery client, or a fake in tests.
type Discoverer interface {
	ServerResourcesForGroupVersion(groupVersion string) (*metav1.APIResourceList, error)
}

// Kinds raygate may use when they are served.
var (
	gatewayKinds     = []string{"Gateway", "HTTPRoute"}
	grpcRouteKind    = "GRPCRoute"
	certManagerKinds = []schema.GroupVersionKind{raypod.CertificateGVK, raypod.IssuerGVK}
)

// Discover asks the API server, once per group version, which of the optional kinds it
// serves. podGroup is the PodGroup kind of the configured batch scheduler (empty: none).
// A group version the server does not know means its kinds are not served; any other
// discovery failure is returned, since guessing would set the cache and the controllers up
// wrong until the next restart.
func Discover(d Discoverer, podGroup schema.GroupVersionKind) (Capabilities, error) {
	served := map[string][]string{} // group version -> kinds served
	kindsOf := func(gv schema.GroupVersion) ([]string, error) {
		if kinds, ok := served[gv.String()]; ok {
			return kinds, nil
		}
		list, err := d.ServerResourcesForGroupVersion(gv.String())
		if err != nil && !apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("discovering %s: %w", gv, err)
		}
		kinds := []string{}
		if list != nil && err == nil {
			for _, r := range list.APIResources {
				kinds = append(kinds, r.Kind)
			}
		}
		served[gv.String()] = kinds
		return kinds, nil
	}
	var c Capabilities
	gw, err := kindsOf(schema.GroupVersion(gwv1.GroupVersion))
	if err != nil {
		return Capabilities{}, err
	}
	c.GatewayAPI = containsAll(gw, gatewayKinds...)
	c.GRPCRoute = c.GatewayAPI && slices.Contains(gw, grpcRouteKind)

	certs, err := kindsOf(certManagerKinds[0].GroupVersion())
	if err != nil {
		return Capabilities{}, err
	}
	c.CertManager = true
	for _, gvk := range certManagerKinds {
		c.CertManager = c.CertManager && slices.Contains(certs, gvk.Kind)
	}

	routes, err := kindsOf(raypod.RouteGVK.GroupVersion())
	if err != nil {
		return Capabilities{}, err
	}
	c.Route = slices.Contains(routes, raypod.RouteGVK.Kind)

	if !podGroup.Empty() {
		kinds, err := kindsOf(podGroup.GroupVersion())
		if err != nil {
			return Capabilities{}, err
		}
		if slices.Contains(kinds, podGroup.Kind) {
			c.PodGroup = podGroup
		}
	}
	return c, nil
}

// ForConfig discovers the capabilities of the API server cfg points at.
func ForConfig(cfg *rest.Config, podGroup schema.GroupVersionKind) (Capabilities, error) {
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return Capabilities{}, err
	}
	return Discover(dc, podGroup)
}

func containsAll(have []string, want ...string) bool {
	for _, w := range want {
		if !slices.Contains(have, w) {
			return false
		}
	}
	return true
}
