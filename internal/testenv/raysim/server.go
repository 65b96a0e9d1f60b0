// Package raysim serves the Ray dashboard's Serve REST API for clusters that do not run
// Ray: envtest suites, the local mode and benchmarks. Each simulated cluster is a real HTTP
// server; a Registry creates one per RayCluster on demand and is itself a
// dashboard.Resolver, so the controller reaches simulators exactly as it reaches real heads.
//
// Behaviour follows Ray: a submitted config is validated like ServeDeploySchema (an invalid
// one gets HTTP 400 with the pydantic error), applications whose config changed go DEPLOYING
// and then RUNNING after a delay, applications missing from a config are removed, a change
// of target_capacity alone does not redeploy, and every submission is recorded.
//
// Each simulated dashboard serves the Ray Jobs API too (jobs.go): jobs go PENDING, RUNNING
// and SUCCEEDED after configurable delays or end as scripted, and every submission is
// recorded. submitter.go parses the command of a RayJob's submitter pod so the harness can
// run it against these simulators.
package raysim

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/types"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/dashboard"
)

// Options tune a simulated dashboard.
type Options struct {
	// DeployDelay is how long a (re)deployed application stays DEPLOYING before RUNNING.
	DeployDelay time.Duration
	// Outcome, when set, decides the final status of an application once DeployDelay has
	// passed: return "" for RUNNING, or e.g. DEPLOY_FAILED / UNHEALTHY with a message.
	Outcome func(cluster types.NamespacedName, app App) (status, message string)
	// Now is the clock (nil: time.Now).
	Now func() time.Time
	// RequireToken, when set, gives the token a cluster's dashboard requires ("": none), as
	// Ray's token authentication does: requests without it get HTTP 401.
	RequireToken func(cluster types.NamespacedName) string
	// Jobs tunes the simulated Jobs API.
	Jobs JobOptions
}

// App is a deployed application as Outcome sees it.
type App struct {
	Name       string
	ImportPath string
	Config     map[string]any
}

// Submission is one accepted PUT.
type Submission struct {
	Time time.Time
	// Config is the body as submitted.
	Config json.RawMessage
	// Applications are the application names in it.
	Applications []string
	// TargetCapacity is its target_capacity (nil: not set).
	TargetCapacity *float64
}

// ConfigWithoutTargetCapacity is the submitted config minus target_capacity, re-encoded
// canonically, so two submissions that differ only in capacity compare equal.
func (s Submission) ConfigWithoutTargetCapacity() string {
	var m map[string]any
	if err := json.Unmarshal(s.Config, &m); err != nil {
		return string(s.Config)
	}
	delete(m, "target_capacity")
	b, _ := json.Marshal(m)
	return string(b)
}

type appState struct {
	cfg        appConfig
	rawJSON    string
	deployedAt time.Time
	outcome    string
	outcomeMsg string
	// forced is a status set by a test; it wins until cleared or the app is redeployed.
	forced, forcedMsg string
	// previous is the deployment this one replaces (nil: a new application). Serve keeps
	// the old replicas answering while a changed config deploys, so the proxy serves with
	// them until this one is no longer DEPLOYING.
	previous *appState
}

// Server is one simulated Ray head's dashboard.
type Server struct {
	cluster types.NamespacedName
	opts    Options

	mu             sync.Mutex
	apps           map[string]*appState
	order          []string
	targetCapacity *float64
	submissions    []Submission
	unavailable    bool
	proxyDown      bool
	fault          Fault
	held           chan struct{}        // closed to let requests held by FaultHang go
	requests       atomic.Int64         // every request, faulty ones included
	proxyChecks    atomic.Int64         // requests for the proxy's health, faulty ones included
	unauthorized   atomic.Int64         // requests refused for a missing or wrong token
	track          func() (done func()) // counts requests in progress (set by a Registry)
	onSubmit       func(types.NamespacedName, Submission)
	userErrors     userErrors               // share of user requests the Serve proxy fails (usererrors.go)
	jobs           jobState                 // the Jobs API (jobs.go), guarded by mu
	session        string                   // the Ray session's name, in every Serve series
	metrics        map[string]*serveMetrics // Serve's series by node (servemetrics.go), guarded by mu

	listener net.Listener
	http     *http.Server
	url      string
}

// NewServer starts a simulated dashboard for cluster on a free local port.
func NewServer(cluster types.NamespacedName, opts Options) (*Server, error) {
	s := newUnstarted(cluster, opts)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("simulated dashboard for %s: %w", cluster, err)
	}
	s.listener = l
	s.url = "http://" + l.Addr().String()
	s.http = &http.Server{Handler: s, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = s.http.Serve(l) }()
	return s, nil
}

