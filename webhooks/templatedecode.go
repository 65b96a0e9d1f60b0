package webhooks

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	sigsjson "sigs.k8s.io/json"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/sharedtable"
)

// Pod templates are most of what an admission request decodes: each one is hundreds of
// strings, pointers and maps, about two thirds of a review's allocations. Yet they repeat: an
// update carries the stored object's templates twice (old and new), the RayClusters a
// RayService creates carry its templates, a fleet is stamped out from one chart, and GitOps
// tools re-apply the same manifests. The API server serializes an object the same way every
// time, so a repeated template arrives as the same bytes.
//
// sharingDecoder decodes RayClusters and RayServices like typedDecoder, except that each pod
// template is taken from a bounded table of templates decoded before in the same namespace,
// keyed by the SHA-256 of its raw JSON, and decoded (and added) only when it is not there. Decoding is deterministic,
// so the result is the object typedDecoder would return, but its templates share their
// contents with other requests' objects: what is decoded this way is only read (validation
// copies a template before building a pod from it; TestValidationLeavesSharedTemplatesAlone).
//
// Anything the raw scan cannot read with certainty (a key given twice or written with escapes,
// a template that is not an object) and any decoding error take the plain way, so errors read
// exactly as before.
type sharingDecoder struct {
	templates *sharedtable.Table[*corev1.PodTemplateSpec]
}

// Limits of the table: a decoded template takes a few KiB plus about one and a half times its
// JSON, so 256 typical ones hold about 1.5 MB, and filled with the largest it keeps the table
// holds about 4.5 MB (TestSharedTemplatesMemoryIsBounded). A template over 32 KiB is decoded
// every time.
const (
	sharedTemplates        = 256
	sharedTemplateBytes    = 2 << 20
	maxSharedTemplateBytes = 32 << 10
)

func newSharingDecoder() sharingDecoder {
	return sharingDecoder{templates: sharedtable.New[*corev1.PodTemplateSpec](sharedtable.Limits{
		Entries: sharedTemplates, Bytes: sharedTemplateBytes, EntryBytes: maxSharedTemplateBytes,
	})}
}

var _ objectDecoder = sharingDecoder{}

// decode fills into from raw, an object of a request in namespace.
func (d sharingDecoder) decode(namespace string, raw runtime.RawExtension, into runtime.Object) error {
	spec := clusterSpecOf(into)
	if spec == nil {
		return typedDecoder{}.DecodeRaw(raw, into)
	}
	elided, ok := findElided(raw.Raw, into, false)
	if !ok || len(elided) == 0 {
		return typedDecoder{}.DecodeRaw(raw, into)
	}
	keys := make([]sharedtable.Key, len(elided))
	shared := make([]*corev1.PodTemplateSpec, len(elided))
	hits := 0
	for i, e := range elided {
		// Kept per namespace: how fast a review is cannot tell a tenant what another
		// namespace wrote.
		keys[i] = sharedtable.KeyIn(namespace, raw.Raw[e.start:e.end])
		if t, ok := d.templates.Get(keys[i]); ok {
			shared[i] = t
			hits++
		}
	}
	if hits == 0 {
		// Nothing to share: one decode of the whole object costs least, and its templates
		// are kept for the requests that repeat them.
		if err := (typedDecoder{}).DecodeRaw(raw, into); err != nil {
			return err
		}
		for i, e := range elided {
			if target := e.template(spec); target != nil {
				t := *target
				d.templates.Add(keys[i], &t, e.end-e.start)
			}
		}
		return nil
	}
	if err := sigsjson.UnmarshalCaseSensitivePreserveInts(withElided(raw.Raw, elided), into); err != nil {
		return decodeAfresh(raw, into)
	}
	for i, e := range elided {
		target := e.template(spec)
		if target == nil {
			return decodeAfresh(raw, into)
		}
		if shared[i] == nil {
			t := &corev1.PodTemplateSpec{}
			if err := sigsjson.UnmarshalCaseSensitivePreserveInts(raw.Raw[e.start:e.end], t); err != nil {
				return decodeAfresh(raw, into)
			}
			d.templates.Add(keys[i], t, e.end-e.start)
			shared[i] = t
		}
		*target = *shared[i]
	}
	return nil
}

// decodeAfresh empties into and decodes raw the plain way, for its error message.
func decodeAfresh(raw runtime.RawExtension, into runtime.Object) error {
	switch o := into.(type) {
	case *rayv1.RayCluster:
		*o = rayv1.RayCluster{}
	case *rayv1.RayService:
		*o = rayv1.RayService{}
	}
	return typedDecoder{}.DecodeRaw(raw, into)
}

// decodeWithoutTemplates decodes raw into a RayCluster or RayService without its pod
// templates and serve config (as withoutTemplates leaves it) and without ever decoding them:
// defaulting does not read them. A template the raw scan cannot set aside is decoded and then
// dropped. Malformed content inside a template is therefore not reported here; the API
// server's schema check and the validating webhook report it.
//
// skeleton is what was decoded: raw with the templates and serve config emptied (raw itself
// when they could not be set aside). It answers what raw has outside them at a fraction of
// the scanning.
func decodeWithoutTemplates(raw []byte, into runtime.Object) (skeleton []byte, err error) {
	if elided, ok := findElided(raw, into, true); ok && len(elided) > 0 {
		skeleton = withElided(raw, elided)
		return skeleton, sigsjson.UnmarshalCaseSensitivePreserveInts(skeleton, into)
	}
	if err := (typedDecoder{}).DecodeRaw(runtime.RawExtension{Raw: raw}, into); err != nil {
		return nil, err
	}
	if spec := clusterSpecOf(into); spec != nil {
		*spec = specWithoutTemplates(*spec)
	}
	if svc, ok := into.(*rayv1.RayService); ok {
		svc.Spec.ServeConfigV2 = ""
	}
	return raw, nil
}

