package raycluster

import (
	"context"
	"fmt"
	"strings"

	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"

	"github.com/raygate/raygate/internal/owned"
	"github.com/raygate/raygate/internal/owned/ownerref"
	"github.com/raygate/raygate/internal/raypod"
)

// Routes are created, kept in line and deleted like the Ingress; the garbage collector
// removes them with their cluster.
// +kubebuilder:rbac:groups=route.openshift.io,resources=routes,verbs=get;list;watch;create;update;delete

// Events about the dashboard Route (KubeRay's reasons for create and failure).
const (
	EventCreatedRoute = "CreatedRoute"
	EventUpdatedRoute = "UpdatedRoute"
	EventDeletedRoute = "DeletedRoute"
	EventFailedRoute  = "FailedToCreateRoute"
	// EventFailedRouteUpdate is a failed update or delete of the Route.
	EventFailedRouteUpdate = "FailedToReconcileRoute"
	// EventIngressOptionsNotApplied: the cluster sets ingressOptions, which a Route does not
	// take (sent when the Route is created, so it is not repeated every pass).
	EventIngressOptionsNotApplied = "IngressOptionsNotApplied"
)

// Where the API server serves OpenShift's Route (route.openshift.io/v1, found once at start),
// a cluster with headGroupSpec.enableIngress gets its dashboard exposed by the Route
// `<cluster>-head-route` instead of an Ingress, as under KubeRay; the operator's
// USE_INGRESS_ON_OPENSHIFT=true (KubeRay's switch) keeps the Ingress. The Route is built as
// KubeRay builds it (raypod.HeadRoute) and, like the Ingress, kept in line with the cluster
// and deleted when enableIngress is turned off. Switching between the two (a restart after
// the Route API appeared, or the switch flipped) deletes the one no longer used.

// routeKind names the dashboard Route in events and errors.
var routeKind = ownedKind{noun: "route",
	created: EventCreatedRoute, updated: EventUpdatedRoute, deleted: EventDeletedRoute,
	createFailed: EventFailedRoute, changeFailed: EventFailedRouteUpdate}

// Why a Route or an Ingress is deleted.
const (
	whyIngressOff = "enableIngress is no longer true"
	// whyRouteNotAllowed: the admin lists no IngressClass for the namespace, which for a
	// Route (no class, no host) means no dashboard exposure there.
	whyRouteNotAllowed = "the admin's Ingress policy allows no dashboard exposure in this namespace (--allowed-ingress-classes)"
	whyRouteInstead    = "the dashboard is exposed by an OpenShift Route"
	whyIngressInstead  = "the operator runs with USE_INGRESS_ON_OPENSHIFT=true: the dashboard is exposed by an Ingress"
)

// dashboardExposure says how a cluster's dashboard is exposed.
type dashboardExposure struct {
	// routesServed: the API server serves Routes (raygate caches and may own them).
	routesServed bool
	// useRoutes: a Route, not an Ingress, exposes the dashboard.
	useRoutes bool
	// policy is the admin's Ingress policy, which governs the Route too.
	policy raypod.IngressPolicy
}

// exposure is the controller's dashboardExposure from its Config.
func (c Config) exposure() dashboardExposure {
	return dashboardExposure{routesServed: c.Capabilities.Route, useRoutes: c.Capabilities.Route && !c.IngressOnOpenShift, policy: c.Ingress}
}

// reconcileDashboardAccess brings the dashboard's Route or Ingress (the one exposure says)
// to what the cluster asks for, and deletes the other one when the cluster controls it.
func (r *Reconciler) reconcileDashboardAccess(ctx context.Context, p *pass) error {
	e := r.exposure()
	if e.routesServed {
		if err := r.reconcileRoute(ctx, p, e); err != nil {
			return err
		}
	}
	if !e.useRoutes {
		return r.reconcileIngress(ctx, p)
	}
	existing, err := owned.Read(ctx, r.objects(p), client.ObjectKey{Namespace: p.cluster.Namespace, Name: raypod.HeadIngressName(p.cluster.Name)}, &networkingv1.Ingress{})
	if err != nil {
		return err
	}
	c := decideIngress(nil, existing, existing != nil && ownerref.ControlledBy(existing, p.object))
	if c.op == ownerref.Delete {
		c.why = whyRouteInstead
	}
	_, err = r.applyChange(ctx, p, ingressKind, c)
	return err
}