func newUnstarted(cluster types.NamespacedName, opts Options) *Server {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Server{cluster: cluster, opts: opts, apps: map[string]*appState{}, held: make(chan struct{}), session: sessionName(time.Now())}
}

// URL is the dashboard's base URL.
func (s *Server) URL() string { return s.url }

// Close stops the HTTP server (requests held by FaultHang are let go).
func (s *Server) Close() error {
	s.releaseHeld()
	if s.http == nil {
		return nil
	}
	return s.http.Close()
}

// ServeHTTP serves GET and PUT /api/serve/applications/, the Jobs API (jobs_http.go) and,
// as the head's Serve proxy would on the serve port, GET /-/healthz.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.requests.Add(1)
	s.mu.Lock()
	track := s.track
	s.mu.Unlock()
	if track != nil {
		defer track()()
	}
	proxy := r.URL.Path == dashboard.ProxyHealthPath
	if proxy {
		s.proxyChecks.Add(1)
	}
	jobs := isJobsAPIPath(r.URL.Path)
	if !proxy && !jobs && strings.TrimRight(r.URL.Path, "/") != strings.TrimRight(dashboard.ApplicationsPath, "/") {
		http.NotFound(w, r)
		return
	}
	if !s.authorized(w, r) {
		return
	}
	s.mu.Lock()
	down, fault, proxyDown := s.unavailable, s.fault, s.proxyDown
	s.mu.Unlock()
	if fault.Mode != FaultNone {
		s.misbehave(w, r, fault)
		return
	}
	if proxy {
		s.proxyHealth(w, r, proxyDown)
		return
	}
	if down {
		http.Error(w, "Failed to get a response from the controller. The GCS may be down, please retry later.", http.StatusServiceUnavailable)
		return
	}
	if jobs {
		s.serveJobs(w, r)
		return
	}
	switch r.Method {
	case http.MethodGet:
		s.get(w, r)
	case http.MethodPut:
		s.put(w, r)
	default:
		w.Header().Set("Allow", "GET, PUT")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
	}
}

func (s *Server) get(w http.ResponseWriter, r *http.Request) {
	if t := r.URL.Query().Get("api_type"); t != "" && t != "declarative" && t != "imperative" {
		http.Error(w, fmt.Sprintf("Invalid 'api_type' value: '%s'. Must be one of: imperative, declarative", t), http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(s.Details())
}

func (s *Server) put(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, 8<<20))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var doc map[string]any
	if err := json.Unmarshal(body, &doc); err != nil {
		// Ray's handler lets the JSON decode error escape to its generic 500 handler.
		http.Error(w, "Traceback (most recent call last):\njson.decoder.JSONDecodeError: "+err.Error(), http.StatusInternalServerError)
		return
	}
	cfg, errs := parseDeployConfig(doc)
	if len(errs) > 0 {
		http.Error(w, validationError(errs), http.StatusBadRequest)
		return
	}
	sub := s.apply(cfg, body)
	s.mu.Lock()
	hook := s.onSubmit
	s.mu.Unlock()
	if hook != nil {
		hook(s.cluster, sub)
	}
	w.WriteHeader(http.StatusOK)
}

// apply deploys a valid config: new or changed applications restart DEPLOYING, others keep
// their state, missing ones are removed.
func (s *Server) apply(cfg *deployConfig, body []byte) Submission {
	now := s.opts.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	next := map[string]*appState{}
	var order []string
	for _, a := range cfg.Applications {
		raw, _ := json.Marshal(a.Raw)
		st, ok := s.apps[a.Name]
		if !ok || st.rawJSON != string(raw) {
			var prev *appState
			if ok {
				prev = s.replacedLocked(st, now)
			}
			st = &appState{cfg: a, rawJSON: string(raw), deployedAt: now, previous: prev}
			if s.opts.Outcome != nil {
				st.outcome, st.outcomeMsg = s.opts.Outcome(s.cluster, App{Name: a.Name, ImportPath: a.ImportPath, Config: a.Raw})
			}
		}
		next[a.Name] = st
		order = append(order, a.Name)
	}
	s.apps, s.order, s.targetCapacity = next, order, cfg.TargetCapacity
	sub := Submission{Time: now, Config: append(json.RawMessage(nil), body...), Applications: order, TargetCapacity: cfg.TargetCapacity}
	s.submissions = append(s.submissions, sub)
	return sub
}

