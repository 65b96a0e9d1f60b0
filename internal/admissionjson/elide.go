package admissionjson

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
)

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
