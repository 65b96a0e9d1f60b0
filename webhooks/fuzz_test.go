package webhooks_test

import (
	"context"
	"encoding/json"
	"reflect"
	"testing"

	jsonpatchapply "github.com/evanphx/json-patch/v5"
	admissionv1 "k8s.io/api/admission/v1"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/defaulting"
	"github.com/raygate/raygate/internal/validation/fuzzer"
	"github.com/raygate/raygate/webhooks"
)

// FuzzMutateRayService checks the mutating webhook end to end on random objects: the patch
// it returns, applied to exactly what was sent, decodes to the defaulted object, and keys
// the user left out or wrote as null are defaulted just the same.
func FuzzMutateRayService(f *testing.F) {
	f.Add([]byte("seed"), true)
	f.Add([]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13}, false)
	h := handlers(nil)[webhooks.MutateRayServicePath]
	f.Fuzz(func(t *testing.T, data []byte, dropNulls bool) {
		var svc rayv1.RayService
		fuzzer.New(data).Fill(&svc)
		svc.APIVersion, svc.Kind = rayv1.GroupVersion.String(), rayv1.RayServiceKind // the API server always sends them
		if svc.DeletionTimestamp != nil {
			return // left alone on purpose; covered by unit tests
		}
		body := raw(t, &svc)
		if dropNulls {
			body = withoutNulls(t, body)
		}
		resp := h.Handle(context.Background(), request(admissionv1.Create, body, nil))
		if !resp.Allowed {
			t.Fatalf("mutating webhook denied: %v", resp.Result)
		}
		patched := body
		if len(resp.Patches) > 0 {
			patch, err := jsonpatchapply.DecodePatch(raw(t, resp.Patches))
			if err != nil {
				t.Fatal(err)
			}
			if patched, err = patch.Apply(body); err != nil {
				t.Fatalf("patch does not apply to the request: %v\npatch: %s", err, raw(t, resp.Patches))
			}
		}
		var got, want rayv1.RayService
		if err := json.Unmarshal(patched, &got); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(body, &want); err != nil {
			t.Fatal(err)
		}
		defaulting.RayService(&want)
		if !reflect.DeepEqual(want.Spec, got.Spec) {
			t.Fatalf("patched spec is not the defaulted spec\nwant: %+v\ngot:  %+v", want.Spec, got.Spec)
		}
	})
}

// withoutNulls removes every null-valued key, as a user who leaves fields out would send.
func withoutNulls(t *testing.T, body []byte) []byte {
	var doc any
	if err := json.Unmarshal(body, &doc); err != nil {
		t.Fatal(err)
	}
	var strip func(any)
	strip = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			for k, e := range x {
				if e == nil {
					delete(x, k)
				} else {
					strip(e)
				}
			}
		case []any:
			for _, e := range x {
				strip(e)
			}
		}
	}
	strip(doc)
	return raw(t, doc)
}
