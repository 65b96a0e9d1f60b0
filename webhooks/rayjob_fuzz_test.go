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

// FuzzRayJobWebhooks checks both RayJob webhooks end to end on random objects: the mutating
// one's patch, applied to exactly what was sent (with nulls, or with those keys left out),
// decodes to the defaulted object; the validating one answers every request (never a 500),
// and never refuses an update that only adds an annotation.
func FuzzRayJobWebhooks(f *testing.F) {
	f.Add([]byte("seed"), true)
	f.Add([]byte{2, 7, 1, 8, 2, 8, 1, 8, 2, 8, 4, 5, 9}, false)
	hs := handlers(nil)
	mutate, validate := hs[webhooks.MutateRayJobPath], hs[webhooks.ValidateRayJobPath]
	f.Fuzz(func(t *testing.T, data []byte, dropNulls bool) {
		var job rayv1.RayJob
		fuzzer.New(data).Fill(&job)
		job.APIVersion, job.Kind = rayv1.GroupVersion.String(), rayv1.RayJobKind
		if job.DeletionTimestamp != nil {
			return // left alone on purpose; covered by unit tests
		}
		body := raw(t, &job)
		if dropNulls {
			body = withoutNulls(t, body)
		}
		resp := mutate.Handle(context.Background(), request(admissionv1.Create, body, nil))
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
		var got, want rayv1.RayJob
		if err := json.Unmarshal(patched, &got); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(body, &want); err != nil {
			t.Fatal(err)
		}
		defaulting.RayJob(&want)
		if !reflect.DeepEqual(want.Spec, got.Spec) {
			t.Fatalf("patched spec is not the defaulted spec\nwant: %+v\ngot:  %+v", want.Spec, got.Spec)
		}

		resp = validate.Handle(context.Background(), request(admissionv1.Create, patched, nil))
		if !resp.Allowed && resp.Result.Code >= 500 {
			t.Fatalf("validating webhook failed: %v", resp.Result)
		}
		// An annotation no rule reads: past the unchanged-update shortcut, nothing the update
		// did can be refused (ratcheting).
		if got.Annotations == nil {
			got.Annotations = map[string]string{}
		}
		got.Annotations["example.com/fuzz"] = "annotated"
		if resp := validate.Handle(context.Background(), request(admissionv1.Update, raw(t, &got), patched)); !resp.Allowed {
			t.Fatalf("an update that only annotates was refused: %v", resp.Result)
		}
	})
}
