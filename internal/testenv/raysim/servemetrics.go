package raysim

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"k8s.io/apimachinery/pkg/types"
)

// Ray Serve's metrics, as Ray's metrics agent exports them on every node's metrics port
// (metrics-export-port, 8080 by default): the proxy's request, error and latency series and
// the replicas' per-deployment series, with Ray's metric names (Ray prefixes "ray_" to Serve's
// names and exports counters with "_total") and label names. The values are counted from the
// requests the simulated proxy really answers, so a query over them sees injected failures
// (SetUserErrorRatio) and latency (SetUserLatency).
//
// Simplifications, because the simulator has no replicas of its own: every node runs one
// replica of each ingress deployment and the proxy of a node hands its requests to that
// node's replica, so a node's metrics hold both the proxy's and the replica's series; a
// replica's id is stable for a cluster, application and deployment.
const (
	metricHTTPRequests         = "ray_serve_num_http_requests_total"
	metricHTTPErrors           = "ray_serve_num_http_error_requests_total"
	metricDeploymentHTTPErrors = "ray_serve_num_deployment_http_error_requests_total"
	metricHTTPLatency          = "ray_serve_http_request_latency_ms"
	metricDeploymentRequests   = "ray_serve_deployment_request_counter_total"
	metricDeploymentErrors     = "ray_serve_deployment_error_counter_total"
	metricDeploymentLatency    = "ray_serve_deployment_processing_latency_ms"
	clientClosedStatus         = 499 // what Ray's proxy records for a request its client gave up on
	sessionLabel               = "SessionName"
	sessionNameTimeFormat      = "2006-01-02_15-04-05"
	replicaIDLength            = 8
)

// latencyBucketsMS are the bucket bounds of Ray Serve's latency histograms (Serve's default
// request latency buckets, in milliseconds).
var latencyBucketsMS = []float64{1, 2, 5, 10, 20, 50, 100, 200, 300, 400, 500, 1000, 2000, 5000, 10000, 60000, 120000, 300000, 600000}

// proxyOutcome is one request as the proxy and the replica that handled it record it.
type proxyOutcome struct {
	// route is the matched route_prefix ("" when none matched; the path itself for
	// /-/healthz), application and deployment the matched application and its ingress.
	route, application, deployment string
	status                         int
	latency                        time.Duration
	// replica is the id of the replica that handled it ("": none did, e.g. a 404 or an
	// application that is not RUNNING); replicaError that the application failed it.
	replica        string
	replicaError   bool
	replicaLatency time.Duration
}

// isErrorStatus is Ray's proxy's rule: a 4xx or 5xx answer is an error.
func isErrorStatus(code int) bool { return code >= 400 && code < 600 }

// serveMetrics is one node's Serve series.
type serveMetrics struct {
	reg                  *prometheus.Registry
	httpRequests         *prometheus.CounterVec
	httpErrors           *prometheus.CounterVec
	deploymentHTTPErrors *prometheus.CounterVec
	httpLatency          *prometheus.HistogramVec
	deploymentRequests   *prometheus.CounterVec
	deploymentErrors     *prometheus.CounterVec
	deploymentLatency    *prometheus.HistogramVec
}

func newServeMetrics(session string) *serveMetrics {
	constLabels := prometheus.Labels{sessionLabel: session}
	counter := func(name, help string, labels ...string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help, ConstLabels: constLabels}, labels)
	}
	histogram := func(name, help string, labels ...string) *prometheus.HistogramVec {
		return prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: name, Help: help, ConstLabels: constLabels, Buckets: latencyBucketsMS}, labels)
	}
	m := &serveMetrics{
		reg:                  prometheus.NewRegistry(),
		httpRequests:         counter(metricHTTPRequests, "The number of HTTP requests processed.", "route", "method", "application", "status_code"),
		httpErrors:           counter(metricHTTPErrors, "The number of errored HTTP responses.", "route", "error_code", "method", "application"),
		deploymentHTTPErrors: counter(metricDeploymentHTTPErrors, "The number of errored HTTP responses returned by each deployment.", "deployment", "error_code", "method", "route", "application"),
		httpLatency:          histogram(metricHTTPLatency, "The end-to-end latency of HTTP requests (measured from the Serve HTTP proxy).", "method", "route", "application", "status_code"),
		deploymentRequests:   counter(metricDeploymentRequests, "The number of queries that have been processed in this replica.", "deployment", "replica", "route", "application"),
		deploymentErrors:     counter(metricDeploymentErrors, "The number of exceptions that have occurred in this replica.", "deployment", "replica", "route", "application"),
		deploymentLatency:    histogram(metricDeploymentLatency, "The latency for queries to be processed.", "deployment", "replica", "route", "application"),
	}
	m.reg.MustRegister(m.httpRequests, m.httpErrors, m.deploymentHTTPErrors, m.httpLatency, m.deploymentRequests, m.deploymentErrors, m.deploymentLatency)
	return m
}

