package plan

import (
	"fmt"
	"maps"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/raygate/raygate/internal/rayspec"
)

// The world carries a pass's effects out as the controller and the API server would.

// changed gives the cluster a new resourceVersion, as every write does.
func (c *simCluster) changed() {
	v, _ := strconv.Atoi(c.rc.ResourceVersion)
	c.rc.ResourceVersion = strconv.Itoa(v + 1)
}

// carryOut plans the pass and carries it out as the controller's carryOut (apply.go) does:
// at a gated step the gates are evaluated (when the world has a Prometheus) and the pass
// planned again with their results; then come the cluster actions, the serve config
// submissions and the other actions, up to the first that fails.
func (w *world) carryOut(p *reconciled, want *Desired) (Plan, error) {
	out := Decide(p.obs, want, &p.stored, w.now)
	if w.promGates != nil && out.GateAsk != nil {
		o := *p.obs
		o.Gates = w.promGates(*out.GateAsk)
		out = Decide(&o, want, &p.stored, w.now)
	}
	if !w.apply(out.ClusterActions, p) {
		return out, actionFailed{fmt.Sprint(out.ClusterActions)}
	}
	for _, s := range out.Submits {
		p.submits = append(p.submits, s)
		if err := w.submit(s); err != nil {
			return out, err
		}
	}
	if !w.apply(out.Actions, p) {
		return out, actionFailed{fmt.Sprint(out.Actions)}
	}
	return out, nil
}

// actionFailed is an action the world refused, as the API server may; the pass then
// stops without writing the status.
type actionFailed struct{ action string }

func (e actionFailed) Error() string { return e.action + " failed" }

// apply carries out actions like the API server; it reports whether all were. failAction
// counts the actions of the whole pass.
func (w *world) apply(actions []Action, p *reconciled) bool {
	for _, a := range actions {
		p.actionsTried++
		if p.actionsTried-1 == w.failAction {
			return false
		}
		switch a := a.(type) {
		case CreateCluster:
			if w.clusters[a.Cluster.Name] != nil {
				return false // AlreadyExists
			}
			rc := a.Cluster.DeepCopy()
			w.created++
			rc.UID = types.UID(rc.Name + "-uid")
			rc.CreationTimestamp, rc.ResourceVersion = metav1.NewTime(w.now), "1"
			w.clusters[rc.Name] = &simCluster{rc: rc, headLabel: "false", readyAt: w.now.Add(headStart)}
		case UpdateCluster:
			c := w.clusters[a.Cluster.Name]
			if c == nil || c.rc.ResourceVersion != a.Cluster.ResourceVersion {
				return false // not found, or a conflict: the cluster changed since it was read
			}
			c.rc.Spec, c.rc.Annotations = *a.Cluster.Spec.DeepCopy(), maps.Clone(a.Cluster.Annotations)
			c.changed()
		case AnnotateCluster:
			c := w.clusters[a.Cluster.Name]
			if c == nil || c.rc.UID != a.Cluster.UID {
				return false
			}
			setAnnotations(c.rc, a.Annotations)
			for _, k := range a.Remove {
				delete(c.rc.Annotations, k)
			}
			c.changed()
		case DeleteCluster:
			w.deleteCluster(a.Cluster.Name)
			p.deleted = append(p.deleted, a.Cluster.Name)
		case CreateObject:
			if !w.write(a.Object, true) {
				return false
			}
		case UpdateObject:
			if !w.write(a.Object, false) {
				return false
			}
		case DeleteObject:
			w.remove(a.Object)
		case LabelPod:
			for _, c := range w.clusters {
				if a.Pod.Name == c.rc.Name+"-head" {
					c.headLabel = a.Value
				}
			}
		case AnnotateService:
			w.annotateService(a)
		default:
			panic(fmt.Sprintf("unknown action %T", a))
		}
	}
	return true
}

// write stores a Service, Gateway or HTTPRoute; a changed spec gets a new generation.
func (w *world) write(o any, create bool) bool {
	switch o := o.(type) {
	case *corev1.Service:
		if (w.services[o.Name] == nil) != create {
			return false
		}
		w.services[o.Name] = o.DeepCopy()
	case *gwv1.Gateway:
		if (w.gateway == nil) != create {
			return false
		}
		next := o.DeepCopy()
		next.Generation = 1
		if w.gateway != nil {
			next.Generation, next.Status = w.gateway.Generation, w.gateway.Status
			if !equality.Semantic.DeepEqual(w.gateway.Spec, next.Spec) {
				next.Generation++
			}
		}
		w.gateway = next
		w.acceptAt = w.now.Add(gatewayDelay)
	case *gwv1.HTTPRoute:
		if (w.route == nil) != create {
			return false
		}
		next := o.DeepCopy()
		next.Generation = 1
		if w.route != nil {
			next.Generation, next.Status = w.route.Generation, w.route.Status
			if !equality.Semantic.DeepEqual(w.route.Spec, next.Spec) {
				next.Generation++
			}
		}
		w.route = next
		w.acceptAt = w.now.Add(gatewayDelay)
	case *gwv1.GRPCRoute:
		if (w.grpcRoute == nil) != create {
			return false
		}
		next := o.DeepCopy()
		next.Generation = 1
		if w.grpcRoute != nil {
			next.Generation, next.Status = w.grpcRoute.Generation, w.grpcRoute.Status
			if !equality.Semantic.DeepEqual(w.grpcRoute.Spec, next.Spec) {
				next.Generation++
			}
		}
		w.grpcRoute = next
		w.acceptAt = w.now.Add(gatewayDelay)
	default:
		panic(fmt.Sprintf("unexpected object %T", o))
	}
	return true
}

// deleteCluster removes a cluster and what it owns.
func (w *world) deleteCluster(name string) {
	delete(w.clusters, name)
	delete(w.services, rayspec.ClusterServeServiceName(name))
	delete(w.records, name)
}

// remove deletes a Service, Gateway or HTTPRoute.
func (w *world) remove(o any) {
	switch o := o.(type) {
	case *corev1.Service:
		delete(w.services, o.Name)
	case *gwv1.Gateway:
		w.gateway = nil
	case *gwv1.HTTPRoute:
		w.route = nil
	case *gwv1.GRPCRoute:
		w.grpcRoute = nil
	default:
		panic(fmt.Sprintf("unexpected object %T", o))
	}
}
