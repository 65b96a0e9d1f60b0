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
package statuspatch

import (
	"context"
	"encoding/json"
	"fmt"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
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

// Replace sets obj's status on the server to status; obj is updated from the response (its
// resourceVersion included).
func Replace(ctx context.Context, c client.StatusClient, obj client.Object, status any) error {
	body, err := Body(status)
	if err != nil {
		return fmt.Errorf("encoding the status: %w", err)
	}
	return c.Status().Patch(ctx, obj, client.RawPatch(types.JSONPatchType, body))
}
