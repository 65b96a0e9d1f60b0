package admissionjson

import (
	"bytes"
	"encoding"
	stdjson "encoding/json"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	sigsjson "sigs.k8s.io/json"
)

// A pod template the webhook has never seen is decoded in full, and with the JSON decoder
// that is one allocation per string, most of them a few bytes long (names, keys, paths,
// enum values): about half of what a review with four new templates allocates. A slice
// grows one element at a time, another allocation or three per list.
//
// decodeTemplate decodes a template so that its strings are substrings of one copy of its
// JSON and every slice and map is made at its final size; pointers, quantities and
// everything else are allocated as the JSON decoder does. It reads only what it can read
// with certainty: valid JSON whose strings have no escapes and are valid UTF-8, object keys
// given once, values of the type their field expects, and Go types with no field-name
// conflicts, `,string` options, interfaces or text unmarshalers. Anything else takes the
// plain way from the start, so the result (and any error) is exactly the JSON decoder's
// (TestDecodeTemplateMatchesThePlainDecoder, FuzzDecodeTemplate).
//
// The substrings keep the template's JSON alive as long as any of them is: a template's
// worth of bytes, which the shared table already counts for the templates it keeps.
func decodeTemplate(raw []byte, t *corev1.PodTemplateSpec, scratch *arenaScratch) error {
	if stdjson.Valid(raw) && decodeArena(raw, nil, reflect.ValueOf(t).Elem(), scratch) {
		return nil
	}
	*t = corev1.PodTemplateSpec{}
	return sigsjson.UnmarshalCaseSensitivePreserveInts(raw, t)
}

// decodeObject decodes raw, a RayCluster or RayService, into a zero into without the values
// of elided (its templates), as Decode decodes withElided(raw, elided), with the arena
// decoder when it can. Its strings are substrings of raw's copy, which lives as long as the
// object: a review's.
func decodeObject(raw []byte, elided []elidedValue, into runtime.Object, scratch *arenaScratch) error {
	v := reflect.ValueOf(into)
	if v.Kind() != reflect.Pointer || v.IsNil() {
		return Decode(withElided(raw, elided), into)
	}
	if stdjson.Valid(raw) && decodeArena(raw, elided, v.Elem(), scratch) {
		return nil
	}
	v.Elem().SetZero()
	return Decode(withElided(raw, elided), into)
}

// arenaScratch is what the arena decodes of one request share: a key and an element to
// decode into for each map type (the JSON decoder keeps one pair per map).
type arenaScratch struct {
	maps [4]mapScratch
}

type mapScratch struct {
	t         reflect.Type
	key, elem reflect.Value
}

// arenaDecoder reads valid JSON into a zero Go value.
type arenaDecoder struct {
	raw  []byte
	text string // raw as one string: decoded strings are its substrings
	// skip are values left out (zero), as if they were empty.
	skip    []elidedValue
	scratch *arenaScratch
}

// decodeArena decodes raw (valid JSON) into v, a zero addressable value, leaving the values
// of skip zero; false when raw has anything it does not read with certainty (v is then
// partly filled).
func decodeArena(raw []byte, skip []elidedValue, v reflect.Value, scratch *arenaScratch) (ok bool) {
	// Reflection misused on an unforeseen type panics; that is one more case for the
	// plain decoder, never a failed review.
	defer func() {
		if recover() != nil {
			ok = false
		}
	}()
	d := arenaDecoder{raw: raw, text: string(raw), skip: skip, scratch: scratch}
	end, ok := d.value(skipSpace(raw, 0), v)
	return ok && skipSpace(raw, end) == len(raw)
}

