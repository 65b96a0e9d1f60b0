package framework

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	rayscheme "github.com/raygate/raygate/apis/scheme"
	"github.com/raygate/raygate/internal/gatewayapi"
)

// GatewayOptions configure the fake gateway controller.
type GatewayOptions struct {
	// ControllerName is the GatewayClass controllerName it implements
	// (default "raygate.ray.io/fake-gateway-controller").
	ControllerName string
	// ClassName, when set, is a GatewayClass created for ControllerName.
	ClassName string
	// Delay is how long a new Gateway or HTTPRoute generation waits before its status says
	// it was accepted and programmed.
	Delay time.Duration
}

// Gateway plays a Gateway API implementation for envtest: for Gateways and HTTPRoutes whose
// GatewayClass names ControllerName it writes the status a real one would — GatewayClass
// Accepted; Gateway Accepted and Programmed with an address; HTTPRoute parent status
// Accepted and ResolvedRefs (False with BackendNotFound when a backend Service is missing)
// — each with the observed generation. Pause freezes it, so a test can check that nothing
// moves while the route is not programmed.
type Gateway struct {
	opts   GatewayOptions
	c      client.Client
	cancel context.CancelFunc
	done   chan struct{}

	mu     sync.Mutex
	paused bool
	seen   map[types.UID]seenGen
}

type seenGen struct {
	gen int64
	at  time.Time
}

