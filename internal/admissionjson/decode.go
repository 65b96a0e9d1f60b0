package admissionjson

import (
	"errors"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	sigsjson "sigs.k8s.io/json"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/sharedtable"
)

// Decode decodes the raw object of an admission request straight into a typed object, with
// the JSON rules of the API machinery (case-sensitive keys, integers kept). The API server
// has already checked kind and schema, so the scheme's content sniffing, which parses every
// object a second time just to read apiVersion and kind, is not needed; it costs a
// noticeable share of a validating review's CPU time (docs/benchmarks.md).
func Decode(raw []byte, into runtime.Object) error {
	if len(raw) == 0 {
		return errors.New("there is no content to decode")
	}
	return sigsjson.UnmarshalCaseSensitivePreserveInts(raw, into)
}

// Pod templates are most of what an admission request decodes: each one is hundreds of
// strings, pointers and maps, most of a review's allocations. Yet they repeat: an update
// carries the stored object's templates twice (old and new), the RayClusters a RayService
// creates carry its templates, a fleet is stamped out from one chart, and GitOps tools
// re-apply the same manifests. The API server serializes an object the same way every time,
// so a repeated template arrives as the same bytes.
//
// SharingDecoder decodes RayClusters and RayServices like Decode, except that each pod
// template is taken from a bounded table of templates decoded before in the same namespace,
// keyed by the SHA-256 of its raw JSON, and decoded (and added) only when it is not there.
// The object around the templates and each new template are decoded by the arena decoder
// (arena.go: strings sliced from one copy of the JSON, slices and maps made at their size),
// which reads only what it reads exactly as the JSON decoder does. Decoding is deterministic, so the result is the object Decode would return (its templates'
// quantities with their canonical strings cached: formatQuantities), but its templates share
// their contents with other requests' objects: what is decoded this way is
// only read (validation copies a template before building a pod from it;
// webhooks.TestValidationLeavesSharedTemplatesAlone).
//
// Anything the raw scan cannot read with certainty (a key given twice or written with escapes,
// a template that is not an object) and any decoding error take the plain way, so errors read
// exactly as Decode's.
type SharingDecoder struct {
	templates *sharedtable.Table[*corev1.PodTemplateSpec]
}

// Limits of the table. A decoded template takes a few KiB plus somewhat more than its JSON,
// so the table's memory stays within a few times sharedTemplateBytes even when tenants fill
// it with the largest templates it keeps (TestSharedTemplatesMemoryIsBounded; what it held
// when measured is in docs/benchmarks.md). A larger template is decoded every time.
const (
	sharedTemplates        = 256
	sharedTemplateBytes    = 2 << 20
	maxSharedTemplateBytes = 32 << 10
)

// NewSharingDecoder returns a decoder with an empty table.
func NewSharingDecoder() *SharingDecoder {
	return &SharingDecoder{templates: sharedtable.New[*corev1.PodTemplateSpec](sharedtable.Limits{
		Entries: sharedTemplates, Bytes: sharedTemplateBytes, EntryBytes: maxSharedTemplateBytes,
	})}
}

// Len is how many decoded templates the table holds.
func (d *SharingDecoder) Len() int { return d.templates.Len() }

// Decode fills into from raw, an object of a request in namespace. Objects other than
// RayClusters and RayServices are decoded as Decode does.
func (d *SharingDecoder) Decode(namespace string, raw []byte, into runtime.Object) error {
	spec := clusterSpecOf(into)
	if spec == nil {
		return Decode(raw, into)
	}
	elided, ok := findElided(raw, into, false)
	if !ok || len(elided) == 0 {
		return decodeFormatted(raw, into, spec)
	}
	// A head and up to seven worker groups without an allocation.
	var keysOnStack [8]sharedtable.Key
	var sharedOnStack [8]*corev1.PodTemplateSpec
	keys, shared := keysOnStack[:0], sharedOnStack[:0]
	if len(elided) > len(keysOnStack) {
		keys, shared = make([]sharedtable.Key, 0, len(elided)), make([]*corev1.PodTemplateSpec, 0, len(elided))
	}
	keys, shared = keys[:len(elided)], shared[:len(elided)]
	for i, e := range elided {
		// Kept per namespace: how fast a review is cannot tell a tenant what another
		// namespace wrote.
		keys[i] = sharedtable.KeyIn(namespace, raw[e.start:e.end])
		shared[i], _ = d.templates.Get(keys[i])
	}
	// The object without its templates (decodeObject), then each template: from the table,
	// or decoded on its own (decodeTemplate) and kept for the requests that repeat it.
	var scratch arenaScratch
	if err := decodeObject(raw, elided, into, &scratch); err != nil {
		return decodeAfresh(raw, into, spec)
	}
	for i, e := range elided {
		target := e.template(spec)
		if target == nil {
			return decodeAfresh(raw, into, spec)
		}
		if shared[i] == nil {
			t := &corev1.PodTemplateSpec{}
			if err := decodeTemplate(raw[e.start:e.end], t, &scratch); err != nil {
				return decodeAfresh(raw, into, spec)
			}
			formatQuantities(t)
			d.templates.Add(keys[i], t, e.end-e.start)
			shared[i] = t
		}
		*target = *shared[i]
	}
	formatOthers(spec, elided)
	return nil
}

// formatOthers formats the quantities of the templates of spec that were decoded with the
// rest of the object, not set aside (none when the scan found them all).
func formatOthers(spec *rayv1.RayClusterSpec, elided []elidedValue) {
	if len(elided) > len(spec.WorkerGroupSpecs) {
		return // the head and every worker group were set aside
	}
	setAside := make([]bool, len(spec.WorkerGroupSpecs)+1) // the head last
	for _, e := range elided {
		switch {
		case e.group == headGroup:
			setAside[len(spec.WorkerGroupSpecs)] = true
		case e.group >= 0 && e.group < len(spec.WorkerGroupSpecs):
			setAside[e.group] = true
		}
	}
	if !setAside[len(spec.WorkerGroupSpecs)] {
		formatQuantities(&spec.HeadGroupSpec.Template)
	}
	for i := range spec.WorkerGroupSpecs {
		if !setAside[i] {
			formatQuantities(&spec.WorkerGroupSpecs[i].Template)
		}
	}
}

// decodeAfresh empties into and decodes raw the plain way, for its error message.
func decodeAfresh(raw []byte, into runtime.Object, spec *rayv1.RayClusterSpec) error {
	switch o := into.(type) {
	case *rayv1.RayCluster:
		*o = rayv1.RayCluster{}
	case *rayv1.RayService:
		*o = rayv1.RayService{}
	}
	return decodeFormatted(raw, into, spec)
}

// decodeFormatted decodes raw the plain way and formats the quantities of its templates (spec
// is into's cluster spec), so that every object the SharingDecoder returns reads alike.
func decodeFormatted(raw []byte, into runtime.Object, spec *rayv1.RayClusterSpec) error {
	if err := Decode(raw, into); err != nil {
		return err
	}
	formatQuantities(&spec.HeadGroupSpec.Template)
	for i := range spec.WorkerGroupSpecs {
		formatQuantities(&spec.WorkerGroupSpecs[i].Template)
	}
	return nil
}
