// Package admissionjson reads the raw JSON of admission requests for RayClusters and
// RayServices doing as little work as the answer allows, and writes the mutating webhook's
// JSON patch.
//
// It exists because of pod templates. A RayCluster or RayService carries one pod template per
// group (and a RayService a serve config of up to 256 KiB), and those are most of its bytes
// and most of what decoding it allocates: one allocation per string, map, pointer and slice.
// The API server calls the webhooks on every create and update, twice (mutating, then
// validating), so what a review allocates and how long it takes is paid on every `kubectl
// apply`, and in a fleet's bring-up it is what the API server waits for. Yet the
// defaulting never reads a template, validation only reads them, and updates mostly repeat
// bytes the webhook has seen. So:
//
//   - Decode decodes an object with the API machinery's JSON rules straight into the typed
//     object, without the scheme's second parse to find its kind.
//   - DecodeWithoutTemplates decodes an object with its pod templates and serve config set
//     aside in the raw JSON, never decoded: what the mutating webhook needs.
//   - SharingDecoder decodes each distinct pod template once per namespace and hands the
//     decoded template to every later request carrying the same bytes: what the validating
//     webhook needs, which only reads templates. What it decodes it decodes with the arena
//     decoder (arena.go), whose strings are slices of one copy of the JSON.
//   - DefaultingPatch writes the JSON patch from the decoded and the defaulted object by
//     walking them side by side, and fits it to the keys the raw request has, instead of
//     marshalling both and diffing the documents.
//   - Unchanged recognises an update whose spec and metadata are byte for byte the stored
//     ones, so the webhooks can admit it without decoding either object.
//
// Every shortcut answers exactly what the plain way would (the fuzz tests compare them), and
// anything the raw scanners cannot read with certainty — a key given twice or written with
// escapes, a value of an unexpected type — takes the plain way. docs/benchmarks.md
// (Measurements behind the code) has what each piece saves, measured by this package's
// benchmarks and the webhook handlers' (webhooks/bench_test.go).
package admissionjson
