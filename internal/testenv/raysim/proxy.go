package raysim

import (
	"fmt"
	"net/http"
	"strings"

	"k8s.io/apimachinery/pkg/types"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/dashboard"
)

// ClusterHeader names, in every answer of a simulated Serve proxy, the Ray cluster
// (namespace/name) that answered, so load generators can measure the traffic split.
const ClusterHeader = "X-Ray-Cluster"

// ProxyHandler is the cluster's Serve HTTP proxy, as it listens on every node's serve port:
// /-/healthz answers the proxy's health (as ServeHTTP does), every other path goes to the application with
// the longest matching route_prefix.
func (s *Server) ProxyHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set(ClusterHeader, s.cluster.String())
		if r.URL.Path == dashboard.ProxyHealthPath {
			s.ServeHTTP(w, r) // counted, authorized and faulted as the dashboard's own checks
			return
		}
		ans := s.route(r.URL.Path)
		if ans.status != http.StatusOK {
			http.Error(w, ans.body, ans.status)
			return
		}
		if s.userErrors.fail() {
			writeUserError(w)
			return
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = fmt.Fprintf(w, "%s %s\n", s.cluster, ans.app)
	})
}

// proxyApp is an application as the proxy routes to it.
type proxyApp struct {
	name, prefix, status string
}

type proxyAnswer struct {
	status int
	app    string
	body   string
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
		apps = append(apps, proxyApp{name: name, prefix: *st.cfg.RoutePrefix, status: s.proxyStatusLocked(st, now)})
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
	switch {
	case a.status != rayv1.ApplicationStatusRunning:
		return proxyAnswer{status: http.StatusServiceUnavailable, app: a.name, body: fmt.Sprintf("Application '%s' is %s.", a.name, a.status)}
	case targetCapacity != nil && *targetCapacity <= 0:
		return proxyAnswer{status: http.StatusServiceUnavailable, app: a.name, body: fmt.Sprintf("Application '%s' has no running replicas (target_capacity 0).", a.name)}
	}
	return proxyAnswer{status: http.StatusOK, app: a.name}
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
