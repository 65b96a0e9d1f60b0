package webhooks

import (
	"context"
	"errors"
	"net/http"
	"reflect"

	admissionv1 "k8s.io/api/admission/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/raygate/raygate/internal/admissionjson"
)

// mutator applies a defaulting function and patches what it changed.
type mutator[T client.Object] struct {
	newObj func() T
	apply  func(T)
	// clean remembers unchanged updates that defaulting left as they were.
	clean admissionjson.CleanSet
}

func (m *mutator[T]) Handle(ctx context.Context, req admission.Request) admission.Response {
	if req.Operation != admissionv1.Create && req.Operation != admissionv1.Update {
		return admission.Allowed("")
	}
	key, unchanged := unchangedDigest(req)
	if unchanged && m.clean.Has(key) {
		return admission.Allowed("")
	}
	// Defaulting never reads or writes pod templates or the serve config (most of an
	// object), so they are not decoded: original is the object without them.
	original := m.newObj()
	skeleton, err := admissionjson.DecodeWithoutTemplates(req.Object.Raw, original)
	if err != nil {
		return m.notDecoded(ctx, req, err)
	}
	// An object being deleted is left exactly as sent, so finalizer removal stays a pure
	// metadata change.
	if original.GetDeletionTimestamp() != nil {
		return admission.Allowed("")
	}
	defaulted, ok := original.DeepCopyObject().(T)
	if !ok {
		return admission.Errored(http.StatusInternalServerError, errors.New("unexpected object type"))
	}
	m.apply(defaulted)
	// reflect, not equality.Semantic: the latter calls a nil map equal to an empty one, and
	// rayStartParams: {} (a default) must be patched in when a client-side apply drops it.
	if reflect.DeepEqual(original, defaulted) {
		if unchanged {
			m.clean.Add(key)
		}
		return admission.Allowed("")
	}
	patches, err := admissionjson.DefaultingPatch(req.Object.Raw, skeleton, original, defaulted, func() (any, any, error) {
		obj := m.newObj()
		if err := admissionjson.Decode(req.Object.Raw, obj); err != nil {
			return nil, nil, undecodable{err}
		}
		return obj, admissionjson.WithTemplatesOf(defaulted, obj), nil
	})
	if bad := (undecodable{}); errors.As(err, &bad) {
		return m.notDecoded(ctx, req, bad.error)
	}
	if err != nil {
		logf.FromContext(ctx).Error(err, "computing the defaulting patch")
		return admission.Errored(http.StatusInternalServerError, err)
	}
	return admission.Patched("", patches...)
}

// undecodable is a request object that does not decode. The pod templates are decoded only
// on the slower way of admissionjson.DefaultingPatch, so that is where a malformed one shows.
type undecodable struct{ error }

// notDecoded answers for an object that does not decode (a number where the schema wants a
// string) with each value of the wrong type at its field (typeErrors): the first answer the
// user gets, as mutating webhooks run before the API server's schema check, whose answer for
// the same mistake adds a line about the rules it did not check. When no value of the wrong
// type is found the object goes through unchanged, for the schema check to answer; the
// validating webhook refuses what that lets through, so nothing undefaulted is stored.
func (m *mutator[T]) notDecoded(ctx context.Context, req admission.Request, err error) admission.Response {
	if resp, ok := typeErrorsResponse(req, req.Object.Raw, m.newObj()); ok {
		return resp
	}
	logf.FromContext(ctx).V(1).Info("object does not decode; left to the API server's schema check", "error", err.Error())
	return admission.Allowed("")
}
