package webhooks

import (
	"context"
	"encoding/json"
	"net/http"
	"reflect"
	"slices"

	"gomodules.xyz/jsonpatch/v2"
	admissionv1 "k8s.io/api/admission/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

// mutator applies a defaulting function and patches what it changed.
type mutator[T client.Object] struct {
	decoder admission.Decoder
	newObj  func() T
	apply   func(T)
}

func (m *mutator[T]) Handle(ctx context.Context, req admission.Request) admission.Response {
	if req.Operation != admissionv1.Create && req.Operation != admissionv1.Update {
		return admission.Allowed("")
	}
	obj := m.newObj()
	if err := m.decoder.Decode(req, obj); err != nil {
		return admission.Errored(http.StatusBadRequest, err)
	}
	// An object being deleted is left exactly as sent, so finalizer removal stays a pure
	// metadata change.
	if obj.GetDeletionTimestamp() != nil {
		return admission.Allowed("")
	}
	original := obj.DeepCopyObject()
	m.apply(obj)
	// reflect, not equality.Semantic: the latter calls a nil map equal to an empty one, and
	// rayStartParams: {} (a default) must be patched in when a client-side apply drops it.
	if reflect.DeepEqual(original, obj) {
		return admission.Allowed("")
	}
	patches, err := defaultingPatch(req.Object.Raw, original, obj)
	if err != nil {
		logf.FromContext(ctx).Error(err, "computing the defaulting patch")
		return admission.Errored(http.StatusInternalServerError, err)
	}
	return admission.Patched("", patches...)
}

// defaultingPatch returns the JSON patch from the request's raw object to the defaulted one,
// without the differences a decode/encode round trip alone causes (e.g. "1000m" printed as
// "1"): those are not defaults, and patching them would rewrite what the user wrote.
func defaultingPatch(raw []byte, original, defaulted any) ([]jsonpatch.Operation, error) {
	defaultedJSON, err := json.Marshal(defaulted)
	if err != nil {
		return nil, err
	}
	patches, err := jsonpatch.CreatePatch(raw, defaultedJSON)
	if err != nil || len(patches) == 0 {
		return patches, err
	}
	originalJSON, err := json.Marshal(original)
	if err != nil {
		return nil, err
	}
	roundTrip, err := jsonpatch.CreatePatch(raw, originalJSON)
	if err != nil {
		return nil, err
	}
	return slices.DeleteFunc(patches, func(p jsonpatch.Operation) bool {
		return slices.ContainsFunc(roundTrip, func(q jsonpatch.Operation) bool {
			return p.Operation == q.Operation && p.Path == q.Path && reflect.DeepEqual(p.Value, q.Value)
		})
	}), nil
}
