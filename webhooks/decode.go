package webhooks

import (
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/raygate/raygate/internal/admissionjson"
)

// objectDecoder decodes an object of a request in a namespace: admissionjson's
// SharingDecoder for RayClusters and RayServices, whose pod templates repeat, or
// plainDecoder.
type objectDecoder interface {
	Decode(namespace string, raw []byte, into runtime.Object) error
}

// plainDecoder decodes with admissionjson.Decode.
type plainDecoder struct{}

func (plainDecoder) Decode(_ string, raw []byte, into runtime.Object) error {
	return admissionjson.Decode(raw, into)
}
