package dashboard

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"k8s.io/client-go/rest"
)

// APIServerProxyTimeout bounds each request through the API server's proxy: it adds a hop,
// and the API server's own dial to the pod. KubeRay allows 10 s there too.
const APIServerProxyTimeout = 10 * time.Second

// rayAuthHeader is where Ray's token authentication also looks for the token. Through the
// API server, Authorization carries the operator's own credentials (the API server removes
// it once it authenticated the request), so the Ray token travels here, as KubeRay sends it.
const rayAuthHeader = "X-Ray-Authorization"

// APIServerProxy is a Resolver for operators that cannot reach pods (network policies,
// an operator outside the cluster's network): it reaches a head pod's dashboard and Serve
// proxy through the API server's pods/proxy subresource. It addresses the head pod the
// controller observed (by name, in its namespace) and no other: not a Service, whose
// endpoints a tenant's own pods could join. The same untrusted-answer rules apply (the
// Client follows no redirect, caps the answer and times out); the RBAC rule on pods/proxy is
// the admin's choice (Helm value dashboardAPIServerProxy).
type APIServerProxy struct {
	// base is the API server's URL, with any path prefix of the rest config's host.
	base *url.URL
}

// NewAPIServerProxy returns the resolver for the API server cfg reaches, and the HTTP client
// to use with it: cfg's credentials and TLS, for requests to that API server only (any other
// host is refused, so the operator's credentials never reach a pod), with a Ray token
// carried in X-Ray-Authorization.
func NewAPIServerProxy(cfg *rest.Config) (*APIServerProxy, *http.Client, error) {
	base, _, err := rest.DefaultServerUrlFor(cfg)
	if err != nil {
		return nil, nil, err
	}
	rt, err := rest.TransportFor(cfg)
	if err != nil {
		return nil, nil, err
	}
	client := &http.Client{Transport: apiServerOnly{host: base.Host, scheme: base.Scheme, rt: rt}, CheckRedirect: refuseRedirect}
	return &APIServerProxy{base: base}, client, nil
}

// DashboardURL implements Resolver: the head pod's dashboard port through pods/proxy.
func (p *APIServerProxy) DashboardURL(_ context.Context, h Head) (string, error) {
	return p.podURL(h, h.Port, "dashboard")
}

// ProxyURL implements ProxyResolver: the head pod's serve port through pods/proxy.
func (p *APIServerProxy) ProxyURL(_ context.Context, h Head) (string, error) {
	return p.podURL(h, h.ServePort, "serve")
}

func (p *APIServerProxy) podURL(h Head, port int32, what string) (string, error) {
	if err := RefuseHostNetwork(h); err != nil {
		return "", err // the API server would connect to the node's address
	}
	if h.PodName == "" || h.Cluster.Namespace == "" {
		return "", fmt.Errorf("the head pod of %s has no name yet", h.Cluster.Name)
	}
	if port < 1 || port > 65535 {
		return "", fmt.Errorf("the %s port of %s is %d, not a port", what, h.Cluster.Name, port)
	}
	u := *p.base
	u.Path = strings.TrimRight(u.Path, "/") + "/api/v1/namespaces/" + url.PathEscape(h.Cluster.Namespace) +
		"/pods/" + url.PathEscape(h.PodName) + ":" + strconv.Itoa(int(port)) + "/proxy"
	u.RawPath = ""
	return u.String(), nil
}

// apiServerOnly sends requests to one API server (scheme and host) and refuses any other, so
// the credentials rt adds stay with it; it moves a Ray token from Authorization to
// X-Ray-Authorization.
type apiServerOnly struct {
	host, scheme string
	rt           http.RoundTripper
}

func (a apiServerOnly) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL.Host != a.host || req.URL.Scheme != a.scheme {
		return nil, fmt.Errorf("raygate sends its API server credentials only to %s://%s, not to %s://%s", a.scheme, a.host, req.URL.Scheme, req.URL.Host)
	}
	if token := req.Header.Get("Authorization"); token != "" {
		req = req.Clone(req.Context())
		req.Header.Del("Authorization")
		req.Header.Set(rayAuthHeader, token)
	}
	return a.rt.RoundTrip(req)
}
