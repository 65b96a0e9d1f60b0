package v1_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"sigs.k8s.io/yaml"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
)

// TestRoundTrip decodes the full-featured manifests strictly (an unknown field fails) and
// checks that encoding the typed object again keeps every value of the original manifest,
// i.e. no field is dropped or renamed by our JSON tags.
func TestRoundTrip(t *testing.T) {
	cases := map[string]any{
		"raycluster-full.yaml": &rayv1.RayCluster{},
		"rayservice-full.yaml": &rayv1.RayService{},
	}
	for file, obj := range cases {
		t.Run(file, func(t *testing.T) {
			raw, err := os.ReadFile(filepath.Join("..", "..", "..", "test", "testdata", file))
			if err != nil {
				t.Fatal(err)
			}
			js, err := yaml.YAMLToJSON(raw)
			if err != nil {
				t.Fatal(err)
			}
			dec := json.NewDecoder(bytes.NewReader(js))
			dec.DisallowUnknownFields()
			if err := dec.Decode(obj); err != nil {
				t.Fatalf("strict decode: %v", err)
			}
			out, err := json.Marshal(obj)
			if err != nil {
				t.Fatal(err)
			}
			var want, got map[string]any
			if err := json.Unmarshal(js, &want); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(out, &got); err != nil {
				t.Fatal(err)
			}
			for _, diff := range missing("", want, got) {
				t.Error(diff)
			}
		})
	}
}

// missing lists the values of want that got does not carry unchanged.
func missing(path string, want, got any) []string {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return []string{fmt.Sprintf("%s: want object, got %T", path, got)}
		}
		var out []string
		for k, v := range w {
			out = append(out, missing(path+"."+k, v, g[k])...)
		}
		return out
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			return []string{fmt.Sprintf("%s: want %d items, got %v", path, len(w), got)}
		}
		var out []string
		for i := range w {
			out = append(out, missing(fmt.Sprintf("%s[%d]", path, i), w[i], g[i])...)
		}
		return out
	default:
		if !reflect.DeepEqual(want, got) {
			return []string{fmt.Sprintf("%s: want %v, got %v", path, want, got)}
		}
		return nil
	}
}

// TestRoundTripDetectsDrops proves the comparison above can fail.
func TestRoundTripDetectsDrops(t *testing.T) {
	want := map[string]any{"spec": map[string]any{"a": 1.0, "b": []any{"x"}}}
	got := map[string]any{"spec": map[string]any{"a": 1.0}}
	if d := missing("", want, got); len(d) != 1 {
		t.Fatalf("want one difference, got %v", d)
	}
}
