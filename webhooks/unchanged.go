package webhooks

import (
	admissionv1 "k8s.io/api/admission/v1"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/raygate/raygate/internal/admissionjson"
)

// unchangedUpdate reports whether req is an UPDATE whose object has exactly the stored
// object's spec and metadata, byte for byte (admissionjson.Unchanged).
//
// The validating webhooks admit such an update without decoding either object. Validation
// compares old and new (internal/validation/ratchet.go): an error counts only where the
// update changed something, and the rules that compare old and new themselves (pod bounds,
// feature gates, immutable fields, upgrade actions) refuse only a change; with nothing
// changed in spec or metadata, full validation has nothing to refuse. FuzzUnchangedUpdate
// checks it under the strictest settings for the objects validation sees: those the
// mutating webhook has defaulted.
func unchangedUpdate(req admission.Request) bool {
	return req.Operation == admissionv1.Update && admissionjson.Unchanged(req.Object.Raw, req.OldObject.Raw)
}

// unchangedDigest is the digest of an unchanged update's spec and metadata, for the mutating
// webhook's admissionjson.CleanSet.
func unchangedDigest(req admission.Request) (admissionjson.Digest, bool) {
	if req.Operation != admissionv1.Update {
		return admissionjson.Digest{}, false
	}
	return admissionjson.UnchangedDigest(req.Object.Raw, req.OldObject.Raw)
}
