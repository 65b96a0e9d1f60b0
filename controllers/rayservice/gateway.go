package rayservice

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/rayspec"
)

// reconcileGateway keeps, for the incremental strategy, each cluster's serve Service, the
// Gateway and the HTTPRoute whose weights are the status' traffic split, and finds out
// whether the previous step took effect: the Gateway and the route accepted and programmed
// at their current generation, and both clusters running the recorded target capacities.
func (r *Reconciler) reconcileGateway(ctx context.Context, p *pass) error {
	if !r.gatewayAPI {
		return nil
	}
	if !p.incremental() {
		return r.followActive(ctx, p)
	}
	for _, rc := range []*rayv1.RayCluster{p.active, p.pending} {
		if rc != nil {
			if err := r.applyService(ctx, p, clusterServeService(p.svc, rc)); err != nil {
				return err
			}
		}
	}
	className := ""
	if o := p.spec.UpgradeStrategy; o != nil && o.ClusterUpgradeOptions != nil {
		className = o.ClusterUpgradeOptions.GatewayClassName
	}
	var err error
	if p.gw, err = r.applyGateway(ctx, p, gateway(p.svc, className)); err != nil {
		return err
	}
	if p.active == nil {
		p.routeNote = "the HTTPRoute is created once a cluster serves"
		return nil
	}
	split := splitOf(&p.svc.Status)
	backends := []backend{{Cluster: p.active.Name, Port: rayspec.ServePort(&p.active.Spec), Weight: split.ActiveTraffic()}}
	if p.pending != nil {
		backends = append(backends, backend{Cluster: p.pending.Name, Port: rayspec.ServePort(&p.pending.Spec), Weight: split.PendingTraffic})
	}
	var before map[string]int32
	if p.route, before, err = r.applyRoute(ctx, p, httpRoute(p.svc, backends)); err != nil {
		return err
	}
	if p.pending != nil && before != nil && before[p.pending.Name] != split.PendingTraffic && movedLate(split, p.now) {
		// The interval runs from when traffic really moved: a step recorded before an
		// operator restart and applied after it is not followed at once by the next one.
		mt := metav1.NewTime(stampTime(p.now))
		p.svc.Status.PendingServiceStatus.LastTrafficMigratedTime, p.svc.Status.ActiveServiceStatus.LastTrafficMigratedTime = &mt, mt.DeepCopy()
	}
	gwOK, gwNote := gatewayReady(p.gw)
	rtOK, rtNote := routeReady(p.route, p.gw.Name)
	capOK, capNote := capacitiesApplied(p)
	p.routeSettled = gwOK && rtOK && capOK
	p.routeNote = firstNonEmpty(gwNote, rtNote, capNote)
	return nil
}

// capacitiesApplied: each cluster's dashboard accepted the target capacity in the status.
func capacitiesApplied(p *pass) (bool, string) {
	for _, c := range []struct {
		rc *rayv1.RayCluster
		tc *int32
	}{{p.active, p.svc.Status.ActiveServiceStatus.TargetCapacity}, {p.pending, p.svc.Status.PendingServiceStatus.TargetCapacity}} {
		if c.rc == nil || c.tc == nil || p.serve.empty() {
			continue
		}
		rec := submittedOn(c.rc)
		if rec.Hash == "" {
			return false, orDefault(p.serveNote[c.rc.Name], "waiting for the serve config of "+c.rc.Name+" to be accepted")
		}
		if !equalPtr(rec.TargetCapacity, c.tc) {
			return false, fmt.Sprintf("waiting for RayCluster %s to accept target_capacity %d%% (it runs %s)", c.rc.Name, *c.tc, percent(rec.TargetCapacity))
		}
	}
	return true, ""
}

