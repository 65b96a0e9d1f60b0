package webhooks

import (
	"bytes"
	"encoding"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// A request object that does not decode into raygate's types (a number where a string is
// wanted, as in Ray's docs: rayStartParams: {num-cpus: 0}) is answered like the API server
// answers a schema violation, with the field and the type it must have:
//
//	spec.headGroupSpec.rayStartParams[num-cpus]: Invalid value: "integer": must be of type string
//
// never with a Go decoding message. The mutating webhooks answer first (they run before the
// API server's schema check, whose answer to the same manifest is
//
//	spec.headGroupSpec.rayStartParams.num-cpus: Invalid value: "integer": spec.headGroupSpec.rayStartParams.num-cpus in body must be of type string: "integer"
//	<nil>: Invalid value: null: some validation rules were not checked because the object was invalid; correct the existing errors to complete validation
//
// ); the validating webhooks answer the same for what reaches them (a CRD installed without
// raygate's schema).

// maxTypeErrors bounds the errors listed for one object.
const maxTypeErrors = 50

var (
	jsonUnmarshaler = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// typeErrors lists where raw's JSON does not fit into's type. It is empty when raw is not
// JSON at all or every value fits.
func typeErrors(raw []byte, into any) field.ErrorList {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var doc any
	if err := dec.Decode(&doc); err != nil {
		return nil
	}
	var errs field.ErrorList
	checkType(doc, reflect.TypeOf(into), nil, &errs)
	return errs
}

// checkType checks v (decoded JSON) against Go type t at path.
func checkType(v any, t reflect.Type, path *field.Path, errs *field.ErrorList) {
	if v == nil || len(*errs) >= maxTypeErrors {
		return // null sets the zero value
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if reflect.PointerTo(t).Implements(jsonUnmarshaler) || reflect.PointerTo(t).Implements(textUnmarshaler) {
		return // decodes itself (quantities, int-or-strings, times, raw JSON)
	}
	mismatch := func(want string) {
		*errs = append(*errs, field.TypeInvalid(pathOrRoot(path), jsonType(v), "must be of type "+want))
	}
	switch t.Kind() {
	case reflect.Interface:
	case reflect.String:
		if _, ok := v.(string); !ok {
			mismatch("string")
		}
	case reflect.Bool:
		if _, ok := v.(bool); !ok {
			mismatch("boolean")
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		checkInt(v, t, path, errs, mismatch)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		checkInt(v, t, path, errs, mismatch)
	case reflect.Float32, reflect.Float64:
		if _, ok := v.(json.Number); !ok {
			mismatch("number")
		}
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 {
			if _, ok := v.(string); !ok {
				mismatch("string") // bytes are base64
			}
			return
		}
		items, ok := v.([]any)
		if !ok {
			mismatch("array")
			return
		}
		for i, item := range items {
			checkType(item, t.Elem(), pathOrRoot(path).Index(i), errs)
		}
	case reflect.Map:
		obj, ok := v.(map[string]any)
		if !ok {
			mismatch("object")
			return
		}
		for _, k := range slices.Sorted(maps.Keys(obj)) {
			checkType(obj[k], t.Elem(), pathOrRoot(path).Key(k), errs)
		}
	case reflect.Struct:
		obj, ok := v.(map[string]any)
		if !ok {
			mismatch("object")
			return
		}
		fields := jsonFields(t)
		for _, k := range slices.Sorted(maps.Keys(obj)) {
			if ft, ok := fields[k]; ok {
				checkType(obj[k], ft, path.Child(k), errs)
			}
		}
	}
}

// checkInt checks an integer: a whole number that fits in t.
func checkInt(v any, t reflect.Type, path *field.Path, errs *field.ErrorList, mismatch func(string)) {
	n, ok := v.(json.Number)
	if !ok || strings.ContainsAny(string(n), ".eE") {
		mismatch("integer")
		return
	}
	bits := t.Bits()
	if t.Kind() >= reflect.Uint && t.Kind() <= reflect.Uint64 {
		if _, err := strconv.ParseUint(string(n), 10, bits); err != nil {
			*errs = append(*errs, field.Invalid(pathOrRoot(path), json.RawMessage(n), fmt.Sprintf("must be between 0 and %d", uint64(math.MaxUint64)>>(64-bits))))
		}
		return
	}
	if _, err := strconv.ParseInt(string(n), 10, bits); err != nil {
		max := int64(math.MaxInt64) >> (64 - bits)
		*errs = append(*errs, field.Invalid(pathOrRoot(path), json.RawMessage(n), fmt.Sprintf("must be between %d and %d", -max-1, max)))
	}
}

// jsonFields are a struct's fields by JSON name, embedded (inline) structs' included.
func jsonFields(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		inline := f.Anonymous && name == "" || strings.Contains(","+opts+",", ",inline,")
		if inline {
			ft := f.Type
			for ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				for k, v := range jsonFields(ft) {
					if _, taken := out[k]; !taken {
						out[k] = v
					}
				}
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		out[name] = f.Type
	}
	return out
}

// jsonType names a JSON value's type as the API server's schema errors do.
func jsonType(v any) string {
	switch v := v.(type) {
	case string:
		return "string"
	case bool:
		return "boolean"
	case json.Number:
		if strings.ContainsAny(string(v), ".eE") {
			return "number"
		}
		return "integer"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return "null"
}

func pathOrRoot(p *field.Path) *field.Path {
	if p == nil {
		return field.NewPath("<root>")
	}
	return p
}
