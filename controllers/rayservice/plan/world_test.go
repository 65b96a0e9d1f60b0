package plan

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/defaulting"
	"github.com/raygate/raygate/internal/features"
	"github.com/raygate/raygate/internal/rayspec"
	"github.com/raygate/raygate/internal/validation"
)

// world simulates what the controller talks to, for driving plan the way Reconcile does: the
// RayService (spec and stored status), its RayClusters with their pods and Ray dashboards,
// the Services, and a Gateway API implementation. It answers observe like the controller's
// reads, carries out actions like the API server, and can be given faults.
type world struct {
	now        time.Time
	svc        *rayv1.RayService
	version    string
	gatewayAPI bool
	clusters   map[string]*simCluster
	services   map[string]*corev1.Service
	gateway    *gwv1.Gateway
	route      *gwv1.HTTPRoute
	// grpcAPI: the GRPCRoute CRD is installed; grpcRoute is the RayService's GRPCRoute.
	grpcAPI   bool
	grpcRoute *gwv1.GRPCRoute
	// routeRefusal, when set, is the reason the Gateway refuses the routes with
	// (Accepted False), as a Gateway whose allowedRoutes exclude them does.
	routeRefusal string
	created      int // RayClusters created so far, for names
	passes       int // reconciles so far

	// records are the clusters' serve config records (ConfigMaps), by cluster and hash.
	records map[string]map[string]*ServeConfig

	// Faults.
	refuseNext     int  // the dashboards refuse the next serve configs they are sent
	badRequest     bool // ... as a bad request
	failAction     int  // the action with this index of the next pass fails (-1: none)
	conflictStatus bool // the next pass's status write conflicts
	// gatewayPaused: the gateway controller does not accept changes.
	gatewayPaused bool
	// acceptAt is when the gateway controller accepts the Gateway's and the HTTPRoute's
	// latest generation (zero: nothing to accept).
	acceptAt time.Time

	// promGates evaluates metric gates (gates_world_test.go); nil: no Prometheus.
	promGates func(GateAsk) *GateObservation

	// proxyChecks: every read also checks the head's Serve proxy, as the controller's pool
	// does for a head that may serve.
	proxyChecks bool

	want           *Desired // for the spec at wantGeneration
	wantGeneration int64
	// gates and limits are the operator's feature gates and pod bounds.
	gates  features.Gates
	limits validation.Limits
}

// simCluster is a RayCluster with a head and one worker pod and a Ray dashboard.
type simCluster struct {
	rc *rayv1.RayCluster
	// headLabel is the head pod's ray.io/serve label.
	headLabel string
	// readyAt is when the pods are ready (creation or a head restart plus headStart).
	readyAt time.Time
	// dashboardDown: the dashboard refuses connections; dashboardHung: it accepts them and
	// never answers (requests end at the pool's timeout).
	dashboardDown, dashboardHung bool
	// apps are what the dashboard reports; deployedHash the config they run, at runningTC.
	apps         map[string]rayv1.AppStatus
	deployedHash string
	runningTC    *int32
	// head counts head restarts: the dashboard pool forgets what an old head said.
	head int
	// pool is what the controller's dashboard pool knows of this head.
	pool         simPool
	appsDueAt    time.Time // DEPLOYING applications settle then
	brokenConfig bool      // the deployed config's applications fail
	// unhealthy: the applications fail (a fault, whatever the config).
	unhealthy bool
	// proxyDown: the head's Serve proxy fails its health check (when the world checks it).
	proxyDown bool
	// workerUnready: the worker pod is not ready (e.g. still pulling its image).
	workerUnready bool
}

const (
	headStart    = 3 * time.Second
	deployDelay  = 2 * time.Second
	gatewayDelay = 50 * time.Millisecond
	// brokenImportPath is an import path whose applications the dashboards report UNHEALTHY.
	brokenImportPath = "broken.deployment_graph"
)

var allGates = features.Static{features.RayServiceIncrementalUpgrade: true}

func newWorld(svc *rayv1.RayService) *world {
	svc = svc.DeepCopy()
	if svc.UID == "" {
		svc.UID = "svc-uid"
	}
	if svc.Generation == 0 {
		svc.Generation = 1
	}
	return &world{
		now: t0, svc: svc, version: "v1", gatewayAPI: true, failAction: -1, gates: allGates,
		clusters: map[string]*simCluster{}, services: map[string]*corev1.Service{}, records: map[string]map[string]*ServeConfig{},
	}
}