// clusterSpecOf is the RayCluster spec inside a RayCluster or RayService, nil for others.
func clusterSpecOf(obj runtime.Object) *rayv1.RayClusterSpec {
	switch o := obj.(type) {
	case *rayv1.RayCluster:
		return &o.Spec
	case *rayv1.RayService:
		return &o.Spec.RayClusterSpec
	}
	return nil
}

// elidedValue is a value of the raw object set aside for decoding: a pod template (group -1
// for the head, else the worker group's index) or the serve config (group serveConfig).
type elidedValue struct {
	start, end int
	group      int
}

const (
	headGroup   = -1
	serveConfig = -2
)

// template is where the decoded template of e goes in spec; nil if spec has no such group.
func (e elidedValue) template(spec *rayv1.RayClusterSpec) *corev1.PodTemplateSpec {
	switch {
	case e.group == headGroup:
		return &spec.HeadGroupSpec.Template
	case e.group >= 0 && e.group < len(spec.WorkerGroupSpecs):
		return &spec.WorkerGroupSpecs[e.group].Template
	}
	return nil
}

// findElided finds the pod templates of a RayCluster's or RayService's raw object (and with
// serve, a RayService's serve config), in the order they appear, in one pass over the bytes:
// it descends only into the members on the way to them. ok is false when the object cannot
// be read with certainty: a key on the way given twice (a decoder merges the values of a
// repeated key) or written with escapes, or a value on the way of an unexpected type.
func findElided(raw []byte, obj runtime.Object, serve bool) (found []elidedValue, ok bool) {
	_, service := obj.(*rayv1.RayService)
	e := elider{raw: raw, serve: serve, found: make([]elidedValue, 0, 8)}
	level := clusterSpecLevel
	if service {
		level = serviceSpecLevel
	}
	end, ok := e.object(skipSpace(raw, 0), rootLevel, level, 0)
	if !ok || skipSpace(raw, end) != len(raw) {
		return nil, false
	}
	slices.SortFunc(e.found, func(a, b elidedValue) int { return a.start - b.start })
	return e.found, true
}

// The objects on the way to the templates, and the members read in each.
type elideLevel int

const (
	rootLevel        elideLevel = iota // spec
	serviceSpecLevel                   // rayClusterConfig, serveConfigV2
	clusterSpecLevel                   // headGroupSpec, workerGroupSpecs
	groupLevel                         // template
)

var elideKeys = [...][]string{
	rootLevel:        {"spec"},
	serviceSpecLevel: {"rayClusterConfig", "serveConfigV2"},
	clusterSpecLevel: {"headGroupSpec", "workerGroupSpecs"},
	groupLevel:       {"template"},
}

type elider struct {
	raw   []byte
	serve bool
	found []elidedValue
}

// object reads the object (or null) at raw[start] of the given level, descending into the
// members of elideKeys[level] (under the conditions of namedMembers). spec is
// the level of the root's spec; group is the worker group (or headGroup) of a group level.
func (e *elider) object(start int, level, spec elideLevel, group int) (int, bool) {
	if start < len(e.raw) && e.raw[start] != '{' {
		return e.null(start)
	}
	return namedMembers(e.raw, start, elideKeys[level], func(which, at int) (int, bool) {
		return e.member(at, level, which, spec, group)
	})
}

// member reads the value at raw[at] of the which-th key of level.
func (e *elider) member(at int, level elideLevel, which int, spec elideLevel, group int) (int, bool) {
	switch {
	case level == rootLevel:
		return e.object(at, spec, spec, 0)
	case level == serviceSpecLevel && which == 0:
		return e.object(at, clusterSpecLevel, spec, 0)
	case level == serviceSpecLevel:
		return e.value(at, '"', serveConfig, e.serve)
	case level == clusterSpecLevel && which == 0:
		return e.object(at, groupLevel, spec, headGroup)
	case level == clusterSpecLevel:
		if at < len(e.raw) && e.raw[at] != '[' {
			return e.null(at)
		}
		return walkElements(e.raw, at, func(i, start int) (int, bool, bool) {
			end, ok := e.object(start, groupLevel, spec, i)
			return end, true, ok
		})
	default: // a group's template
		return e.value(at, '{', group, true)
	}
}

// value reads a value that must start with first (or be null), and with keep sets it aside.
func (e *elider) value(at int, first byte, group int, keep bool) (int, bool) {
	if at < len(e.raw) && e.raw[at] != first {
		return e.null(at)
	}
	end, ok := skipValue(e.raw, at)
	if ok && keep {
		e.found = append(e.found, elidedValue{start: at, end: end, group: group})
	}
	return end, ok
}

// null reads the value at raw[at], which must be null.
func (e *elider) null(at int) (int, bool) {
	end, ok := skipValue(e.raw, at)
	return end, ok && string(e.raw[at:end]) == "null"
}

// withElided is raw with each elided value replaced by an empty one of its kind.
func withElided(raw []byte, elided []elidedValue) []byte {
	out := make([]byte, 0, len(raw))
	last := 0
	for _, e := range elided {
		out = append(out, raw[last:e.start]...)
		if e.group == serveConfig {
			out = append(out, `""`...)
		} else {
			out = append(out, "{}"...)
		}
		last = e.end
	}
	return append(out, raw[last:]...)
}