// StartGateway starts the fake gateway controller against the control plane at cfg (the
// Gateway API CRDs must be installed). Stop it when done.
func StartGateway(cfg *rest.Config, opts GatewayOptions) (*Gateway, error) {
	if opts.ControllerName == "" {
		opts.ControllerName = "raygate.ray.io/fake-gateway-controller"
	}
	mgr, err := ctrl.NewManager(rest.CopyConfig(cfg), ctrl.Options{
		Scheme: rayscheme.New(), Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0",
	})
	if err != nil {
		return nil, err
	}
	g := &Gateway{opts: opts, c: mgr.GetClient(), seen: map[types.UID]seenGen{}}
	opt := controller.Options{MaxConcurrentReconciles: 2, SkipNameValidation: ptr.To(true)}
	if err := ctrl.NewControllerManagedBy(mgr).Named("fake-gatewayclass").For(&gwv1.GatewayClass{}).WithOptions(opt).Complete(reconcileFunc(g.reconcileClass)); err != nil {
		return nil, err
	}
	if err := ctrl.NewControllerManagedBy(mgr).Named("fake-gateway").For(&gwv1.Gateway{}).WithOptions(opt).Complete(reconcileFunc(g.reconcileGateway)); err != nil {
		return nil, err
	}
	// Routes are looked at again when a backend Service appears or goes, and when a Gateway
	// changes (its allowedRoutes decide which routes attach).
	if err := ctrl.NewControllerManagedBy(mgr).Named("fake-httproute").For(&gwv1.HTTPRoute{}).
		Watches(&corev1.Service{}, handler.EnqueueRequestsFromMapFunc(g.routesInNamespace)).
		Watches(&gwv1.Gateway{}, handler.EnqueueRequestsFromMapFunc(g.allRoutes(&gwv1.HTTPRouteList{}))).
		WithOptions(opt).Complete(reconcileFunc(g.reconcileRoute)); err != nil {
		return nil, err
	}
	// GRPCRoutes only where their CRD is installed (a control plane may lack it).
	if _, err := mgr.GetRESTMapper().RESTMapping(schema.GroupKind{Group: gwv1.GroupName, Kind: "GRPCRoute"}, gwv1.GroupVersion.Version); err == nil {
		if err := ctrl.NewControllerManagedBy(mgr).Named("fake-grpcroute").For(&gwv1.GRPCRoute{}).
			Watches(&corev1.Service{}, handler.EnqueueRequestsFromMapFunc(g.grpcRoutesInNamespace)).
			Watches(&gwv1.Gateway{}, handler.EnqueueRequestsFromMapFunc(g.allRoutes(&gwv1.GRPCRouteList{}))).
			WithOptions(opt).Complete(reconcileFunc(g.reconcileGRPCRoute)); err != nil {
			return nil, err
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	g.cancel, g.done = cancel, make(chan struct{})
	go func() {
		defer close(g.done)
		_ = mgr.Start(ctx)
	}()
	if !mgr.GetCache().WaitForCacheSync(ctx) {
		cancel()
		return nil, fmt.Errorf("fake gateway controller: cache did not sync")
	}
	if opts.ClassName != "" {
		gc := &gwv1.GatewayClass{ObjectMeta: metav1.ObjectMeta{Name: opts.ClassName}, Spec: gwv1.GatewayClassSpec{ControllerName: gwv1.GatewayController(opts.ControllerName)}}
		if err := g.c.Create(ctx, gc); err != nil && !apierrors.IsAlreadyExists(err) {
			g.Stop()
			return nil, err
		}
	}
	return g, nil
}

// Stop stops the controller and waits for it.
func (g *Gateway) Stop() {
	g.cancel()
	<-g.done
}

// Pause stops (true) or resumes (false) status updates; resuming catches up at once.
func (g *Gateway) Pause(paused bool) {
	// Reconciles requeue every 100 ms while paused, so resuming takes effect promptly.
	g.mu.Lock()
	defer g.mu.Unlock()
	g.paused = paused
}

type reconcileFunc func(context.Context, ctrl.Request) (ctrl.Result, error)

func (f reconcileFunc) Reconcile(ctx context.Context, r ctrl.Request) (ctrl.Result, error) {
	return f(ctx, r)
}

// wait says whether a generation must still wait (paused, or within Delay of first sight).
func (g *Gateway) wait(uid types.UID, gen int64) (time.Duration, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.paused {
		return 100 * time.Millisecond, true
	}
	s, ok := g.seen[uid]
	if !ok || s.gen != gen {
		s = seenGen{gen: gen, at: time.Now()}
		g.seen[uid] = s
	}
	if left := g.opts.Delay - time.Since(s.at); left > 0 {
		return left, true
	}
	return 0, false
}

func (g *Gateway) ours(ctx context.Context, class gwv1.ObjectName) bool {
	var gc gwv1.GatewayClass
	if err := g.c.Get(ctx, types.NamespacedName{Name: string(class)}, &gc); err != nil {
		return false
	}
	return string(gc.Spec.ControllerName) == g.opts.ControllerName
}

func (g *Gateway) reconcileClass(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var gc gwv1.GatewayClass
	if err := g.c.Get(ctx, req.NamespacedName, &gc); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if string(gc.Spec.ControllerName) != g.opts.ControllerName {
		return ctrl.Result{}, nil
	}
	if c := meta.FindStatusCondition(gc.Status.Conditions, string(gwv1.GatewayClassConditionStatusAccepted)); c != nil && c.Status == metav1.ConditionTrue && c.ObservedGeneration == gc.Generation {
		return ctrl.Result{}, nil
	}
	meta.SetStatusCondition(&gc.Status.Conditions, metav1.Condition{Type: string(gwv1.GatewayClassConditionStatusAccepted), Status: metav1.ConditionTrue,
		Reason: string(gwv1.GatewayClassReasonAccepted), Message: "handled by the fake gateway controller", ObservedGeneration: gc.Generation})
	return ctrl.Result{}, g.c.Status().Update(ctx, &gc)
}

func (g *Gateway) reconcileGateway(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var gw gwv1.Gateway
	if err := g.c.Get(ctx, req.NamespacedName, &gw); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !g.ours(ctx, gw.Spec.GatewayClassName) {
		return ctrl.Result{}, nil
	}
	if d, wait := g.wait(gw.UID, gw.Generation); wait {
		return ctrl.Result{RequeueAfter: d}, nil
	}
	next := gw.DeepCopy()
	for _, t := range []string{string(gwv1.GatewayConditionAccepted), string(gwv1.GatewayConditionProgrammed)} {
		meta.SetStatusCondition(&next.Status.Conditions, metav1.Condition{Type: t, Status: metav1.ConditionTrue, Reason: t,
			Message: "fake gateway controller", ObservedGeneration: gw.Generation})
	}
	next.Status.Addresses = []gwv1.GatewayStatusAddress{{Type: ptr.To(gwv1.IPAddressType), Value: "10.96.255.1"}}
	next.Status.Listeners = nil
	for _, l := range gw.Spec.Listeners {
		ls := gwv1.ListenerStatus{Name: l.Name, SupportedKinds: []gwv1.RouteGroupKind{
			{Group: ptr.To(gwv1.Group(gwv1.GroupName)), Kind: "HTTPRoute"}, {Group: ptr.To(gwv1.Group(gwv1.GroupName)), Kind: "GRPCRoute"}}}
		for _, t := range []string{string(gwv1.ListenerConditionAccepted), string(gwv1.ListenerConditionProgrammed), string(gwv1.ListenerConditionResolvedRefs)} {
			meta.SetStatusCondition(&ls.Conditions, metav1.Condition{Type: t, Status: metav1.ConditionTrue, Reason: t, ObservedGeneration: gw.Generation})
		}
		next.Status.Listeners = append(next.Status.Listeners, ls)
	}
	if equalGatewayStatus(gw.Status, next.Status) {
		return ctrl.Result{}, nil
	}
	return ctrl.Result{}, g.c.Status().Update(ctx, next)
}

func (g *Gateway) reconcileRoute(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var rt gwv1.HTTPRoute
	if err := g.c.Get(ctx, req.NamespacedName, &rt); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if d, wait := g.wait(rt.UID, rt.Generation); wait {
		return ctrl.Result{RequeueAfter: d}, nil
	}
	var backends []gwv1.ObjectName
	for _, r := range rt.Spec.Rules {
		for _, b := range r.BackendRefs {
			backends = append(backends, b.Name)
		}
	}
	next := rt.DeepCopy()
	next.Status.Parents = g.parents(ctx, gatewayapi.KindHTTPRoute, rt.Namespace, rt.Generation, rt.Spec.ParentRefs, rt.Spec.Hostnames, backends)
	if equalRouteStatus(rt.Status.RouteStatus, next.Status.RouteStatus) {
		return ctrl.Result{}, nil
	}
	return ctrl.Result{}, g.c.Status().Update(ctx, next)
}

func (g *Gateway) reconcileGRPCRoute(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var rt gwv1.GRPCRoute
	if err := g.c.Get(ctx, req.NamespacedName, &rt); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if d, wait := g.wait(rt.UID, rt.Generation); wait {
		return ctrl.Result{RequeueAfter: d}, nil
	}
	var backends []gwv1.ObjectName
	for _, r := range rt.Spec.Rules {
		for _, b := range r.BackendRefs {
			backends = append(backends, b.Name)
		}
	}
	next := rt.DeepCopy()
	next.Status.Parents = g.parents(ctx, gatewayapi.KindGRPCRoute, rt.Namespace, rt.Generation, rt.Spec.ParentRefs, rt.Spec.Hostnames, backends)
	if equalRouteStatus(rt.Status.RouteStatus, next.Status.RouteStatus) {
		return ctrl.Result{}, nil
	}
	return ctrl.Result{}, g.c.Status().Update(ctx, next)
}

// parents is a route's parent status: for each parent Gateway of a class this controller
// implements (in the parentRef's namespace, else the route's), Accepted — False with
// NotAllowedByListeners (or NoMatchingListenerHostname) when the Gateway's listeners do not
// admit the route, as a real implementation decides from allowedRoutes — and ResolvedRefs
// (False with BackendNotFound when a backend Service is missing).
func (g *Gateway) parents(ctx context.Context, kind, ns string, gen int64, refs []gwv1.ParentReference, hostnames []gwv1.Hostname, backends []gwv1.ObjectName) []gwv1.RouteParentStatus {
	resolved, why := metav1.ConditionTrue, ""
	for _, b := range backends {
		var s corev1.Service
		if err := g.c.Get(ctx, types.NamespacedName{Namespace: ns, Name: string(b)}, &s); err != nil {
			resolved, why = metav1.ConditionFalse, fmt.Sprintf("backend Service %s not found", b)
		}
	}
	route := gatewayapi.Route{Kind: kind, Namespace: ns}
	for _, h := range hostnames {
		route.Hostnames = append(route.Hostnames, string(h))
	}
	var nsMeta corev1.Namespace
	if err := g.c.Get(ctx, types.NamespacedName{Name: ns}, &nsMeta); err == nil {
		route.NamespaceLabels, route.LabelsKnown = nsMeta.Labels, true
	}
	var parents []gwv1.RouteParentStatus
	for _, ref := range refs {
		gwNS := ns
		if ref.Namespace != nil {
			gwNS = string(*ref.Namespace)
		}
		var gw gwv1.Gateway
		if err := g.c.Get(ctx, types.NamespacedName{Namespace: gwNS, Name: string(ref.Name)}, &gw); err != nil || !g.ours(ctx, gw.Spec.GatewayClassName) {
			continue
		}
		ps := gwv1.RouteParentStatus{ParentRef: ref, ControllerName: gwv1.GatewayController(g.opts.ControllerName)}
		accepted := metav1.Condition{Type: string(gwv1.RouteConditionAccepted), Status: metav1.ConditionTrue, Reason: string(gwv1.RouteReasonAccepted), ObservedGeneration: gen}
		if v := gatewayapi.Admits(&gw, route); !v.Allowed {
			accepted.Status, accepted.Reason, accepted.Message = metav1.ConditionFalse, v.Reason, v.Message
		}
		meta.SetStatusCondition(&ps.Conditions, accepted)
		reason := string(gwv1.RouteReasonResolvedRefs)
		if resolved == metav1.ConditionFalse {
			reason = string(gwv1.RouteReasonBackendNotFound)
		}
		meta.SetStatusCondition(&ps.Conditions, metav1.Condition{Type: string(gwv1.RouteConditionResolvedRefs), Status: resolved,
			Reason: reason, Message: why, ObservedGeneration: gen})
		parents = append(parents, ps)
	}
	return parents
}

// allRoutes maps a Gateway change to every route of the list's kind.
func (g *Gateway) allRoutes(list client.ObjectList) handler.MapFunc {
	return func(ctx context.Context, _ client.Object) []ctrl.Request {
		l := list.DeepCopyObject().(client.ObjectList)
		if err := g.c.List(ctx, l); err != nil {
			return nil
		}
		var out []ctrl.Request
		_ = meta.EachListItem(l, func(o runtime.Object) error {
			if co, ok := o.(client.Object); ok {
				out = append(out, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(co)})
			}
			return nil
		})
		return out
	}
}

func (g *Gateway) grpcRoutesInNamespace(ctx context.Context, o client.Object) []ctrl.Request {
	var list gwv1.GRPCRouteList
	if err := g.c.List(ctx, &list, client.InNamespace(o.GetNamespace())); err != nil {
		return nil
	}
	out := make([]ctrl.Request, 0, len(list.Items))
	for _, rt := range list.Items {
		out = append(out, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(&rt)})
	}
	return out
}