// desired is what the controller would plan for. A spec validation rejects is also planned
// for, with the checks skipped (the pacing and delay readers clamp what they read), so the
// plan is exercised with any integers; the controller itself never plans for such a spec.
func (w *world) desired() *Desired {
	if w.want != nil && w.wantGeneration == w.svc.Generation {
		return w.want
	}
	w.want, w.wantGeneration = w.admitAnyway(), w.svc.Generation
	return w.want
}

func (w *world) admitAnyway() *Desired {
	want := Admit(w.svc, w.gates, w.limits, w.version)
	if want.Invalid == "" {
		return want
	}
	s := w.svc.DeepCopy()
	s.Status = rayv1.RayServiceStatuses{}
	defaulting.RayService(s)
	cfg, err := ParseServeConfig(s.Spec.ServeConfigV2)
	if err != nil {
		return want
	}
	g, err := newGoal(w.svc.Spec.RayClusterSpec, s.Spec.RayClusterSpec)
	if err != nil {
		return want
	}
	return &Desired{Service: s, Goal: g, Strategy: strategyOf(&s.Spec), Pacing: pacingOf(&s.Spec), Serve: cfg, Version: w.version,
		Capped: strings.Join(validation.CapPods(&g.Spec, w.limits), "; ")}
}

// updateSpec changes the RayService's spec, as kubectl apply would.
func (w *world) updateSpec(change func(*rayv1.RayService)) {
	change(w.svc)
	w.svc.Generation++
}

// observe is what the controller's reads would return.
func (w *world) observe(want *Desired) *Observed {
	obs := &Observed{GatewayAPI: w.gatewayAPI, GRPCRouteAPI: w.gatewayAPI && w.grpcAPI, NewClusterName: fmt.Sprintf("svc-%05d", w.created+1), Services: map[string]*corev1.Service{}}
	names := []string{rayspec.ServiceHeadServiceName(w.svc.Name), ServeServiceName(want.Service)}
	for _, name := range slices.Sorted(maps.Keys(w.clusters)) {
		c := w.clusters[name]
		v := &ClusterView{Cluster: c.rc.DeepCopy()}
		if MayServe(c.rc, &w.svc.Status, want) {
			v.Pods = c.pods(w.now)
			if HeadReady(v.Pods) {
				snap := w.snapshot(c)
				v.Serve = snap.view()
				// The controller reads a converged head every minute, or as often as it checks
				// the head's Serve proxy.
				resync := time.Minute
				if w.proxyChecks {
					resync = ProxyRecheck
				}
				if snap.needsRead(w.now, time.Second, resync) {
					c.pool.wantRead = true
					w.kick(c)
				}
			}
			names = append(names, rayspec.ClusterServeServiceName(name))
		}
		obs.Clusters = append(obs.Clusters, v)
	}
	for _, n := range names {
		if s := w.services[n]; s != nil {
			obs.Services[n] = s.DeepCopy()
		}
	}
	if w.gatewayAPI {
		if w.gateway != nil {
			obs.Gateway = w.gateway.DeepCopy()
		}
		if w.route != nil {
			obs.Route = w.route.DeepCopy()
		}
		if w.grpcRoute != nil && obs.GRPCRouteAPI {
			obs.GRPCRoute = w.grpcRoute.DeepCopy()
		}
	}
	return obs
}

func (c *simCluster) ready(now time.Time) bool { return !now.Before(c.readyAt) }

func (c *simCluster) pods(now time.Time) []corev1.Pod {
	ready := corev1.ConditionFalse
	if c.ready(now) {
		ready = corev1.ConditionTrue
	}
	pod := func(suffix, nodeType, serve string) corev1.Pod {
		return corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: c.rc.Name + "-" + suffix, Namespace: c.rc.Namespace, Labels: map[string]string{
				rayv1.ClusterLabelKey: c.rc.Name, rayv1.NodeTypeLabelKey: nodeType, rayv1.ServeLabelKey: serve,
			}},
			Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: ready}}},
		}
	}
	worker := pod("worker", string(rayv1.WorkerNode), "true")
	if c.workerUnready {
		worker.Status.Conditions[0].Status = corev1.ConditionFalse
	}
	return []corev1.Pod{pod("head", string(rayv1.HeadNode), c.headLabel), worker}
}

// reportedApps is the dashboard's answer (never nil: the dashboard answered).
func (c *simCluster) reportedApps() map[string]rayv1.AppStatus {
	out := map[string]rayv1.AppStatus{}
	for n, a := range c.apps {
		if c.unhealthy {
			a = rayv1.AppStatus{Status: rayv1.ApplicationStatusUnhealthy, Message: "replica crashed"}
		}
		out[n] = a
	}
	return out
}