// Details is what GET /api/serve/applications/ returns now.
func (s *Server) Details() dashboard.ServeDetails {
	now := s.opts.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	d := dashboard.ServeDetails{Applications: map[string]dashboard.Application{}, DeployMode: "MULTI_APP", ProxyLocation: "EveryNode"}
	if s.targetCapacity != nil {
		tc := *s.targetCapacity
		d.TargetCapacity = &tc
	}
	for _, name := range s.order {
		st := s.apps[name]
		status, msg := s.statusLocked(st, now)
		app := dashboard.Application{
			Name: name, RoutePrefix: st.cfg.RoutePrefix, Status: status, Message: msg,
			LastDeploy: float64(st.deployedAt.UnixNano()) / 1e9, Source: "declarative",
			Deployments: map[string]dashboard.Deployment{}, DeployedAppConfig: json.RawMessage(st.rawJSON),
		}
		for _, dep := range deploymentNames(st.cfg) {
			app.Deployments[dep] = dashboard.Deployment{Name: dep, Status: deploymentStatus(status), StatusTrigger: "CONFIG_UPDATE_COMPLETED", Message: msg}
		}
		d.Applications[name] = app
	}
	return d
}

// replacedLocked is the deployment that keeps serving when st is replaced: st itself, or,
// when st is still DEPLOYING, the one st was replacing (a config changed twice in a row
// leaves the replicas of the last one that finished deploying).
func (s *Server) replacedLocked(st *appState, now time.Time) *appState {
	if status, _ := s.statusLocked(st, now); status == rayv1.ApplicationStatusDeploying && st.previous != nil {
		return st.previous
	}
	p := *st
	p.previous = nil
	return &p
}

// proxyStatusLocked is the status the Serve proxy acts on: the application's, except that
// while a redeploy is DEPLOYING the previous replicas still answer when they were RUNNING.
func (s *Server) proxyStatusLocked(st *appState, now time.Time) string {
	status, _ := s.statusLocked(st, now)
	if status == rayv1.ApplicationStatusDeploying && st.previous != nil {
		if prev, _ := s.statusLocked(st.previous, now); prev == rayv1.ApplicationStatusRunning {
			return prev
		}
	}
	return status
}

func (s *Server) statusLocked(st *appState, now time.Time) (string, string) {
	switch {
	case st.forced != "":
		return st.forced, st.forcedMsg
	case now.Sub(st.deployedAt) < s.opts.DeployDelay:
		return rayv1.ApplicationStatusDeploying, ""
	case st.outcome != "":
		return st.outcome, st.outcomeMsg
	}
	return rayv1.ApplicationStatusRunning, ""
}

func deploymentNames(a appConfig) []string {
	if len(a.Deployments) > 0 {
		return a.Deployments
	}
	// An application config need not list its deployments; the ingress deployment is then
	// named after the bound object, the last segment of the import path.
	p := a.ImportPath
	if i := strings.LastIndexAny(p, ".:"); i >= 0 {
		p = p[i+1:]
	}
	return []string{p}
}

func deploymentStatus(app string) string {
	switch app {
	case rayv1.ApplicationStatusRunning:
		return rayv1.DeploymentStatusHealthy
	case rayv1.ApplicationStatusDeploying:
		return rayv1.DeploymentStatusUpdating
	default:
		return rayv1.DeploymentStatusUnhealthy
	}
}

// SetApplicationStatus forces an application's status (e.g. UNHEALTHY) until
// ClearApplicationStatus or a redeploy of that application.
func (s *Server) SetApplicationStatus(app, status, message string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	st, ok := s.apps[app]
	if !ok {
		return fmt.Errorf("cluster %s has no application %q", s.cluster, app)
	}
	st.forced, st.forcedMsg = status, message
	return nil
}

// ClearApplicationStatus undoes SetApplicationStatus.
func (s *Server) ClearApplicationStatus(app string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if st, ok := s.apps[app]; ok {
		st.forced, st.forcedMsg = "", ""
	}
}

// Restart simulates a head pod restart without GCS fault tolerance: every application,
// the target capacity and every job are forgotten (the submission histories are kept).
func (s *Server) Restart() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.apps, s.order, s.targetCapacity = map[string]*appState{}, nil, nil
	s.forgetJobsLocked()
}

// proxyHealth answers as Ray's proxy: 200 "success", or 503 while it is draining.
func (s *Server) proxyHealth(w http.ResponseWriter, r *http.Request, down bool) {
	if r.Method != http.MethodGet {
		w.Header().Set("Allow", "GET")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	if down {
		http.Error(w, "This node is being drained.", http.StatusServiceUnavailable)
		return
	}
	_, _ = io.WriteString(w, "success")
}

// ProxyChecks is how often the head's Serve proxy health was asked for.
func (s *Server) ProxyChecks() int64 { return s.proxyChecks.Load() }

// SetProxyHealthy makes the head's Serve proxy health check fail (false) or pass again
// (true, the start state), whatever the dashboard answers.
func (s *Server) SetProxyHealthy(healthy bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.proxyDown = !healthy
}

// SetUnavailable makes every request fail with HTTP 503 (GCS down) until called with false.
func (s *Server) SetUnavailable(down bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.unavailable = down
}

// Submissions returns every accepted PUT, oldest first.
func (s *Server) Submissions() []Submission {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.submissions)
}

