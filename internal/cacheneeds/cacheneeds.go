// Package cacheneeds is how a controller declares what it needs from the manager's informer
// cache: the kinds it watches or reads there, which objects of each kind (a label scope),
// and of pods the fields it reads. internal/app builds the cache from the union of the
// controllers' declarations, and the pod transform (SlimPod) keeps exactly the declared
// fields, so the cache contract is written down once, next to the code that relies on it.
//
// Most of the operator's memory is cached objects, which is why the cache holds no more
// than the declarations say: a kind no controller declares is not configured, a label scope
// keeps other tenants' objects out, and a pod keeps only the fields some controller reads.
package cacheneeds

import (
	"fmt"
	"reflect"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/selection"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
)

// Scope says which objects of a kind the cache holds.
type Scope int

const (
	// Everything: every object of the kind (in the watched namespaces).
	Everything Scope = iota
	// CreatedByRaygate: only objects labelled app.kubernetes.io/created-by:
	// kuberay-operator, the label (KubeRay's) raygate puts on everything it creates. Other
	// tenants' objects, however many, cost nothing; an object of a name raygate wants that
	// the cache lacks is read from the API server when a create meets it.
	CreatedByRaygate
	// RayPods: only pods labelled ray.io/cluster, the pods of RayClusters (the controllers
	// find pods by that label and nothing else).
	RayPods
)

func (s Scope) String() string {
	switch s {
	case Everything:
		return "everything"
	case CreatedByRaygate:
		return "created by raygate"
	case RayPods:
		return "Ray pods"
	}
	return fmt.Sprintf("Scope(%d)", int(s))
}

// Selector is the label selector the cache lists and watches the kind with; nil for
// Everything.
func (s Scope) Selector() labels.Selector {
	switch s {
	case CreatedByRaygate:
		return labels.SelectorFromSet(labels.Set{rayv1.KubernetesCreatedByLabelKey: rayv1.ComponentName})
	case RayPods:
		req, err := labels.NewRequirement(rayv1.ClusterLabelKey, selection.Exists, nil)
		if err != nil {
			panic(err) // a constant, valid label key
		}
		return labels.NewSelector().Add(*req)
	}
	return nil
}

// Kind is one kind a controller watches or reads from the cache.
type Kind struct {
	// Object is an empty object of the kind: a typed one, or an Unstructured with its
	// GroupVersionKind set (kinds of CRDs raygate does not compile in).
	Object client.Object
	Scope  Scope
}

// Needs is what a controller declares.
type Needs struct {
	Kinds []Kind
	// Pods are the pod fields the controller reads (its Kinds must include pods).
	Pods PodFields
}

// GVK is the kind's group, version and kind.
func GVK(obj client.Object, scheme *runtime.Scheme) (schema.GroupVersionKind, error) {
	return apiutil.GVKForObject(obj, scheme)
}

// Has reports whether the declaration includes gvk.
func (n Needs) Has(gvk schema.GroupVersionKind, scheme *runtime.Scheme) bool {
	for _, k := range n.Kinds {
		if g, err := GVK(k.Object, scheme); err == nil && g == gvk {
			return true
		}
	}
	return false
}

// GVKs are the declared kinds, sorted.
func (n Needs) GVKs(scheme *runtime.Scheme) ([]schema.GroupVersionKind, error) {
	out := make([]schema.GroupVersionKind, 0, len(n.Kinds))
	for _, k := range n.Kinds {
		gvk, err := GVK(k.Object, scheme)
		if err != nil {
			return nil, err
		}
		out = append(out, gvk)
	}
	slices.SortFunc(out, func(a, b schema.GroupVersionKind) int { return strings.Compare(a.String(), b.String()) })
	return out, nil
}

// Union merges declarations: each kind once, the pod fields of all. A kind declared with two
// different scopes is an error: the cache holds one selection per kind, and either
// controller would see objects it did not expect or miss ones it needs.
func Union(scheme *runtime.Scheme, all ...Needs) (Needs, error) {
	var out Needs
	seen := map[schema.GroupVersionKind]int{} // index in out.Kinds
	for _, n := range all {
		out.Pods |= n.Pods
		for _, k := range n.Kinds {
			gvk, err := GVK(k.Object, scheme)
			if err != nil {
				return Needs{}, fmt.Errorf("declared kind %T: %w", k.Object, err)
			}
			i, dup := seen[gvk]
			if !dup {
				seen[gvk] = len(out.Kinds)
				out.Kinds = append(out.Kinds, k)
				continue
			}
			if have := out.Kinds[i]; have.Scope != k.Scope {
				return Needs{}, fmt.Errorf("%s is declared with two scopes, %s and %s", gvk, have.Scope, k.Scope)
			}
			if reflect.TypeOf(out.Kinds[i].Object) != reflect.TypeOf(k.Object) {
				return Needs{}, fmt.Errorf("%s is declared both as %T and as %T", gvk, out.Kinds[i].Object, k.Object)
			}
		}
	}
	return out, nil
}