// reconciled is one pass of Reconcile, with what the invariants are judged on.
type reconciled struct {
	index        int // passes before this one
	now          time.Time
	want         *Desired
	stored       rayv1.RayServiceStatuses // before the pass
	obs          *Observed                // before any submission
	out          Plan
	submits      []SubmitServeConfig          // attempted, refused ones included
	recorded     map[string]submitted         // what each cluster had accepted before the pass
	before       trafficView                  // where traffic went before the pass
	after        trafficView                  // ... and after it
	deleted      []string                     // clusters deleted by the pass
	applied      bool                         // every action was carried out
	actionsTried int                          // actions the world was asked to carry out
	written      bool                         // the status was stored
	tcAfter      map[string]*int32            // the target capacity each cluster's dashboard runs after the pass
	obsCopy      *Observed                    // obs deep-copied before planning, to prove plan changes nothing
	clusters     map[string]*rayv1.RayCluster // the clusters before the pass
}

// trafficView is where traffic goes: the HTTPRoute's weights and the serve Service's cluster.
type trafficView struct {
	weights map[string]int32 // nil: no route
	grpc    map[string]int32 // the GRPCRoute's (nil: none)
	serving string           // the serve Service's cluster ("": none)
}

func (w *world) traffic() trafficView {
	t := trafficView{}
	if w.route != nil {
		t.weights = rayspec.RouteWeights(w.route)
	}
	if w.grpcRoute != nil {
		t.grpc = GRPCRouteWeights(w.grpcRoute)
	}
	if s := w.services[ServeServiceName(w.svc)]; s != nil {
		t.serving = s.Spec.Selector[rayv1.ClusterLabelKey]
	}
	return t
}

// reconcile runs one pass as Reconcile does: observe, carry out (cluster actions,
// submissions, the rest), write the status when every action was carried out.
func (w *world) reconcile() (*reconciled, error) {
	want := w.desired()
	w.passes++
	p := &reconciled{index: w.passes - 1, now: w.now, want: want, stored: *w.svc.Status.DeepCopy(), before: w.traffic(), recorded: map[string]submitted{}, clusters: map[string]*rayv1.RayCluster{}}
	for n, c := range w.clusters {
		p.recorded[n] = submittedOn(c.rc)
		p.clusters[n] = c.rc.DeepCopy()
	}
	if want.Invalid == "" {
		p.obs = w.observe(want)
	} else {
		p.obs = &Observed{}
	}
	p.obsCopy = deepCopyObserved(p.obs)
	out, err := w.carryOut(p, want)
	var failed actionFailed
	if err != nil && !errors.As(err, &failed) {
		return p, err
	}
	p.out, p.applied = out, err == nil
	for _, name := range out.Refresh {
		// As Reconcile does: the pool reads the head again.
		if c := w.clusters[name]; c != nil && c.head == c.pool.head {
			c.pool.wantRead = true
			w.kick(c)
		}
	}
	if p.applied && !w.conflictStatus && !equality.Semantic.DeepEqual(w.svc.Status, out.Status) {
		w.svc.Status = *out.Status.DeepCopy()
	}
	p.written = p.applied && !w.conflictStatus
	p.after = w.traffic()
	p.tcAfter = map[string]*int32{}
	for n, c := range w.clusters {
		p.tcAfter[n] = c.runningTC
	}
	w.failAction, w.conflictStatus = -1, false
	return p, nil
}

// advance moves the clock: dashboard requests end, pods start, applications settle, and
// the gateway controller accepts the Gateway and the HTTPRoute at their current generation.
func (w *world) advance(d time.Duration) {
	until := w.now.Add(d)
	for {
		at := w.nextPoolEvent()
		if at.IsZero() || at.After(until) {
			break
		}
		w.now = at
		w.settleApps()
		w.runPool()
	}
	w.now = until
	w.settleApps()
	if w.gatewayPaused || w.acceptAt.IsZero() || w.now.Before(w.acceptAt) {
		return
	}
	w.acceptAt = time.Time{}
	accepted := func(t string, gen int64) metav1.Condition {
		return metav1.Condition{Type: t, Status: metav1.ConditionTrue, Reason: t, ObservedGeneration: gen, LastTransitionTime: metav1.NewTime(w.now)}
	}
	if g := w.gateway; g != nil {
		g.Status.Conditions = []metav1.Condition{accepted(string(gwv1.GatewayConditionAccepted), g.Generation), accepted(string(gwv1.GatewayConditionProgrammed), g.Generation)}
	}
	parentStatus := func(refs []gwv1.ParentReference, gen int64) []gwv1.RouteParentStatus {
		ref := gwv1.ParentReference{Name: gwv1.ObjectName(rayspec.GatewayName(w.svc.Name))}
		if len(refs) > 0 {
			ref = refs[0]
		}
		acc := accepted(string(gwv1.RouteConditionAccepted), gen)
		if w.routeRefusal != "" {
			acc.Status, acc.Reason, acc.Message = metav1.ConditionFalse, w.routeRefusal, "listener http: namespace ns is not allowed"
		}
		return []gwv1.RouteParentStatus{{ParentRef: ref, ControllerName: "example.com/gateway",
			Conditions: []metav1.Condition{acc, accepted(string(gwv1.RouteConditionResolvedRefs), gen)}}}
	}
	if rt := w.route; rt != nil {
		rt.Status.Parents = parentStatus(rt.Spec.ParentRefs, rt.Generation)
	}
	if rt := w.grpcRoute; rt != nil {
		rt.Status.Parents = parentStatus(rt.Spec.ParentRefs, rt.Generation)
	}
}

