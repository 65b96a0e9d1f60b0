package admissionjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"gomodules.xyz/jsonpatch/v2"
)

// DefaultingPatch returns the JSON patch that takes the request's raw object to the defaulted
// one. It compares the decoded object with the defaulted one field by field (structPatch:
// nothing is marshalled), so differences a decode/encode round trip alone causes (e.g.
// "1000m" printed as "1") are not in it: they are not defaults, and patching them would
// rewrite what the user wrote. The operations are then fitted to the raw object: a key the
// user left out is added, not replaced.
//
// original and defaulted are without templates (WithoutTemplates), so no operation is inside a
// template or the serve config, and which keys the request has is read from skeleton (raw with
// those emptied, as DecodeWithoutTemplates returns it, or raw itself). When the change cannot
// be written that way (a value removed, a default under an object the request lacks), the
// patch is the diff of the marshalled objects, which assumes nothing: full returns the whole
// original and defaulted objects for it, and its error is returned as it is.
func DefaultingPatch(raw, skeleton []byte, original, defaulted any, full func() (original, defaulted any, err error)) ([]jsonpatch.Operation, error) {
	patches, err := structPatch(original, defaulted)
	if errors.Is(err, errNeedsRemove) {
		return diffFromRaw(raw, full)
	}
	if err != nil || len(patches) == 0 {
		return patches, err
	}
	for i := range patches {
		exists, parentOK := rawHas(skeleton, patches[i].Path)
		if !parentOK || patches[i].Operation == "remove" {
			// Defaulting only adds and replaces, under objects the request has; anything
			// else takes the slower way that assumes nothing.
			return diffFromRaw(raw, full)
		}
		if !exists && patches[i].Operation == "replace" {
			patches[i].Operation = "add"
		}
	}
	return patches, nil
}

// rawHas reports whether the JSON pointer's key exists in the raw object, and whether its
// parent is an object. It scans the raw bytes along the pointer without decoding or
// copying them.
func rawHas(raw []byte, pointer string) (exists, parentOK bool) {
	rest, ok := strings.CutPrefix(pointer, "/")
	if !ok {
		return false, false
	}
	cur := raw
	for more := true; more; {
		var t string
		t, rest, more = strings.Cut(rest, "/")
		t = strings.ReplaceAll(strings.ReplaceAll(t, "~1", "/"), "~0", "~")
		last := !more
		cur = bytes.TrimLeft(cur, " \t\r\n")
		switch {
		case len(cur) > 0 && cur[0] == '{':
			next, found, ok := rawMember(cur, t)
			if !ok {
				return false, false
			}
			if last {
				return found, true
			}
			if !found {
				return false, false
			}
			cur = next
		case len(cur) > 0 && cur[0] == '[' && !last:
			n, err := strconv.Atoi(t)
			if err != nil {
				return false, false
			}
			next, ok := rawElement(cur, n)
			if !ok {
				return false, false
			}
			cur = next
		default:
			return false, false
		}
	}
	return false, false
}

// diffFromRaw diffs the raw object against the defaulted one and drops what the round trip
// alone changes.
func diffFromRaw(raw []byte, full func() (original, defaulted any, err error)) ([]jsonpatch.Operation, error) {
	original, defaulted, err := full()
	if err != nil {
		return nil, err
	}
	defaultedJSON, err := json.Marshal(defaulted)
	if err != nil {
		return nil, err
	}
	originalJSON, err := json.Marshal(original)
	if err != nil {
		return nil, err
	}
	patches, err := jsonpatch.CreatePatch(raw, defaultedJSON)
	if err != nil {
		return nil, err
	}
	roundTrip, err := jsonpatch.CreatePatch(raw, originalJSON)
	if err != nil {
		return nil, err
	}
	return slices.DeleteFunc(patches, func(p jsonpatch.Operation) bool {
		return slices.ContainsFunc(roundTrip, func(q jsonpatch.Operation) bool {
			return p.Operation == q.Operation && p.Path == q.Path && reflect.DeepEqual(p.Value, q.Value)
		})
	}), nil
}
