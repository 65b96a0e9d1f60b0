package admissionjson

import (
	"encoding"
	"encoding/json"
	"errors"
	"reflect"
	"strconv"
	"strings"

	"gomodules.xyz/jsonpatch/v2"
)

// errNeedsRemove says a change cannot be written as an add or a replace (a value that
// became absent); the caller then takes the diff that assumes nothing.
var errNeedsRemove = errors.New("a value was removed")

// structPatch returns the operations that take original to defaulted, both values of the
// same Go type, by walking them side by side along their JSON field names: only what
// defaulting changed is visited twice, and nothing is marshalled. Every operation is a
// replace of the smallest changed member (an object that appeared is added whole); the
// caller fits replace and add to the raw request. A value that became absent returns
// errNeedsRemove.
func structPatch(original, defaulted any) ([]jsonpatch.Operation, error) {
	// Deep enough for the objects' paths without growing.
	w := patchWalker{path: make([]string, 0, 16)}
	if err := w.walk(reflect.ValueOf(original), reflect.ValueOf(defaulted)); err != nil {
		return nil, err
	}
	return w.ops, nil
}

// patchWalker collects operations; path holds the escaped tokens down to the member being
// walked, joined only for an operation.
type patchWalker struct {
	ops  []jsonpatch.Operation
	path []string
}

// at walks a member under the token tok.
func (w *patchWalker) at(tok string, a, b reflect.Value) error {
	w.path = append(w.path, tok)
	err := w.walk(a, b)
	w.path = w.path[:len(w.path)-1]
	return err
}

var (
	jsonMarshaler = reflect.TypeFor[json.Marshaler]()
	textMarshaler = reflect.TypeFor[encoding.TextMarshaler]()
)

// leaf says a type is encoded as one JSON value by its own marshaller (quantities, times,
// int-or-strings), so it is compared whole.
func leaf(t reflect.Type) bool {
	return t.Implements(jsonMarshaler) || t.Implements(textMarshaler) ||
		reflect.PointerTo(t).Implements(jsonMarshaler) || reflect.PointerTo(t).Implements(textMarshaler)
}

// replace records that the member at the current path becomes v.
func (w *patchWalker) replace(v reflect.Value) { w.replaceWith(v.Interface()) }

func (w *patchWalker) replaceWith(v any) {
	if len(w.path) == 0 {
		w.ops = append(w.ops, jsonpatch.Operation{Operation: "replace", Path: "/", Value: v})
		return
	}
	n := 0
	for _, t := range w.path {
		n += 1 + len(t)
	}
	var b strings.Builder
	b.Grow(n)
	for _, t := range w.path {
		b.WriteByte('/')
		b.WriteString(t)
	}
	w.ops = append(w.ops, jsonpatch.Operation{Operation: "replace", Path: b.String(), Value: v})
}

// replaceAt records that the member tok under the current path becomes v.
func (w *patchWalker) replaceAt(tok string, v reflect.Value) {
	w.path = append(w.path, tok)
	w.replace(v)
	w.path = w.path[:len(w.path)-1]
}

// equal compares two values of one type without copying them when they are addressable.
func equal(a, b reflect.Value) bool {
	if a.CanAddr() && b.CanAddr() {
		return reflect.DeepEqual(a.Addr().Interface(), b.Addr().Interface())
	}
	return reflect.DeepEqual(a.Interface(), b.Interface())
}

