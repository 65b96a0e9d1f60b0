// Package owned holds what both controllers do with objects they own.
package owned

import (
	"context"
	"encoding/json"
	"fmt"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
)

// Labelled reports whether obj carries the label raygate's cache selects its objects on.
func Labelled(obj client.Object) bool {
	return obj.GetLabels()[rayv1.KubernetesCreatedByLabelKey] == rayv1.ComponentName
}

// Relabel gives an object raygate controls (made by an older raygate) the label its cache
// selects on, so the cache holds it from then on. The UID in the patch makes it fail on any
// other object of that name.
func Relabel(ctx context.Context, c client.Writer, obj client.Object) error {
	if Labelled(obj) {
		return nil
	}
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{
		"uid": obj.GetUID(), "labels": map[string]string{rayv1.KubernetesCreatedByLabelKey: rayv1.ComponentName},
	}})
	if err := c.Patch(ctx, obj, client.RawPatch(types.MergePatchType, patch)); err != nil {
		return fmt.Errorf("labelling %s: %w", obj.GetName(), err)
	}
	return nil
}