// ApplicationStatuses returns each application's current status.
func (s *Server) ApplicationStatuses() map[string]string {
	out := map[string]string{}
	for name, app := range s.Details().Applications {
		out[name] = app.Status
	}
	return out
}

// AllRunning reports whether the cluster has applications and all of them are RUNNING.
func (s *Server) AllRunning() bool {
	st := s.ApplicationStatuses()
	if len(st) == 0 {
		return false
	}
	for _, v := range st {
		if v != rayv1.ApplicationStatusRunning {
			return false
		}
	}
	return true
}

// TargetCapacity is the target_capacity in effect (nil: unset).
func (s *Server) TargetCapacity() *float64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.targetCapacity == nil {
		return nil
	}
	v := *s.targetCapacity
	return &v
}

// Registry holds one simulated dashboard per RayCluster, created on first use. It is a
// dashboard.Resolver, and Handler serves every simulator under /<namespace>/<name>/ for an
// operator in another process (dashboard.TemplateResolver "http://host:port/{namespace}/{name}").
type Registry struct {
	opts Options

	mu      sync.Mutex
	servers map[types.NamespacedName]*Server
	heads   map[types.NamespacedName]dashboard.Head
	faults  map[string]Fault // by namespace, for simulators made from now on too
	// requests holds, by namespace, when recent requests started and ended.
	requests map[string]*requestLog
	onSubmit []func(types.NamespacedName, Submission)
	closed   bool
}

// NewRegistry returns an empty registry whose simulators use opts.
func NewRegistry(opts Options) *Registry {
	return &Registry{opts: opts, servers: map[types.NamespacedName]*Server{}, heads: map[types.NamespacedName]dashboard.Head{}, faults: map[string]Fault{},
		requests: map[string]*requestLog{}}
}

// DashboardURL implements dashboard.Resolver, starting the cluster's simulator if needed.
// It remembers the head the controller named, so tests can check which pod it trusted.
func (r *Registry) DashboardURL(_ context.Context, h dashboard.Head) (string, error) {
	s, err := r.ensure(h.Cluster)
	if err != nil {
		return "", err
	}
	r.Remember(h)
	return s.URL(), nil
}

// LastHead is the head the controller last resolved for a cluster (false: never).
func (r *Registry) LastHead(c types.NamespacedName) (dashboard.Head, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	h, ok := r.heads[c]
	return h, ok
}

func (r *Registry) ensure(c types.NamespacedName) (*Server, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil, errors.New("simulator registry is closed")
	}
	if s, ok := r.servers[c]; ok {
		return s, nil
	}
	s, err := NewServer(c, r.opts)
	if err != nil {
		return nil, err
	}
	s.onSubmit = r.dispatch
	s.mu.Lock()
	s.track = func() func() { return r.enter(c.Namespace) }
	s.mu.Unlock()
	if f, ok := r.faults[c.Namespace]; ok {
		s.SetFault(f)
	}
	r.servers[c] = s
	return s, nil
}

func (r *Registry) dispatch(c types.NamespacedName, sub Submission) {
	r.mu.Lock()
	hooks := slices.Clone(r.onSubmit)
	r.mu.Unlock()
	for _, h := range hooks {
		h(c, sub)
	}
}

// OnSubmit registers a function called (synchronously, before the PUT is answered) for
// every accepted submission to any simulator.
func (r *Registry) OnSubmit(f func(types.NamespacedName, Submission)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.onSubmit = append(r.onSubmit, f)
}

// Server returns the cluster's simulator, or nil if the controller never asked for it.
func (r *Registry) Server(c types.NamespacedName) *Server {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.servers[c]
}

// Handler serves /<namespace>/<name>/api/serve/applications/ from the matching simulator,
// creating it on demand.
func (r *Registry) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		parts := strings.SplitN(strings.TrimPrefix(req.URL.Path, "/"), "/", 3)
		if len(parts) < 3 || parts[0] == "" || parts[1] == "" {
			http.NotFound(w, req)
			return
		}
		s, err := r.ensure(types.NamespacedName{Namespace: parts[0], Name: parts[1]})
		if err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		sub := req.Clone(req.Context())
		sub.URL.Path = "/" + parts[2]
		s.ServeHTTP(w, sub)
	})
}

// Close stops every simulator.
func (r *Registry) Close() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.closed = true
	for _, s := range r.servers {
		_ = s.Close()
	}
}