// value decodes the value at raw[i] into v and returns the index just past it.
func (d *arenaDecoder) value(i int, v reflect.Value) (int, bool) {
	if i >= len(d.raw) {
		return 0, false
	}
	for _, e := range d.skip {
		if e.start == i {
			return e.end, true // an empty object or string leaves a zero value as it is
		}
	}
	c := d.raw[i]
	if v.Kind() == reflect.Pointer {
		if c == 'n' {
			return d.null(i) // the pointer stays nil
		}
		v.Set(reflect.New(v.Type().Elem()))
		return d.value(i, v.Elem())
	}
	switch v.Type() {
	case quantityT:
		return d.quantity(i, v.Addr().Interface().(*resource.Quantity))
	case intOrStringT:
		return d.intOrString(i, v.Addr().Interface().(*intstr.IntOrString))
	}
	info := infoOf(v.Type())
	if info.unsupported {
		return 0, false
	}
	if info.unmarshaler {
		// As the JSON decoder does, null included.
		end, ok := skipValue(d.raw, i)
		if !ok {
			return 0, false
		}
		u, _ := v.Addr().Interface().(stdjson.Unmarshaler)
		return end, u != nil && u.UnmarshalJSON(d.raw[i:end]) == nil
	}
	if c == 'n' {
		return d.null(i) // null leaves a value as it is, and maps and slices nil
	}
	switch v.Kind() {
	case reflect.Struct:
		return d.object(i, v, info)
	case reflect.Map:
		return d.mapValue(i, v)
	case reflect.Slice:
		return d.slice(i, v)
	case reflect.String:
		s, end, ok := d.str(i)
		if ok {
			v.SetString(s)
		}
		return end, ok
	case reflect.Bool:
		end, ok := skipValue(d.raw, i)
		switch {
		case !ok:
			return 0, false
		case d.text[i:end] == "true":
			v.SetBool(true)
		case d.text[i:end] != "false":
			return 0, false
		}
		return end, true
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64:
		return d.number(i, v)
	}
	return 0, false
}

func (d *arenaDecoder) null(i int) (int, bool) {
	end, ok := skipValue(d.raw, i)
	return end, ok && d.text[i:end] == "null"
}

// str reads the string at raw[i]: a substring of text when it has no escapes and is valid
// UTF-8; otherwise the JSON decoder unescapes it (and replaces invalid bytes) into a string
// of its own.
func (d *arenaDecoder) str(i int) (string, int, bool) {
	if d.raw[i] != '"' {
		return "", 0, false
	}
	end, ok := skipString(d.raw, i)
	if !ok {
		return "", 0, false
	}
	s := d.raw[i+1 : end-1]
	plain := bytes.IndexByte(s, '\\') < 0
	for _, b := range s {
		if b >= utf8.RuneSelf {
			if !utf8.Valid(s) {
				plain, s = false, nil // not unescape's
			}
			break
		}
	}
	if plain {
		return d.text[i+1 : end-1], end, true
	}
	if out, ok := unescape(s); ok {
		return out, end, true
	}
	var out string
	if sigsjson.UnmarshalCaseSensitivePreserveInts(d.raw[i:end], &out) != nil {
		return "", 0, false
	}
	return out, end, true
}

// unescape is s, valid UTF-8 with escapes of one character only, unescaped; false for
// anything else (\u escapes: surrogates have rules of their own).
func unescape(s []byte) (string, bool) {
	if s == nil {
		return "", false
	}
	var b strings.Builder
	b.Grow(len(s))
	for {
		k := bytes.IndexByte(s, '\\')
		if k < 0 {
			b.Write(s)
			return b.String(), true
		}
		b.Write(s[:k])
		if k+1 >= len(s) {
			return "", false
		}
		switch c := s[k+1]; c {
		case '"', '\\', '/':
			b.WriteByte(c)
		case 'b':
			b.WriteByte('\b')
		case 'f':
			b.WriteByte('\f')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 't':
			b.WriteByte('\t')
		default:
			return "", false
		}
		s = s[k+2:]
	}
}

// number reads a JSON number into an integer or float, refusing what the JSON decoder
// refuses (a fraction or exponent for an integer, overflow).
func (d *arenaDecoder) number(i int, v reflect.Value) (int, bool) {
	if c := d.raw[i]; c != '-' && (c < '0' || c > '9') {
		return 0, false
	}
	end, ok := skipValue(d.raw, i)
	if !ok {
		return 0, false
	}
	s := d.text[i:end]
	switch v.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || v.OverflowInt(n) {
			return 0, false
		}
		v.SetInt(n)
	case reflect.Float32, reflect.Float64:
		f, err := strconv.ParseFloat(s, v.Type().Bits())
		if err != nil || v.OverflowFloat(f) {
			return 0, false
		}
		v.SetFloat(f)
	default:
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil || v.OverflowUint(n) {
			return 0, false
		}
		v.SetUint(n)
	}
	return end, true
}

