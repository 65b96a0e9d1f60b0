package invariants

import (
	"context"
	"maps"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/raygate/raygate/internal/rayspec"
)

// RuleGRPCLikeHTTP: one traffic decision moves both routes of a RayService.
const RuleGRPCLikeHTTP = "the GRPCRoute takes only the HTTPRoute's weights, in the HTTPRoute's order"

// grpcState follows, per RayService, the HTTPRoute's weight history and how far along it
// the GRPCRoute is. raygate writes the HTTPRoute first and the GRPCRoute right after, so a
// GRPCRoute's weights are always ones the HTTPRoute had, never ahead of it.
type grpcState struct {
	httpHistory map[string][]map[string]int32 // service → HTTPRoute weights, oldest first
	matched     map[string]int                // service → index of the GRPCRoute's weights
	grpcWeights map[string]map[string]int32   // GRPCRoute key → last weights
}

func grpcRouteAPI(c client.Client) bool {
	_, err := c.RESTMapper().RESTMapping(schema.GroupKind{Group: gwv1.GroupName, Kind: "GRPCRoute"}, gwv1.GroupVersion.Version)
	return err == nil
}

// serviceOf is the RayService a route named `<service>-httproute` / `-grpcroute` belongs to.
func serviceOf(ns, name string) string {
	for _, suffix := range []string{rayspec.HTTPRouteName(""), rayspec.GRPCRouteName("")} {
		if s, ok := strings.CutSuffix(name, suffix); ok {
			return ns + "/" + s
		}
	}
	return ns + "/" + name
}

// noteHTTPWeights appends to the service's HTTPRoute history (caller holds c.mu).
func (c *Checker) noteHTTPWeights(svc string, w map[string]int32) {
	h := c.grpc.httpHistory[svc]
	if len(h) == 0 || !maps.Equal(h[len(h)-1], w) {
		c.grpc.httpHistory[svc] = append(h, maps.Clone(w))
	}
}

// GRPCRouteWeights returns each observed change of a GRPCRoute's weights, oldest first.
func (c *Checker) GRPCRouteWeights() []map[string]int32 {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []map[string]int32
	for _, e := range c.events {
		if rest, ok := strings.CutPrefix(e.What, "grpc"); ok {
			if w, ok := parseWeights(rest); ok {
				out = append(out, w)
			}
		}
	}
	return out
}

func (c *Checker) onGRPCRoute(ctx context.Context, o client.Object, deleted bool) {
	rt, ok := o.(*gwv1.GRPCRoute)
	if !ok || deleted {
		return
	}
	var cur gwv1.GRPCRoute
	if err := c.live.Get(ctx, client.ObjectKeyFromObject(rt), &cur); err != nil || cur.ResourceVersion != rt.ResourceVersion {
		return // a newer version follows
	}
	w := map[string]int32{}
	for _, r := range cur.Spec.Rules {
		for _, b := range r.BackendRefs {
			w[strings.TrimSuffix(string(b.Name), rayspec.ClusterServeServiceName(""))] += ptr.Deref(b.Weight, 1)
		}
	}
	// The HTTPRoute written just before may not have reached its watch yet: read it.
	svc := serviceOf(cur.Namespace, cur.Name)
	var http gwv1.HTTPRoute
	httpErr := c.live.Get(ctx, types.NamespacedName{Namespace: cur.Namespace, Name: strings.TrimSuffix(cur.Name, rayspec.GRPCRouteName("")) + rayspec.HTTPRouteName("")}, &http)
	key := cur.Namespace + "/" + cur.Name
	c.mu.Lock()
	if httpErr == nil {
		c.noteHTTPWeights(svc, rayspec.RouteWeights(&http))
	}
	prev := c.grpc.grpcWeights[key]
	c.grpc.grpcWeights[key] = w
	h, from := c.grpc.httpHistory[svc], c.grpc.matched[svc]
	found := -1
	for i := from; i < len(h); i++ {
		if maps.Equal(h[i], w) {
			found = i
			break
		}
	}
	if found >= 0 {
		c.grpc.matched[svc] = found
	}
	c.mu.Unlock()
	if maps.Equal(prev, w) {
		return
	}
	c.record("grpcroute %s weights %s", cur.Name, formatWeights(w))
	if found < 0 {
		c.violate(RuleGRPCLikeHTTP, "GRPCRoute %s weights %s are not among the HTTPRoute's weights since its last match", cur.Name, formatWeights(w))
	}
}
