package kuberay

import (
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"time"
)

// clusterDomain is the DNS suffix KubeRay puts on Service names it calls.
const clusterDomain = ".svc.cluster.local"

// Routes decide what the proxy answers for each destination. A nil handler refuses the
// request: the proxy never opens a connection of its own, so nothing leaves the machine.
type Routes struct {
	// Service answers http://<name>.<namespace>.svc.cluster.local:<port>/...
	Service func(namespace, name string, port int) http.Handler
	// Pod answers http://<ip>:<port>/... (the Serve proxies KubeRay probes at pod IPs).
	Pod func(ip netip.Addr, port int) http.Handler
}

// Proxy is an HTTP forward proxy for a KubeRay process run with HTTP_PROXY pointing at it:
// it answers the in-cluster addresses KubeRay calls from handlers in the test process and
// refuses every other destination (and CONNECT tunnels) with 403.
type Proxy struct {
	routes   Routes
	listener net.Listener
	server   *http.Server

	mu      sync.Mutex
	refused []string
}

// StartProxy listens on a free 127.0.0.1 port.
func StartProxy(routes Routes) (*Proxy, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &Proxy{routes: routes, listener: l}
	p.server = &http.Server{Handler: p, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = p.server.Serve(l) }()
	return p, nil
}

// URL is the proxy's address, the value for HTTP_PROXY.
func (p *Proxy) URL() string { return "http://" + p.listener.Addr().String() }

// Env points a process's HTTP client at the proxy: plain-HTTP requests go through it, and
// loopback (the API server) is never proxied by Go's HTTP client.
func (p *Proxy) Env() []string { return proxyEnv(p.URL()) }

func proxyEnv(url string) []string {
	return []string{"HTTP_PROXY=" + url, "http_proxy=" + url, "NO_PROXY=", "no_proxy="}
}

// Close stops the proxy.
func (p *Proxy) Close() error { return p.server.Close() }

// Refused lists the destinations ("METHOD host/path") the proxy refused, oldest first.
func (p *Proxy) Refused() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.refused...)
}

// ServeHTTP answers one proxied request.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h, why := p.route(r)
	if h == nil {
		p.mu.Lock()
		p.refused = append(p.refused, r.Method+" "+r.Host+r.URL.Path)
		p.mu.Unlock()
		http.Error(w, "test proxy refuses "+r.Host+": "+why, http.StatusForbidden)
		return
	}
	// The handler sees an ordinary origin-form request.
	in := r.Clone(r.Context())
	in.RequestURI = ""
	in.URL.Scheme, in.URL.Host = "", ""
	in.Header.Del("Proxy-Connection")
	in.Header.Del("Proxy-Authorization")
	h.ServeHTTP(w, in)
}

func (p *Proxy) route(r *http.Request) (http.Handler, string) {
	if r.Method == http.MethodConnect {
		return nil, "no tunnels"
	}
	if r.URL.Scheme != "http" || r.URL.Host == "" {
		return nil, "not a plain-HTTP proxy request"
	}
	host, portText, err := net.SplitHostPort(r.URL.Host)
	if err != nil {
		return nil, "no port"
	}
	port, err := strconv.Atoi(portText)
	if err != nil || port < 1 || port > 65535 {
		return nil, "bad port"
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		if p.routes.Pod == nil {
			return nil, "no pod routes"
		}
		if h := p.routes.Pod(ip.Unmap(), port); h != nil {
			return h, ""
		}
		return nil, "unknown pod address"
	}
	name, namespace, ok := serviceHost(host)
	if !ok {
		return nil, "not a Service of the cluster"
	}
	if p.routes.Service == nil {
		return nil, "no service routes"
	}
	if h := p.routes.Service(namespace, name, port); h != nil {
		return h, ""
	}
	return nil, fmt.Sprintf("unknown Service %s/%s port %d", namespace, name, port)
}

// serviceHost splits "<name>.<namespace>.svc.cluster.local".
func serviceHost(host string) (name, namespace string, ok bool) {
	rest, found := strings.CutSuffix(strings.ToLower(strings.TrimSuffix(host, ".")), clusterDomain)
	if !found {
		return "", "", false
	}
	name, namespace, found = strings.Cut(rest, ".")
	if !found || name == "" || namespace == "" || strings.Contains(namespace, ".") {
		return "", "", false
	}
	return name, namespace, true
}
