// Package owned holds what both controllers do with objects they own.
package owned

import (
	"context"
	"fmt"
	"maps"

	"sigs.k8s.io/controller-runtime/pkg/client"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
)

// Relabelling an autoscaler ServiceAccount made by an older raygate updates it.
// +kubebuilder:rbac:groups="",resources=serviceaccounts,verbs=update

// Labelled reports whether obj carries the label raygate's cache selects its objects on.
func Labelled(obj client.Object) bool {
	return obj.GetLabels()[rayv1.KubernetesCreatedByLabelKey] == rayv1.ComponentName
}

// Relabel gives an object raygate controls (made by an older raygate), as read from the API
// server, the label its cache selects on, so the cache holds it from then on. It is an
// update: the object's resourceVersion makes it fail if the object changed since it was read.
func Relabel(ctx context.Context, c client.Writer, obj client.Object) error {
	if Labelled(obj) {
		return nil
	}
	l := maps.Clone(obj.GetLabels())
	if l == nil {
		l = map[string]string{}
	}
	l[rayv1.KubernetesCreatedByLabelKey] = rayv1.ComponentName
	obj.SetLabels(l)
	if err := c.Update(ctx, obj); err != nil {
		return fmt.Errorf("labelling %s: %w", obj.GetName(), err)
	}
	return nil
}