// object reads a JSON object into a struct; a key given twice is not read (the JSON decoder
// merges the values).
func (d *arenaDecoder) object(i int, v reflect.Value, info *typeInfo) (int, bool) {
	if d.raw[i] != '{' {
		return 0, false
	}
	var seen uint64
	return walkMembers(d.raw, i, func(key []byte, at int) (int, bool, bool) {
		name := key[1 : len(key)-1]
		f, known := info.fields[string(name)]
		if !known {
			if bytes.IndexByte(name, '\\') >= 0 {
				return 0, false, false // it may name a field once unescaped
			}
			end, ok := skipValue(d.raw, at)
			return end, true, ok
		}
		if seen&f.bit != 0 {
			return 0, false, false
		}
		seen |= f.bit
		end, ok := d.value(at, v.FieldByIndex(f.index))
		return end, true, ok
	})
}

// mapValue reads a JSON object into a map with string keys, made for its member count.
func (d *arenaDecoder) mapValue(i int, v reflect.Value) (int, bool) {
	t := v.Type()
	if d.raw[i] != '{' || t.Key().Kind() != reflect.String || infoOf(t.Key()).unsupported {
		return 0, false
	}
	n := 0
	if _, ok := walkMembers(d.raw, i, func(_ []byte, at int) (int, bool, bool) {
		n++
		end, ok := skipValue(d.raw, at)
		return end, true, ok
	}); !ok {
		return 0, false
	}
	m := reflect.MakeMapWithSize(t, n)
	key, elem := d.mapScratch(t)
	end, ok := walkMembers(d.raw, i, func(quoted []byte, at int) (int, bool, bool) {
		// quoted is raw[start:...], so its capacity tells where it starts.
		k, _, ok := d.str(cap(d.raw) - cap(quoted))
		if !ok {
			return 0, false, false
		}
		key.SetString(k)
		elem.SetZero()
		end, ok := d.value(at, elem)
		if ok {
			m.SetMapIndex(key, elem)
		}
		return end, true, ok
	})
	if ok {
		v.Set(m)
	}
	return end, ok
}

// slice reads a JSON array into a slice made for its element count (empty, not nil, for []).
func (d *arenaDecoder) slice(i int, v reflect.Value) (int, bool) {
	if d.raw[i] != '[' {
		return 0, false
	}
	n := 0
	if _, ok := walkElements(d.raw, i, func(_, start int) (int, bool, bool) {
		n++
		end, ok := skipValue(d.raw, start)
		return end, true, ok
	}); !ok {
		return 0, false
	}
	if n == 0 {
		v.Set(reflect.MakeSlice(v.Type(), 0, 0))
	} else {
		// Grown in place: reflect.MakeSlice would allocate a slice header besides the array.
		v.Grow(n)
		v.SetLen(n)
	}
	return walkElements(d.raw, i, func(idx, start int) (int, bool, bool) {
		end, ok := d.value(start, v.Index(idx))
		return end, true, ok
	})
}

// mapScratch is a key and an element to decode into for maps of type t.
func (d *arenaDecoder) mapScratch(t reflect.Type) (key, elem reflect.Value) {
	if d.scratch == nil {
		d.scratch = &arenaScratch{}
	}
	for i := range d.scratch.maps {
		s := &d.scratch.maps[i]
		if s.t == t {
			return s.key, s.elem
		}
		if s.t == nil {
			*s = mapScratch{t: t, key: reflect.New(t.Key()).Elem(), elem: reflect.New(t.Elem()).Elem()}
			return s.key, s.elem
		}
	}
	return reflect.New(t.Key()).Elem(), reflect.New(t.Elem()).Elem()
}

// quantity is Quantity.UnmarshalJSON reading the quantity's text from text: the parser keeps
// a canonical quantity's string, so it costs no allocation.
func (d *arenaDecoder) quantity(i int, q *resource.Quantity) (int, bool) {
	end, ok := skipValue(d.raw, i)
	if !ok {
		return 0, false
	}
	s := d.text[i:end]
	if s == "null" {
		*q = resource.Quantity{}
		return end, true
	}
	if len(s) >= 2 && s[0] == '"' && s[len(s)-1] == '"' {
		s = s[1 : len(s)-1]
	}
	parsed, err := resource.ParseQuantity(strings.TrimSpace(s))
	if err != nil {
		return 0, false
	}
	*q = parsed
	return end, true
}