func (w *patchWalker) walk(a, b reflect.Value) error {
	t := a.Type()
	if t.Kind() != reflect.Pointer && leaf(t) {
		return w.whole(a, b)
	}
	switch t.Kind() {
	case reflect.Pointer:
		switch {
		case a.IsNil() && b.IsNil():
			return nil
		case b.IsNil():
			return errNeedsRemove
		case a.IsNil():
			w.replace(b)
			return nil
		}
		return w.walk(a.Elem(), b.Elem())
	case reflect.Struct:
		return w.walkStruct(a, b)
	case reflect.Map:
		if t.Key().Kind() != reflect.String || a.IsNil() != b.IsNil() || a.Len() > b.Len() {
			return w.whole(a, b)
		}
		if t == stringMap {
			// Labels, annotations, rayStartParams: walked without reflection, which
			// allocates a copy of every key and value it reads.
			return w.walkStringMap(a.Interface().(map[string]string), b.Interface().(map[string]string))
		}
		found := 0
		it := b.MapRange()
		for it.Next() {
			if a.MapIndex(it.Key()).IsValid() {
				found++
			}
		}
		if found != a.Len() {
			return w.whole(a, b) // a key went away: say the map whole
		}
		it.Reset(b)
		for it.Next() {
			tok := escapePointer(it.Key().String())
			if av := a.MapIndex(it.Key()); !av.IsValid() {
				w.replaceAt(tok, it.Value())
			} else if err := w.at(tok, av, it.Value()); err != nil {
				return err
			}
		}
		return nil
	case reflect.Slice:
		if a.IsNil() != b.IsNil() || a.Len() != b.Len() {
			return w.whole(a, b)
		}
		for i := 0; i < a.Len(); i++ {
			if err := w.at(strconv.Itoa(i), a.Index(i), b.Index(i)); err != nil {
				return err
			}
		}
		return nil
	case reflect.Bool, reflect.String, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Float32, reflect.Float64:
		if !a.Equal(b) {
			w.replace(b)
		}
		return nil
	default:
		return w.whole(a, b)
	}
}

var stringMap = reflect.TypeFor[map[string]string]()

// walkStringMap is the map case of walk for map[string]string, a no longer than b.
func (w *patchWalker) walkStringMap(a, b map[string]string) error {
	found := 0
	for k := range b {
		if _, ok := a[k]; ok {
			found++
		}
	}
	if found != len(a) {
		// A key went away: say the map whole.
		if !reflect.DeepEqual(a, b) {
			w.replaceWith(b)
		}
		return nil
	}
	for k, bv := range b {
		if av, ok := a[k]; !ok || av != bv {
			w.path = append(w.path, escapePointer(k))
			w.replaceWith(bv)
			w.path = w.path[:len(w.path)-1]
		}
	}
	return nil
}

// whole replaces a member, when it changed, by its new value.
func (w *patchWalker) whole(a, b reflect.Value) error {
	if !equal(a, b) {
		w.replace(b)
	}
	return nil
}

func (w *patchWalker) walkStruct(a, b reflect.Value) error {
	t := a.Type()
	for i := 0; i < t.NumField(); i++ {
		if !t.Field(i).IsExported() {
			return w.whole(a, b) // its fields cannot be walked one by one
		}
	}
	for i := 0; i < t.NumField(); i++ {
		name, omit, inline := jsonField(t.Field(i))
		af, bf := a.Field(i), b.Field(i)
		switch {
		case name == "-":
			continue
		case inline:
			if err := w.walk(af, bf); err != nil {
				return err
			}
			continue
		}
		tok := escapePointer(name)
		switch {
		case omit(bf) && omit(af):
		case omit(bf):
			return errNeedsRemove
		case omit(af):
			w.replaceAt(tok, bf) // absent from the request: added whole
		default:
			if err := w.at(tok, af, bf); err != nil {
				return err
			}
		}
	}
	return nil
}

// jsonField reads a field's JSON name the way encoding/json does ("-": not encoded), and
// says when a value of it is left out of the encoding.
func jsonField(f reflect.StructField) (name string, omit func(reflect.Value) bool, inline bool) {
	tag := f.Tag.Get("json")
	if tag == "-" {
		return "-", nil, false
	}
	name, opts, _ := strings.Cut(tag, ",")
	omit = never
	for opts != "" {
		var o string
		o, opts, _ = strings.Cut(opts, ",")
		switch o {
		case "omitempty":
			omit = isEmpty
		case "omitzero":
			omit = reflect.Value.IsZero
		case "inline":
			inline = true
		}
	}
	if name == "" && f.Anonymous {
		inline = true
	}
	if name == "" {
		name = f.Name
	}
	return name, omit, inline
}

func never(reflect.Value) bool { return false }

// isEmpty is encoding/json's omitempty test.
func isEmpty(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Array, reflect.Map, reflect.Slice, reflect.String:
		return v.Len() == 0
	case reflect.Bool:
		return !v.Bool()
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return v.Int() == 0
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return v.Uint() == 0
	case reflect.Float32, reflect.Float64:
		return v.Float() == 0
	case reflect.Interface, reflect.Pointer:
		return v.IsNil()
	}
	return false
}

func escapePointer(s string) string {
	if !strings.ContainsAny(s, "~/") {
		return s
	}
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}
