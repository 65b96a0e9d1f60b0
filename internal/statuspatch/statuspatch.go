package statuspatch

import (
	"context"
	"encoding/json"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

type op struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value any    `json:"value"`
}

// Body is the JSON patch that replaces the status with status.
func Body(status any) ([]byte, error) {
	return json.Marshal([]op{{Op: "add", Path: "/status", Value: status}})
}

// Replace sets obj's status on the server to status. Of obj only the resourceVersion is
// updated, to the one the write made; its status is left for the caller to set.
func Replace(ctx context.Context, c client.Client, obj client.Object, status any) error {
	body, err := Body(status)
	if err != nil {
		return fmt.Errorf("encoding the status: %w", err)
	}
	gvk, err := apiutil.GVKForObject(obj, c.Scheme())
	if err != nil {
		return err
	}
	written := &metav1.PartialObjectMetadata{}
	written.SetGroupVersionKind(gvk)
	written.Namespace, written.Name = obj.GetNamespace(), obj.GetName()
	if err := c.Status().Patch(ctx, written, client.RawPatch(types.JSONPatchType, body)); err != nil {
		return err
	}
	obj.SetResourceVersion(written.ResourceVersion)
	return nil
}
