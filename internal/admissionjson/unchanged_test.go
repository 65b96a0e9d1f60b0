package admissionjson

import (
	"bytes"
	"encoding/json"
	"testing"
)

func TestSpecAndMetadata(t *testing.T) {
	for _, tt := range []struct {
		name, raw  string
		spec, meta string
		ok         bool
	}{
		{"plain", `{"apiVersion":"ray.io/v1","metadata":{"name":"a"},"spec":{"x":[1,"}"]},"status":{}}`, `{"x":[1,"}"]}`, `{"name":"a"}`, true},
		{"spaces", " {\n \"spec\" : null ,\t\"metadata\":{} } \n", `null`, `{}`, true},
		{"nested spec is not the top-level one", `{"metadata":{"spec":1},"status":{"spec":2},"spec":3}`, `3`, `{"spec":1}`, true},
		{"no spec", `{"metadata":{}}`, "", "", false},
		{"no metadata", `{"spec":{}}`, "", "", false},
		{"spec twice (a decoder keeps the last)", `{"spec":{},"metadata":{},"spec":{"a":1}}`, "", "", false},
		{"metadata twice", `{"metadata":{},"spec":{},"metadata":{"a":1}}`, "", "", false},
		{"escaped key may be spec", `{"metadata":{},"spec":{},"sp\u0065c":{"a":1}}`, "", "", false},
		{"not an object", `[{"spec":{},"metadata":{}}]`, "", "", false},
		{"truncated", `{"metadata":{},"spec":{"a":`, "", "", false},
		{"trailing bytes", `{"metadata":{},"spec":{}}x`, "", "", false},
		{"unterminated string", `{"metadata":{},"spec":"a`, "", "", false},
		{"missing colon", `{"metadata" {},"spec":{}}`, "", "", false},
		{"empty", ``, "", "", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			spec, meta, ok := specAndMetadata([]byte(tt.raw))
			if ok != tt.ok || (ok && (string(spec) != tt.spec || string(meta) != tt.meta)) {
				t.Errorf("specAndMetadata = %q, %q, %v; want %q, %q, %v", spec, meta, ok, tt.spec, tt.meta, tt.ok)
			}
		})
	}
}

// Unchanged holds exactly when both objects have the same spec and metadata bytes; status
// and everything else may differ.
func TestUnchanged(t *testing.T) {
	const stored = `{"apiVersion":"ray.io/v1","kind":"RayService","metadata":{"name":"a"},"spec":{"x":1},"status":{}}`
	for _, tt := range []struct {
		name, obj, old string
		want           bool
	}{
		{"no-op", stored, stored, true},
		{"status differs", stored, `{"apiVersion":"ray.io/v1","kind":"RayService","metadata":{"name":"a"},"spec":{"x":1},"status":{"observedGeneration":2}}`, true},
		{"members reordered", `{"spec":{"x":1},"metadata":{"name":"a"}}`, stored, true},
		{"spec differs", stored, `{"metadata":{"name":"a"},"spec":{"x":2}}`, false},
		{"metadata differs", stored, `{"metadata":{"name":"b"},"spec":{"x":1}}`, false},
		{"spacing differs", stored, `{"metadata":{"name": "a"},"spec":{"x":1}}`, false},
		{"no old object", stored, ``, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := Unchanged([]byte(tt.obj), []byte(tt.old)); got != tt.want {
				t.Errorf("Unchanged = %v, want %v", got, tt.want)
			}
			_, ok := UnchangedDigest([]byte(tt.obj), []byte(tt.old))
			if ok != tt.want {
				t.Errorf("UnchangedDigest ok = %v, want %v", ok, tt.want)
			}
		})
	}
	a, _ := UnchangedDigest([]byte(stored), []byte(stored))
	b, _ := UnchangedDigest([]byte(`{"metadata":{"name":"b"},"spec":{"x":1}}`), []byte(`{"metadata":{"name":"b"},"spec":{"x":1}}`))
	// The spec's length is in the digest, so bytes cannot move between spec and metadata.
	c, _ := UnchangedDigest([]byte(`{"spec":12,"metadata":3}`), []byte(`{"spec":12,"metadata":3}`))
	d, _ := UnchangedDigest([]byte(`{"spec":1,"metadata":23}`), []byte(`{"spec":1,"metadata":23}`))
	if a == b || c == d {
		t.Error("different spec and metadata have the same digest")
	}
}

func TestCleanSetIsBounded(t *testing.T) {
	var c CleanSet
	first := Digest{1}
	c.Add(first)
	if !c.Has(first) || c.Has(Digest{2}) {
		t.Fatal("the set does not hold what was added, or holds what was not")
	}
	for i := range cleanSetMax + 1 {
		c.Add(Digest{byte(i), byte(i >> 8), byte(i >> 16), 1})
	}
	if n := len(c.keys); n > cleanSetMax {
		t.Errorf("clean set holds %d digests; bound %d", n, cleanSetMax)
	}
}

// A request's objects reach Unchanged as the API server sent them; the digest must not
// depend on anything outside spec and metadata.
func TestUnchangedDigestIgnoresTheRest(t *testing.T) {
	x := []byte(`{"kind":"RayCluster","metadata":{"name":"a"},"spec":{},"status":{"a":1}}`)
	y := []byte(`{"metadata":{"name":"a"},"status":{"b":2},"spec":{}}`)
	dx, okX := UnchangedDigest(x, x)
	dy, okY := UnchangedDigest(y, y)
	if !okX || !okY || dx != dy {
		t.Errorf("digests %x (%v) and %x (%v) differ", dx, okX, dy, okY)
	}
	var indented bytes.Buffer
	if err := json.Indent(&indented, x, "", " "); err != nil {
		t.Fatal(err)
	}
	if Unchanged(indented.Bytes(), x) {
		t.Error("an old object spaced differently counts as unchanged")
	}
}
