package validation

import (
	"reflect"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// ratchet keeps, of the errors found in an update's new object, those about what the update
// changed, so that an object stored under older rules, imported from KubeRay or admitted
// while the webhook was off can still be relabelled, scaled by the autoscaler and fixed one
// field at a time. The old object is compared after defaulting, as the new one is.
//
// An error counts when the value at its field path differs between the old and the new
// object, read generically from their JSON forms (spec.workerGroupSpecs[1].replicas,
// metadata.annotations[ray.io/ft-enabled]), or when the path resolves in only one of them;
// a path that resolves in neither (a field missing from both, e.g. a required field that
// the stored object never had) is unchanged. A path into a string compares the string:
// spec.serveConfigV2.applications[0].name compares the whole serve config. Errors of rules
// that read several fields also compare those (check.related), and errors of rules that
// compared old and new themselves (the pod bounds, the feature gate) always count.
func (c *check) ratchet(errs field.ErrorList, old, updated runtime.Object) field.ErrorList {
	oldDoc, err := runtime.DefaultUnstructuredConverter.ToUnstructured(old)
	if err != nil {
		return errs // cannot compare: every error counts
	}
	newDoc, err := runtime.DefaultUnstructuredConverter.ToUnstructured(updated)
	if err != nil {
		return errs
	}
	var kept field.ErrorList
	for _, e := range errs {
		paths, ok := c.comparedPaths[e]
		if !ok {
			paths = []string{e.Field}
		}
		if c.decided[e] || anyChanged(oldDoc, newDoc, paths) {
			kept = append(kept, e)
		}
	}
	return kept
}

func anyChanged(oldDoc, newDoc map[string]any, paths []string) bool {
	for _, p := range paths {
		oldValue, inOld := resolvePath(oldDoc, p)
		newValue, inNew := resolvePath(newDoc, p)
		if inOld != inNew || !reflect.DeepEqual(oldValue, newValue) {
			return true
		}
	}
	return false
}

// resolvePath finds the value at a field path in an object's JSON form. Bracketed segments
// index lists ([1]) or key maps ([ray.io/ft-enabled]); a path that continues inside a
// string resolves to the string.
func resolvePath(doc any, path string) (any, bool) {
	v := doc
	for path != "" {
		if _, isString := v.(string); isString {
			return v, true
		}
		var segment string
		bracketed := path[0] == '['
		if bracketed {
			end := strings.IndexByte(path, ']')
			if end < 0 {
				return nil, false
			}
			segment, path = path[1:end], path[end+1:]
		} else {
			path = strings.TrimPrefix(path, ".")
			end := strings.IndexAny(path, ".[")
			if end < 0 {
				end = len(path)
			}
			segment, path = path[:end], path[end:]
		}
		switch cur := v.(type) {
		case map[string]any:
			next, ok := cur[segment]
			if !ok {
				return nil, false
			}
			v = next
		case []any:
			i, err := strconv.Atoi(segment)
			if !bracketed || err != nil || i < 0 || i >= len(cur) {
				return nil, false
			}
			v = cur[i]
		default:
			return nil, false
		}
	}
	return v, true
}