// record counts one request the proxy answered.
func (m *serveMetrics) record(method string, o proxyOutcome) {
	code := strconv.Itoa(o.status)
	m.httpRequests.WithLabelValues(o.route, method, o.application, code).Inc()
	m.httpLatency.WithLabelValues(method, o.route, o.application, code).Observe(ms(o.latency))
	if isErrorStatus(o.status) {
		m.httpErrors.WithLabelValues(o.route, code, method, o.application).Inc()
		m.deploymentHTTPErrors.WithLabelValues(o.deployment, code, method, o.route, o.application).Inc()
	}
	if o.replica == "" {
		return
	}
	m.deploymentRequests.WithLabelValues(o.deployment, o.replica, o.route, o.application).Inc()
	m.deploymentLatency.WithLabelValues(o.deployment, o.replica, o.route, o.application).Observe(ms(o.replicaLatency))
	if o.replicaError {
		m.deploymentErrors.WithLabelValues(o.deployment, o.replica, o.route, o.application).Inc()
	}
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// replicaID is a replica's unique id as Ray labels its series with (eight characters),
// stable for a cluster's application and deployment.
func replicaID(cluster types.NamespacedName, app, deployment string) string {
	sum := sha256.Sum256([]byte(cluster.String() + "\x00" + app + "\x00" + deployment))
	return hex.EncodeToString(sum[:])[:replicaIDLength]
}

// ingressDeployment is the deployment an application's HTTP requests go to: the one named
// after the import path's bound object when the config lists it, else the first listed
// (the simulator's choice: a config does not say which one is the ingress).
func ingressDeployment(a appConfig) string {
	names := deploymentNames(a)
	bound := deploymentNames(appConfig{ImportPath: a.ImportPath})[0]
	for _, n := range names {
		if n == bound {
			return n
		}
	}
	return names[0]
}

// sessionName is a Ray session's name as Ray's metrics carry it in SessionName.
func sessionName(t time.Time) string {
	return fmt.Sprintf("session_%s_%06d_%d", t.Format(sessionNameTimeFormat), t.Nanosecond()/1000, os.Getpid())
}

// nodeMetrics is a node's Serve series, made on first use.
func (s *Server) nodeMetrics(node string) *serveMetrics {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.metrics == nil {
		s.metrics = map[string]*serveMetrics{}
	}
	m := s.metrics[node]
	if m == nil {
		m = newServeMetrics(s.session)
		s.metrics[node] = m
	}
	return m
}

// MetricsHandler serves a node's Serve series in Prometheus's text format, on every path, as
// Ray's metrics agent does on the node's metrics port. The node is named as for
// NodeProxyHandler ("" for ProxyHandler's).
func (s *Server) MetricsHandler(node string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		promhttp.HandlerFor(s.nodeMetrics(node).reg, promhttp.HandlerOpts{}).ServeHTTP(w, r)
	})
}

// RestartNode forgets a node's series, as a Ray node started again (a new pod of the same
// name) starts its counters from zero.
func (s *Server) RestartNode(node string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.metrics, node)
}

// statusWriter remembers the status a handler answered (0: none yet).
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// Flush lets a handler behind it stream.
func (w *statusWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}
