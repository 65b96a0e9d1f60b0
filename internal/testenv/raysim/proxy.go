package raysim

import (
	"fmt"
	"net/http"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/types"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/dashboard"
)

// ClusterHeader names, in every answer of a simulated Serve proxy, the Ray cluster
// (namespace/name) that answered, so load generators can measure the traffic split.
const ClusterHeader = "X-Ray-Cluster"

// ProxyHandler is the cluster's Serve HTTP proxy on a node without a name: NodeProxyHandler("").
func (s *Server) ProxyHandler() http.Handler { return s.NodeProxyHandler("") }

// NodeProxyHandler is the cluster's Serve HTTP proxy as it listens on one node's (pod's) serve
// port: /-/healthz answers the proxy's health (as ServeHTTP does), every other path goes to
// the application with the longest matching route_prefix. Every request is counted in the
// node's Serve metrics (MetricsHandler) as Ray's proxy and replicas count it.
func (s *Server) NodeProxyHandler(node string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		sw := &statusWriter{ResponseWriter: w}
		out := s.proxy(sw, r)
		out.status = sw.status
		if out.status == 0 {
			out.status = clientClosedStatus // nothing answered: the client gave up (a held request)
		}
		out.latency = time.Since(start)
		s.nodeMetrics(node).record(r.Method, out)
	})
}

// proxy answers one request and says what it was, for the metrics (status and latency aside).
func (s *Server) proxy(w http.ResponseWriter, r *http.Request) (out proxyOutcome) {
	w.Header().Set(ClusterHeader, s.cluster.String())
	if r.URL.Path == dashboard.ProxyHealthPath {
		s.ServeHTTP(w, r) // counted, authorized and faulted as the dashboard's own checks
		return proxyOutcome{route: dashboard.ProxyHealthPath}
	}
	ans := s.route(r.URL.Path)
	out = proxyOutcome{route: ans.route, application: ans.app, deployment: ans.deployment}
	if ans.status != http.StatusOK {
		http.Error(w, ans.body, ans.status)
		return out
	}
	// From here a replica of the ingress deployment handles the request.
	out.replica = replicaID(s.cluster, out.application, out.deployment)
	start := time.Now()
	defer func() { out.replicaLatency = time.Since(start) }()
	fail, delay := s.userErrors.next()
	if !sleepCtx(r.Context(), delay) {
		out.replicaError = true // cancelled: Ray's replica counts the cancellation as an error
		return out
	}
	if fail {
		out.replicaError = true
		writeUserError(w)
		return out
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	_, _ = fmt.Fprintf(w, "%s %s\n", s.cluster, ans.app)
	return out
}

// proxyApp is an application as the proxy routes to it.
type proxyApp struct {
	name, prefix, status string
	// ingress is the deployment the proxy hands the application's requests to.
	ingress string
}

type proxyAnswer struct {
	status int
	// app, route (its route_prefix) and deployment (its ingress) are empty when no route matched.
	app, route, deployment string
	body                   string
}

func (s *Server) route(path string) proxyAnswer {
	now := s.opts.Now()
	s.mu.Lock()
	apps := make([]proxyApp, 0, len(s.order))
	for _, name := range s.order {
		st := s.apps[name]
		if st.cfg.RoutePrefix == nil {
			continue // not exposed over HTTP
		}
		apps = append(apps, proxyApp{name: name, prefix: *st.cfg.RoutePrefix, status: s.proxyStatusLocked(st, now), ingress: ingressDeployment(st.cfg)})
	}
	var capacity *float64
	if s.targetCapacity != nil {
		c := *s.targetCapacity
		capacity = &c
	}
	s.mu.Unlock()
	return routeRequest(apps, capacity, path)
}

// routeRequest is what a Serve proxy answers for path: 404 when no route_prefix matches,
// 503 while the matched application is not RUNNING (a redeploy of a RUNNING application
// counts as RUNNING: its old replicas answer) or the cluster's target_capacity is 0 (no
// replica to serve), else 200 from that application.
func routeRequest(apps []proxyApp, targetCapacity *float64, path string) proxyAnswer {
	best := -1
	for i, a := range apps {
		if matchesPrefix(path, a.prefix) && (best < 0 || len(a.prefix) > len(apps[best].prefix)) {
			best = i
		}
	}
	if best < 0 {
		return proxyAnswer{status: http.StatusNotFound, body: fmt.Sprintf("Path '%s' not found. Ping http://.../-/routes for available routes.", path)}
	}
	a := apps[best]
	ans := proxyAnswer{status: http.StatusOK, app: a.name, route: a.prefix, deployment: a.ingress}
	switch {
	case a.status != rayv1.ApplicationStatusRunning:
		ans.status, ans.body = http.StatusServiceUnavailable, fmt.Sprintf("Application '%s' is %s.", a.name, a.status)
	case targetCapacity != nil && *targetCapacity <= 0:
		ans.status, ans.body = http.StatusServiceUnavailable, fmt.Sprintf("Application '%s' has no running replicas (target_capacity 0).", a.name)
	}
	return ans
}

// matchesPrefix: "/" matches everything, "/a" matches "/a" and "/a/..." but not "/ab".
func matchesPrefix(path, prefix string) bool {
	if prefix == "/" {
		return true
	}
	prefix = strings.TrimSuffix(prefix, "/")
	return path == prefix || strings.HasPrefix(path, prefix+"/")
}

// Ensure returns the cluster's simulator, starting it if needed (as the first dashboard
// request for the cluster would).
func (r *Registry) Ensure(c types.NamespacedName) (*Server, error) { return r.ensure(c) }

// Remember records the head a controller resolved for its cluster (see LastHead), for a
// resolver that wraps another one.
func (r *Registry) Remember(h dashboard.Head) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.heads[h.Cluster] = h
}