func (g *Gateway) routesInNamespace(ctx context.Context, o client.Object) []ctrl.Request {
	var list gwv1.HTTPRouteList
	if err := g.c.List(ctx, &list, client.InNamespace(o.GetNamespace())); err != nil {
		return nil
	}
	out := make([]ctrl.Request, 0, len(list.Items))
	for _, rt := range list.Items {
		out = append(out, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(&rt)})
	}
	return out
}

// equalGatewayStatus and equalRouteStatus ignore lastTransitionTime, so an unchanged status
// is not rewritten.
func equalGatewayStatus(a, b gwv1.GatewayStatus) bool {
	return conditionsEqual(a.Conditions, b.Conditions) && len(a.Addresses) == len(b.Addresses) && len(a.Listeners) == len(b.Listeners)
}

func equalRouteStatus(a, b gwv1.RouteStatus) bool {
	if len(a.Parents) != len(b.Parents) {
		return false
	}
	for i := range a.Parents {
		if a.Parents[i].ParentRef.Name != b.Parents[i].ParentRef.Name || !equalPtr(a.Parents[i].ParentRef.Namespace, b.Parents[i].ParentRef.Namespace) || !conditionsEqual(a.Parents[i].Conditions, b.Parents[i].Conditions) {
			return false
		}
	}
	return true
}

func conditionsEqual(a, b []metav1.Condition) bool {
	if len(a) != len(b) {
		return false
	}
	for _, c := range a {
		d := meta.FindStatusCondition(b, c.Type)
		if d == nil || d.Status != c.Status || d.Reason != c.Reason || d.Message != c.Message || d.ObservedGeneration != c.ObservedGeneration {
			return false
		}
	}
	return true
}

func equalPtr[T comparable](a, b *T) bool {
	return (a == nil) == (b == nil) && (a == nil || *a == *b)
}