// reconcileRoute creates, corrects or deletes the cluster's dashboard Route.
func (r *Reconciler) reconcileRoute(ctx context.Context, p *pass, e dashboardExposure) error {
	blank := &unstructured.Unstructured{}
	blank.SetGroupVersionKind(raypod.RouteGVK)
	name := raypod.HeadRouteName(p.cluster.Name, p.cluster.Namespace)
	// Routes are unstructured: the manager's cache holds them, its client does not read them.
	existing, err := owned.Read(ctx, r.objects(p).ReadingFrom(r.certReader()), client.ObjectKey{Namespace: p.cluster.Namespace, Name: name}, blank)
	if err != nil {
		return err
	}
	c := planRoute(&p.observation, e, existing)
	if routeRefused(&p.observation, e) {
		// As for a refused Ingress: admission refuses such a spec, but a cluster stored
		// before the policy changed must not be left without a word.
		p.warn(EventIngressNotAllowed, actionCreate, "Not creating route %s: %s", name, whyRouteNotAllowed)
	}
	done, err := r.applyChange(ctx, p, routeKind, c)
	if done && c.op == ownerref.Create {
		if note := ingressOptionsNote(p.cluster); note != "" {
			p.warn(EventIngressOptionsNotApplied, actionCreate, "%s", note)
		}
	}
	return err
}

// ingressOptionsNote says which ingressOptions a cluster exposed by a Route sets in vain
// ("" when none): they describe an Ingress rule, and a Route gets neither host, path nor TLS
// from them, as under KubeRay.
func ingressOptionsNote(rc *rayv1.RayCluster) string {
	o := rc.Spec.HeadGroupSpec.IngressOptions
	if o == nil {
		return ""
	}
	var set []string
	if ptr.Deref(o.Host, "") != "" {
		set = append(set, "host")
	}
	if ptr.Deref(o.Path, "") != "" || o.PathType != nil {
		set = append(set, "path")
	}
	if len(o.TLS) > 0 {
		set = append(set, "tls")
	}
	if len(set) == 0 {
		return ""
	}
	return fmt.Sprintf("The dashboard is exposed by an OpenShift Route, which does not take spec.headGroupSpec.ingressOptions (%s set): "+
		"the router assigns the host; add TLS to the Route itself, or run the operator with USE_INGRESS_ON_OPENSHIFT=true for an Ingress",
		strings.Join(set, ", "))
}

// routeRefused says whether the cluster asks for a dashboard Route that the admin's Ingress
// policy refuses: no --allowed-ingress-classes entry covers its namespace.
func routeRefused(obs *observation, e dashboardExposure) bool {
	return e.useRoutes && raypod.WantsIngress(obs.cluster) && !e.policy.AllowsExposure(obs.cluster.Namespace)
}

// planRoute is the change to the dashboard Route: one is wanted when Routes expose the
// dashboard, the cluster asks for it and the admin's policy allows it.
func planRoute(obs *observation, e dashboardExposure, existing *unstructured.Unstructured) change {
	var desired *unstructured.Unstructured
	refused := routeRefused(obs, e)
	if e.useRoutes && raypod.WantsIngress(obs.cluster) && !refused {
		desired = raypod.HeadRoute(obs.cluster, e.policy)
	}
	c := changeOf(ownerref.Decide(desired, existing, existing != nil && ownerref.ControlledBy(existing, obs.object), mergeRoute))
	if c.op == ownerref.Delete {
		switch {
		case !e.useRoutes:
			c.why = whyIngressInstead
		case refused:
			c.why = whyRouteNotAllowed
		default:
			c.why = whyIngressOff
		}
	}
	return c
}

// mergeRoute returns the existing Route with raygate's labels, annotations and spec fields,
// or nil when it has them (it is never recreated). The host the router assigned, and what
// others added (TLS, labels, annotations), are kept.
func mergeRoute(existing, desired *unstructured.Unstructured) (*unstructured.Unstructured, bool) {
	return raypod.WithRouteFields(existing, desired), false
}