func (r *Reconciler) applyGateway(ctx context.Context, p *pass, want *gwv1.Gateway) (*gwv1.Gateway, error) {
	cur := &gwv1.Gateway{}
	err := r.client.Get(ctx, client.ObjectKeyFromObject(want), cur)
	if apierrors.IsNotFound(err) {
		if err := r.client.Create(ctx, want); err != nil {
			r.warn(p, nil, EventFailedGateway, "CreateGateway", "creating Gateway %s: %v", want.Name, err)
			return nil, fmt.Errorf("creating Gateway %s: %w", want.Name, err)
		}
		return want, nil
	}
	if err != nil {
		return nil, err
	}
	if !ownedBySameController(cur, want) {
		r.warn(p, nil, EventFailedGateway, "UpdateGateway", "Gateway %s exists and is not managed by this RayService", want.Name)
		return nil, fmt.Errorf("gateway %s is not controlled by %s", want.Name, p.svc.Name)
	}
	if equality.Semantic.DeepDerivative(want.Spec, cur.Spec) && len(want.Spec.Listeners) == len(cur.Spec.Listeners) {
		return cur, nil
	}
	cur.Spec = want.Spec
	cur.Labels = merge(cur.Labels, want.Labels)
	if err := r.client.Update(ctx, cur); err != nil {
		r.warn(p, nil, EventFailedGateway, "UpdateGateway", "updating Gateway %s: %v", want.Name, err)
		return nil, fmt.Errorf("updating Gateway %s: %w", want.Name, err)
	}
	return cur, nil
}

// movedLate: the weights are applied more than a second after the step was recorded (the
// operator restarted or was starved in between).
func movedLate(s split, now time.Time) bool {
	return s.LastMigrated != nil && now.Sub(*s.LastMigrated) > time.Second
}

// applyRoute creates or updates the HTTPRoute; on an update it returns the weights the
// route had before.
func (r *Reconciler) applyRoute(ctx context.Context, p *pass, want *gwv1.HTTPRoute) (*gwv1.HTTPRoute, map[string]int32, error) {
	cur := &gwv1.HTTPRoute{}
	err := r.client.Get(ctx, client.ObjectKeyFromObject(want), cur)
	if apierrors.IsNotFound(err) {
		if err := r.client.Create(ctx, want); err != nil {
			r.warn(p, nil, EventFailedGateway, "CreateHTTPRoute", "creating HTTPRoute %s: %v", want.Name, err)
			return nil, nil, fmt.Errorf("creating HTTPRoute %s: %w", want.Name, err)
		}
		return want, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	if !ownedBySameController(cur, want) {
		r.warn(p, nil, EventFailedGateway, "UpdateHTTPRoute", "HTTPRoute %s exists and is not managed by this RayService", want.Name)
		return nil, nil, fmt.Errorf("httproute %s is not controlled by %s", want.Name, p.svc.Name)
	}
	if routeSpecMatches(want, cur) {
		return cur, nil, nil
	}
	before := rayspec.RouteWeights(cur)
	cur.Spec = want.Spec
	cur.Labels = merge(cur.Labels, want.Labels)
	if err := r.client.Update(ctx, cur); err != nil {
		return nil, nil, fmt.Errorf("updating HTTPRoute %s: %w", want.Name, err)
	}
	return cur, before, nil
}

// routeSpecMatches: every field raygate sets has its value (the API server's defaults
// aside), and no backend, rule or parent is missing or extra — DeepDerivative alone lets a
// shorter list match, which would keep a removed backend.
func routeSpecMatches(want, cur *gwv1.HTTPRoute) bool {
	if !equality.Semantic.DeepDerivative(want.Spec, cur.Spec) || len(want.Spec.ParentRefs) != len(cur.Spec.ParentRefs) || len(want.Spec.Rules) != len(cur.Spec.Rules) {
		return false
	}
	for i := range want.Spec.Rules {
		if len(want.Spec.Rules[i].BackendRefs) != len(cur.Spec.Rules[i].BackendRefs) || len(want.Spec.Rules[i].Matches) != len(cur.Spec.Rules[i].Matches) {
			return false
		}
	}
	return true
}

func firstNonEmpty(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}

// followActive keeps the HTTPRoute of a RayService that left the incremental strategy on
// its active cluster, so clients still sending traffic through the Gateway are not cut off
// when the next upgrade deletes the cluster the route pointed at. Nothing is created.
func (r *Reconciler) followActive(ctx context.Context, p *pass) error {
	if p.active == nil {
		return nil
	}
	cur := &gwv1.HTTPRoute{}
	if err := r.client.Get(ctx, client.ObjectKey{Namespace: p.svc.Namespace, Name: rayspec.HTTPRouteName(p.svc.Name)}, cur); err != nil {
		return client.IgnoreNotFound(err)
	}
	if !metav1.IsControlledBy(cur, p.svc) {
		return nil
	}
	if err := r.applyService(ctx, p, clusterServeService(p.svc, p.active)); err != nil {
		return err
	}
	_, _, err := r.applyRoute(ctx, p, httpRoute(p.svc, []backend{{Cluster: p.active.Name, Port: rayspec.ServePort(&p.active.Spec), Weight: 100}}))
	return err
}
