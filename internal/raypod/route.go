package raypod

import (
	"maps"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
)

// OpenShift's Route is handled as unstructured data: its Go module (github.com/openshift/api)
// is not a dependency of raygate, and raygate sets only a handful of its fields.

// RouteGVK is OpenShift's Route. When the API server serves it, a cluster with
// headGroupSpec.enableIngress gets a Route for its dashboard instead of an Ingress, as under
// KubeRay.
var RouteGVK = schema.GroupVersionKind{Group: "route.openshift.io", Version: "v1", Kind: "Route"}

// routeHostLabelBudget is what a Route name and its namespace may use together: without
// spec.host, OpenShift's router names the Route <name>-<namespace>.<apps domain>, whose first
// label must fit in 63 characters. The figure is KubeRay's (63 less 12, its margin).
const routeHostLabelBudget = 51

// HeadRouteName is the dashboard Route of a cluster in a namespace: KubeRay's
// <cluster>-head-route, shortened as KubeRay shortens it so that the host the router makes
// up stays a valid DNS label. It is never empty and never ends with a dash or a dot (a
// shortened name could, and the API server would refuse it).
func HeadRouteName(cluster, namespace string) string {
	name := cluster + "-head-route"
	if limit := max(routeHostLabelBudget-len(namespace), 1); len(name) > limit {
		name = name[:limit]
	}
	name = strings.TrimRight(name, "-.")
	if name == "" {
		return "r"
	}
	return name
}

// HeadRoute is the Route exposing the dashboard port of a (defaulted) cluster's head Service,
// built as KubeRay builds it: KubeRay's name and labels, the head Service as the only backend
// with weight 100, the dashboard port as target, no wildcard, and no host: OpenShift's
// router assigns one under its apps domain, in the cluster's namespace (so the Route needs
// no right to claim a host, and a tenant cannot take another's). ingressOptions describe an
// Ingress rule and do not apply to a Route. The cluster's annotations are copied as for the
// Ingress (RouteAnnotations).
func HeadRoute(rc *rayv1.RayCluster, policy IngressPolicy) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"spec": map[string]any{
			"to": map[string]any{
				"kind":   "Service",
				"name":   HeadServiceName(rc),
				"weight": int64(100),
			},
			"port": map[string]any{
				"targetPort": int64(dashboardServicePort(rc)),
			},
			"wildcardPolicy": "None",
		},
	}}
	u.SetGroupVersionKind(RouteGVK)
	u.SetName(HeadRouteName(rc.Name, rc.Namespace))
	u.SetNamespace(rc.Namespace)
	u.SetLabels(IngressLabels(rc.Name))
	u.SetAnnotations(RouteAnnotations(rc, policy))
	u.SetOwnerReferences([]metav1.OwnerReference{*metav1.NewControllerRef(rc, rayv1.GroupVersion.WithKind(rayv1.RayClusterKind))})
	return u
}

// RouteAnnotations are the annotations a cluster's Route carries: the cluster's that the
// admin's policy copies (--allowed-ingress-annotations, e.g. haproxy.router.openshift.io/*),
// so users configure OpenShift's router through them (timeouts, IP allow-lists, ...); KubeRay
// copies every annotation. Never the operators' own bookkeeping (ray.io/ and raygate.ray.io/ keys),
// kubectl's record of the RayCluster manifest and the Ingress class (which means nothing to a
// Route); CopiedAnnotationsKey records the keys copied, so one removed from the cluster is
// removed from the Route.
func RouteAnnotations(rc *rayv1.RayCluster, policy IngressPolicy) map[string]string {
	annotations := map[string]string{}
	for k, v := range rc.Annotations {
		if policy.CopiesAnnotation(k) && !operatorAnnotation(k) && k != lastAppliedAnnotation && k != IngressClassAnnotationKey {
			annotations[k] = v
		}
	}
	annotations[CopiedAnnotationsKey] = strings.Join(slices.Sorted(maps.Keys(annotations)), ",")
	return annotations
}

// RouteCopiedAnnotations are the keys a Route records as copied from its cluster.
func RouteCopiedAnnotations(route *unstructured.Unstructured) []string {
	v := route.GetAnnotations()[CopiedAnnotationsKey]
	if v == "" {
		return nil
	}
	return strings.Split(v, ",")
}

// routeSpecFields are the spec fields raygate sets on a Route. The others (the host the
// router assigned, TLS an administrator added, alternate backends) are left as they are.
var routeSpecFields = []string{"to", "port", "wildcardPolicy"}

// WithRouteFields returns a copy of existing with desired's labels, annotations and the spec
// fields raygate sets, or nil when existing has them all. Annotations copied from the cluster
// earlier that desired no longer has are removed; labels and annotations others added are
// kept.
func WithRouteFields(existing, desired *unstructured.Unstructured) *unstructured.Unstructured {
	u := existing.DeepCopy()
	labels := u.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	maps.Copy(labels, desired.GetLabels())
	u.SetLabels(labels)

	annotations := u.GetAnnotations()
	if annotations == nil {
		annotations = map[string]string{}
	}
	for _, k := range RouteCopiedAnnotations(existing) {
		if _, still := desired.GetAnnotations()[k]; !still {
			delete(annotations, k)
		}
	}
	maps.Copy(annotations, desired.GetAnnotations())
	u.SetAnnotations(annotations)

	spec, _ := u.Object["spec"].(map[string]any)
	if spec == nil {
		spec = map[string]any{}
	}
	want, _ := desired.Object["spec"].(map[string]any)
	for _, f := range routeSpecFields {
		if v, ok := want[f]; ok {
			spec[f] = runtimeCopy(v)
		} else {
			delete(spec, f)
		}
	}
	u.Object["spec"] = spec
	if equalUnstructured(existing, u) {
		return nil
	}
	return u
}

// runtimeCopy deep-copies a JSON value of an unstructured object.
func runtimeCopy(v any) any {
	return (&unstructured.Unstructured{Object: map[string]any{"v": v}}).DeepCopy().Object["v"]
}

// equalUnstructured compares two objects' labels, annotations and specs.
func equalUnstructured(a, b *unstructured.Unstructured) bool {
	return maps.Equal(a.GetLabels(), b.GetLabels()) && maps.Equal(a.GetAnnotations(), b.GetAnnotations()) &&
		equality.Semantic.DeepEqual(a.Object["spec"], b.Object["spec"])
}
