package plan

import (
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/raygate/raygate/internal/rayspec"
)

// trafficState says whether the last recorded step of an incremental upgrade took effect:
// the Gateway and the HTTPRoute accepted (and programmed) at their current generation, with
// the status' weights, and both clusters running the recorded target capacities.
type trafficState struct {
	Settled bool
	// Note is what the step waits for.
	Note string
	// RouteAccepted is condition RouteAccepted while the routes attach to a shared Gateway
	// (nil: the condition is removed).
	RouteAccepted *metav1.Condition
}

// planTraffic keeps, for the incremental strategy, each cluster's serve Service, the
// Gateway and the HTTPRoute whose weights are the status' traffic split. A RayService that
// left the incremental strategy keeps its route on the active cluster.
func planTraffic(in inputs, r roles, serve serveStates, act *Effects, out *Outcome) (roles, trafficState) {
	if !in.obs.GatewayAPI {
		return r, trafficState{}
	}
	if !in.want.incremental() {
		followActive(in, r, act, out)
		return r, trafficState{}
	}
	svc := in.want.Service
	for _, s := range []slot{r.Active, r.Pending} {
		if hasUID(s) {
			ensureService(in, clusterServeService(svc, s.cluster()), act, out)
		}
	}
	at := in.want.Route
	gwChanged, gwOK := false, true
	if at.Gateway == nil {
		// A shared Gateway is someone else's: raygate neither creates nor writes it.
		gwChanged, gwOK = ensureGateway(in, gateway(svc, in.want.gatewayClassName()), act, out)
	}
	if r.Active.View == nil {
		return r, trafficState{Note: "the HTTPRoute is created once a cluster serves"}
	}
	sp := r.split()
	backends := []backend{{Cluster: r.Active.name(), Port: rayspec.ServePort(&r.Active.cluster().Spec), Weight: sp.ActiveTraffic()}}
	if hasUID(r.Pending) {
		backends = append(backends, backend{Cluster: r.Pending.name(), Port: rayspec.ServePort(&r.Pending.cluster().Spec), Weight: sp.PendingTraffic})
	}
	rtChanged, before, rtOK := ensureRoute(in, attachedHTTPRoute(svc, at, backends), act, out)
	grpcManaged, grpcChanged, grpcOK, _ := planGRPCRoute(in, r, at, backends, act, out)
	if r.Pending.View != nil && before != nil && before[r.Pending.name()] != sp.PendingTraffic && movedLate(sp, in.now) {
		// The interval runs from when traffic really moved: a step recorded before an
		// operator restart and applied after it is not followed at once by the next one.
		mt := metav1.NewTime(stampTime(in.now))
		r.Pending.Status.LastTrafficMigratedTime, r.Active.Status.LastTrafficMigratedTime = &mt, mt.DeepCopy()
	}
	gwReady, gwNote := true, ""
	if at.Gateway == nil {
		gwReady, gwNote = objectReady(gwChanged, gwOK, "Gateway "+rayspec.GatewayName(svc.Name))
		if gwReady {
			gwReady, gwNote = gatewayReady(in.obs.Gateway)
		}
	}
	parent := parentOf(svc, at)
	rtReady, rtNote := objectReady(rtChanged, rtOK, "HTTPRoute "+rayspec.HTTPRouteName(svc.Name))
	if rtReady && at.Gateway == nil {
		rtReady, rtNote = routeReady(in.obs.Route, rayspec.GatewayName(svc.Name))
	} else if rtReady {
		s := parentState("HTTPRoute", in.obs.Route.Name, svc.Namespace, in.obs.Route.Generation, in.obs.Route.Status.Parents, parent)
		rtReady, rtNote = s.Accepted, s.Note
	}
	grpcReady, grpcNote := true, ""
	if grpcManaged {
		// The upgrade never moves traffic through a route that is not accepted.
		grpcReady, grpcNote = objectReady(grpcChanged, grpcOK, "GRPCRoute "+rayspec.GRPCRouteName(svc.Name))
		if grpcReady {
			rt := in.obs.GRPCRoute
			s := parentState("GRPCRoute", rt.Name, svc.Namespace, rt.Generation, rt.Status.Parents, parent)
			grpcReady, grpcNote = s.Accepted, s.Note
		}
	}
	ts := trafficState{}
	if at.Gateway != nil {
		c := sharedRouteAcceptance(in, svc.Name, parent, grpcManaged)
		ts.RouteAccepted = &c
	}
	capOK, capNote := capacitiesApplied(r, serve)
	ts.Settled, ts.Note = gwReady && rtReady && grpcReady && capOK, firstNonEmpty(gwNote, rtNote, grpcNote, capNote)
	return r, ts
}

// hasUID: the slot's cluster exists in the API. A cluster created in this pass has no UID
// yet to own its serve Service, so the next pass creates that and adds it to the route.
func hasUID(s slot) bool { return s.View != nil && s.View.Cluster.UID != "" }

// objectReady: an object written in this pass has not been seen by its controller yet.
func objectReady(changed, ok bool, what string) (bool, string) {
	switch {
	case !ok:
		return false, what + " is not managed by this RayService"
	case changed:
		return false, what + " was just written; waiting for its controller to accept it"
	}
	return true, ""
}

// followActive keeps the HTTPRoute of a RayService that left the incremental strategy on
// its active cluster, so clients still sending traffic through the Gateway are not cut off
// when the next upgrade deletes the cluster the route pointed at. Nothing is created.
func followActive(in inputs, r roles, act *Effects, out *Outcome) {
	if !hasUID(r.Active) || in.obs.Route == nil || !metav1.IsControlledBy(in.obs.Route, in.want.Service) {
		return
	}
	if _, ok := ensureService(in, clusterServeService(in.want.Service, r.Active.cluster()), act, out); !ok {
		return
	}
	ensureRoute(in, attachedHTTPRoute(in.want.Service, in.want.Route, []backend{{Cluster: r.Active.name(), Port: rayspec.ServePort(&r.Active.cluster().Spec), Weight: 100}}), act, out)
}

// capacitiesApplied: each cluster's dashboard accepted the target capacity in the status
// (a cluster that is to run no serve config has none to accept).
func capacitiesApplied(r roles, serve serveStates) (bool, string) {
	for _, s := range []slot{r.Active, r.Pending} {
		tc, st := s.Status.TargetCapacity, serve[s.name()]
		if s.View == nil || tc == nil || st.NothingToRun {
			continue
		}
		if st.Runs.Hash == "" {
			return false, orDefault(st.Note, "waiting for the serve config of "+s.name()+" to be accepted")
		}
		if !st.Runs.runsTC(tc) {
			return false, orDefault(st.Note, fmt.Sprintf("waiting for RayCluster %s to accept target_capacity %d%% (it runs %s)", s.name(), *tc, st.Runs.tcText()))
		}
	}
	return true, ""
}

// movedLate: the weights are applied more than a second after the step was recorded (the
// operator restarted or was starved in between).
func movedLate(s split, now time.Time) bool {
	return s.LastMigrated != nil && now.Sub(*s.LastMigrated) > time.Second
}

// stampTime is the time recorded as lastTrafficMigratedTime. The status keeps whole
// seconds; rounding up (unless the step runs within 200 ms after a whole second, as it does
// when it was due then) keeps the next step from coming early without drifting later.
func stampTime(t time.Time) time.Time {
	s := t.Truncate(time.Second)
	if t.Sub(s) <= 200*time.Millisecond {
		return s
	}
	return s.Add(time.Second)
}

func firstNonEmpty(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}
