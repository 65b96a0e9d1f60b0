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
	keys := newRawLookup(skeleton)
	for i := range patches {
		exists, parentOK := keys.has(patches[i].Path)
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
	return newRawLookup(raw).has(pointer)
}

// rawLookup answers rawHas for many pointers into one raw object, in the order a patch lists
// them. An object with thousands of worker groups gets thousands of defaults; finding each
// from the top (skipping whole values to reach a member, counting elements to reach the n-th
// group) made the webhook quadratic in them. So the values along the last parent resolved
// are kept, and a pointer resumes from where it shares that parent's path, and the elements
// of each array on the way are found once.
type rawLookup struct {
	raw []byte
	// parent is the last parent pointer resolved; ends[i] is where its (i+1)-th token ends,
	// and values[i] the value after i tokens (values[0] is the whole object).
	parent string
	ends   []int
	values [][]byte
	// elements are the elements of the arrays read so far, by pointer (nil: unreadable).
	elements map[string][][]byte
}

func newRawLookup(raw []byte) *rawLookup {
	return &rawLookup{raw: raw, values: [][]byte{bytes.TrimLeft(raw, " \t\r\n")}}
}

// has is rawHas for one pointer.
func (l *rawLookup) has(pointer string) (exists, parentOK bool) {
	if !strings.HasPrefix(pointer, "/") {
		return false, false
	}
	i := strings.LastIndexByte(pointer, '/')
	obj, ok := l.resolve(pointer[:i])
	if !ok || len(obj) == 0 || obj[0] != '{' {
		return false, false
	}
	_, found, ok := rawMember(obj, unescapePointerToken(pointer[i+1:]))
	if !ok {
		return false, false
	}
	return found, true
}

// resolve returns the value at parent (a pointer to a container), leading space trimmed.
func (l *rawLookup) resolve(parent string) ([]byte, bool) {
	// Keep the tokens this parent shares with the last one.
	depth := 0
	for depth < len(l.ends) {
		end := l.ends[depth]
		if len(parent) < end || parent[:end] != l.parent[:end] || (len(parent) > end && parent[end] != '/') {
			break
		}
		depth++
	}
	l.ends, l.values, l.parent = l.ends[:depth], l.values[:depth+1], parent
	at := 0
	if depth > 0 {
		at = l.ends[depth-1]
	}
	for at < len(parent) {
		end := strings.IndexByte(parent[at+1:], '/')
		if end < 0 {
			end = len(parent)
		} else {
			end += at + 1
		}
		next, ok := l.child(parent[:at], l.values[len(l.values)-1], unescapePointerToken(parent[at+1:end]))
		if !ok {
			l.parent, l.ends, l.values = "", l.ends[:0], l.values[:1]
			return nil, false
		}
		l.ends, l.values = append(l.ends, end), append(l.values, next)
		at = end
	}
	return l.values[len(l.values)-1], true
}

// child is the member or element token of the container cur at pointer.
func (l *rawLookup) child(pointer string, cur []byte, token string) ([]byte, bool) {
	var next []byte
	switch {
	case len(cur) > 0 && cur[0] == '{':
		val, found, ok := rawMember(cur, token)
		if !ok || !found {
			return nil, false
		}
		next = val
	case len(cur) > 0 && cur[0] == '[':
		elems, ok := l.arrayElements(pointer, cur)
		n, err := strconv.Atoi(token)
		if !ok || err != nil || n < 0 || n >= len(elems) {
			return nil, false
		}
		next = elems[n]
	default:
		return nil, false
	}
	return bytes.TrimLeft(next, " \t\r\n"), true
}

// arrayElements are the elements of the array arr at pointer.
func (l *rawLookup) arrayElements(pointer string, arr []byte) ([][]byte, bool) {
	if elems, seen := l.elements[pointer]; seen {
		return elems, elems != nil
	}
	var elems [][]byte
	if !eachElement(arr, func(_ int, v []byte) bool {
		elems = append(elems, v)
		return true
	}) {
		elems = nil
	} else if elems == nil {
		elems = [][]byte{}
	}
	if l.elements == nil {
		l.elements = map[string][][]byte{}
	}
	l.elements[pointer] = elems
	return elems, elems != nil
}

// rawMember returns the raw value of key in the object obj (which starts with '{').
func rawMember(obj []byte, key string) (val []byte, found, ok bool) {
	readable := true
	_, ok = eachMember(obj, func(k, v []byte) bool {
		is, kok := keyIs(k, key)
		if !kok {
			readable = false
			return false
		}
		if is {
			val, found = v, true
		}
		return !is
	})
	if !ok || !readable {
		return nil, false, false
	}
	return val, found, true
}

// decodeKey decodes a quoted object key.
func decodeKey(quoted []byte) (string, bool) {
	plain := quoted[1 : len(quoted)-1]
	if bytes.IndexByte(plain, '\\') < 0 {
		return string(plain), true
	}
	var s string
	if json.Unmarshal(quoted, &s) != nil {
		return "", false
	}
	return s, true
}

func unescapePointerToken(t string) string {
	return strings.ReplaceAll(strings.ReplaceAll(t, "~1", "/"), "~0", "~")
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