// intOrString is IntOrString.UnmarshalJSON without a second decoder.
func (d *arenaDecoder) intOrString(i int, v *intstr.IntOrString) (int, bool) {
	if d.raw[i] == '"' {
		s, end, ok := d.str(i)
		if ok {
			v.Type, v.StrVal = intstr.String, s
		}
		return end, ok
	}
	v.Type = intstr.Int
	if d.raw[i] == 'n' {
		return d.null(i)
	}
	return d.number(i, reflect.ValueOf(&v.IntVal).Elem())
}

// typeInfo is what decoding a Go type needs to know, built once per type.
type typeInfo struct {
	// unmarshaler: the type decodes itself (json.Unmarshaler on its pointer).
	unmarshaler bool
	// unsupported: left to the plain decoder (interfaces, arrays, text unmarshalers,
	// json.Number, structs whose fields cannot be mapped with certainty).
	unsupported bool
	fields      map[string]structField
}

type structField struct {
	index []int
	bit   uint64 // for finding a key given twice
}

var (
	typeInfos         sync.Map // reflect.Type → *typeInfo
	jsonUnmarshalerT  = reflect.TypeFor[stdjson.Unmarshaler]()
	textUnmarshalerT  = reflect.TypeFor[encoding.TextUnmarshaler]()
	stdNumberT        = reflect.TypeFor[stdjson.Number]()
	quantityT         = reflect.TypeFor[resource.Quantity]()
	intOrStringT      = reflect.TypeFor[intstr.IntOrString]()
	maxTrackedMembers = 64
)

func infoOf(t reflect.Type) *typeInfo {
	if i, ok := typeInfos.Load(t); ok {
		return i.(*typeInfo)
	}
	i, _ := typeInfos.LoadOrStore(t, newTypeInfo(t))
	return i.(*typeInfo)
}

func newTypeInfo(t reflect.Type) *typeInfo {
	p := reflect.PointerTo(t)
	switch {
	case p.Implements(jsonUnmarshalerT):
		return &typeInfo{unmarshaler: true}
	case p.Implements(textUnmarshalerT), t == stdNumberT, t.Name() == "Number" && strings.Contains(t.PkgPath(), "json"):
		return &typeInfo{unsupported: true}
	}
	switch t.Kind() {
	case reflect.Interface, reflect.Array, reflect.Complex64, reflect.Complex128, reflect.Chan, reflect.Func, reflect.UnsafePointer:
		return &typeInfo{unsupported: true}
	case reflect.Struct:
		fields := map[string]structField{}
		if !collectFields(t, nil, fields) || len(fields) > maxTrackedMembers {
			return &typeInfo{unsupported: true}
		}
		n := 0
		for name, f := range fields {
			f.bit = 1 << n
			fields[name] = f
			n++
		}
		return &typeInfo{fields: fields}
	}
	return &typeInfo{}
}

// collectFields maps JSON names to the fields of struct t (inside embedded structs too), by
// the JSON decoder's rules; false when a rule is not one it follows with certainty here: two
// fields of one name (the decoder ranks them by depth and tags), an embedded pointer or
// unexported struct, a `,string` option or a name the decoder would not accept.
func collectFields(t reflect.Type, index []int, out map[string]structField) bool {
	for i := range t.NumField() {
		sf := t.Field(i)
		tag := sf.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		at := append(append([]int(nil), index...), i)
		if sf.Anonymous {
			if sf.Type.Kind() == reflect.Pointer || !sf.IsExported() {
				return false
			}
			if name == "" && sf.Type.Kind() == reflect.Struct {
				if !collectFields(sf.Type, at, out) {
					return false
				}
				continue
			}
		} else if !sf.IsExported() {
			continue
		}
		if hasOption(opts, "string") || !plainFieldName(name) {
			return false
		}
		if name == "" {
			name = sf.Name
		}
		if _, twice := out[name]; twice {
			return false
		}
		out[name] = structField{index: at}
	}
	return true
}

func hasOption(opts, want string) bool {
	for opts != "" {
		var o string
		o, opts, _ = strings.Cut(opts, ",")
		if o == want {
			return true
		}
	}
	return false
}

// plainFieldName: a tag name of letters, digits and the punctuation Kubernetes uses, which
// the JSON decoder takes as it is (it ignores some other names).
func plainFieldName(name string) bool {
	for _, r := range name {
		letter := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z'
		if !letter && (r < '0' || r > '9') && !strings.ContainsRune("-_.$@/", r) {
			return false
		}
	}
	return true
}
