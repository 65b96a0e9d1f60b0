package webhooks

import (
	"errors"

	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
	sigsjson "sigs.k8s.io/json"
)

// typedDecoder decodes the objects of an admission request straight into raygate's types
// with the JSON rules of the API machinery (case-sensitive keys, integers kept). The API
// server has already checked kind and schema, so the scheme's content sniffing, which
// parses every object a second time just to read apiVersion and kind, is not needed: it
// was a quarter of a validating request's CPU time.
type typedDecoder struct{}

var _ admission.Decoder = typedDecoder{}

// objectDecoder decodes an object of a request in a namespace.
type objectDecoder interface {
	decode(namespace string, raw runtime.RawExtension, into runtime.Object) error
}

func (d typedDecoder) decode(_ string, raw runtime.RawExtension, into runtime.Object) error {
	return d.DecodeRaw(raw, into)
}

func (d typedDecoder) Decode(req admission.Request, into runtime.Object) error {
	return d.DecodeRaw(req.Object, into)
}

func (typedDecoder) DecodeRaw(raw runtime.RawExtension, into runtime.Object) error {
	if len(raw.Raw) == 0 {
		return errors.New("there is no content to decode")
	}
	return sigsjson.UnmarshalCaseSensitivePreserveInts(raw.Raw, into)
}