// settleApps turns DEPLOYING applications RUNNING (or failed) once their time has come.
func (w *world) settleApps() {
	for _, c := range w.clusters {
		if w.now.Before(c.appsDueAt) {
			continue
		}
		for n, a := range c.apps {
			if a.Status == rayv1.ApplicationStatusDeploying {
				a.Status = rayv1.ApplicationStatusRunning
				if c.brokenConfig {
					a = rayv1.AppStatus{Status: rayv1.ApplicationStatusUnhealthy, Message: "ModuleNotFoundError"}
				}
				c.apps[n] = a
			}
		}
	}
}

// restartHead restarts a cluster's head pod: the dashboard forgets the applications, and
// the pool what the old head said.
func (w *world) restartHead(name string) {
	if c := w.clusters[name]; c != nil {
		c.readyAt, c.apps, c.deployedHash, c.runningTC = w.now.Add(headStart), nil, "", nil
		c.head++
	}
}

// step runs one pass and moves the clock to when the plan wants the next one, or earlier
// when a pod starts (the controller watches pods).
func (w *world) step() (*reconciled, error) {
	p, err := w.reconcile()
	if err != nil {
		return p, err
	}
	w.advance(w.untilNext(p.out.Wake.After(w.now, time.Second, time.Minute)))
	return p, nil
}

// untilNext caps a wait at the next change the controller watches: a pod starting, the
// gateway controller accepting the Gateway or the HTTPRoute.
func (w *world) untilNext(d time.Duration) time.Duration {
	next := func(at time.Time) {
		if at.After(w.now) && at.Sub(w.now) < d {
			d = at.Sub(w.now)
		}
	}
	for _, c := range w.clusters {
		next(c.readyAt)
		if r := c.pool.inflight; r != nil {
			next(r.doneAt) // the pool's word brings the controller back
		}
	}
	if !w.gatewayPaused {
		next(w.acceptAt)
	}
	return d
}

func deepCopyObserved(o *Observed) *Observed {
	c := *o
	c.Clusters = nil
	for _, v := range o.Clusters {
		cv := &ClusterView{Cluster: v.Cluster.DeepCopy(), Serve: ServeView{Err: v.Serve.Err, Submission: v.Serve.Submission, Accepted: v.Serve.Accepted, ReadAt: v.Serve.ReadAt, Proxy: v.Serve.Proxy, TargetCapacity: copyPtr(v.Serve.TargetCapacity)}}
		if s := v.Serve.Submission; s != nil {
			c := *s
			cv.Serve.Submission = &c
		}
		if a := v.Serve.Accepted; a != nil {
			c := *a
			cv.Serve.Accepted = &c
		}
		for i := range v.Pods {
			cv.Pods = append(cv.Pods, *v.Pods[i].DeepCopy())
		}
		if v.Serve.Apps != nil {
			cv.Serve.Apps = map[string]rayv1.AppStatus{}
			for n, a := range v.Serve.Apps {
				cv.Serve.Apps[n] = *a.DeepCopy()
			}
		}
		c.Clusters = append(c.Clusters, cv)
	}
	c.Services = map[string]*corev1.Service{}
	for n, s := range o.Services {
		c.Services[n] = s.DeepCopy()
	}
	if o.Gateway != nil {
		c.Gateway = o.Gateway.DeepCopy()
	}
	if o.Route != nil {
		c.Route = o.Route.DeepCopy()
	}
	if o.GRPCRoute != nil {
		c.GRPCRoute = o.GRPCRoute.DeepCopy()
	}
	c.ForeignRecords = maps.Clone(o.ForeignRecords)
	return &c
}
