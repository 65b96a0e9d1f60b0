// Package statuspatch writes an object's whole status without a resourceVersion
// precondition.
//
// An update of the status subresource carries the resourceVersion the controller read, so
// it is refused with 409 Conflict whenever the informer cache has not yet seen the previous
// write; the retry costs a request and a backoff. raygate owns the whole status of the
// objects it reconciles, so it can replace it unconditionally: a JSON patch whose one
// operation adds /status (an add on an existing member replaces it) sets exactly the status
// computed, whatever the server holds, and never conflicts. A JSON merge patch could not do
// this (it merges nested maps and cannot clear an omitted field), and a server-side apply
// would leave fields set by earlier updates owned by them. The caller must compute the
// status from what it last wrote, not from a cache that may be behind it (read-your-writes).
//
// The patch asks for the object's metadata only in return (a PartialObjectMetadata): the
// caller already holds the status it wrote, and a whole RayCluster or RayService (its pod
// templates, the serve config) would cost the API server an encode and raygate a decode per
// write, at a few status writes per cluster during a bring-up.
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
