package v1_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
)

// fullManifests are the test data files that together set every field of our types.
var fullManifests = []string{"raycluster-full.yaml", "rayservice-full.yaml", "rayjob-full.yaml", "raycronjob-full.yaml"}

var kindTypes = map[string]reflect.Type{
	rayv1.RayClusterKind: reflect.TypeFor[rayv1.RayCluster](),
	rayv1.RayServiceKind: reflect.TypeFor[rayv1.RayService](),
	rayv1.RayJobKind:     reflect.TypeFor[rayv1.RayJob](),
	rayv1.RayCronJobKind: reflect.TypeFor[rayv1.RayCronJob](),
}

// manifestDoc is one YAML document of a test data file, as JSON, with its Go type.
type manifestDoc struct {
	name string
	json []byte
	typ  reflect.Type
}

func readManifests(t *testing.T) []manifestDoc {
	t.Helper()
	var docs []manifestDoc
	for _, file := range fullManifests {
		raw, err := os.ReadFile(filepath.Join("..", "..", "..", "test", "testdata", file))
		if err != nil {
			t.Fatal(err)
		}
		r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(raw)))
		for i := 0; ; i++ {
			doc, err := r.Read()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatalf("%s: %v", file, err)
			}
			js, err := yaml.YAMLToJSON(doc)
			if err != nil {
				t.Fatalf("%s document %d: %v", file, i, err)
			}
			var meta struct{ Kind string }
			if err := json.Unmarshal(js, &meta); err != nil {
				t.Fatalf("%s document %d: %v", file, i, err)
			}
			typ, ok := kindTypes[meta.Kind]
			if !ok {
				t.Fatalf("%s document %d: unexpected kind %q", file, i, meta.Kind)
			}
			docs = append(docs, manifestDoc{name: fmt.Sprintf("%s#%d", file, i), json: js, typ: typ})
		}
	}
	return docs
}

// TestRoundTrip decodes the full-featured manifests strictly (an unknown field fails) and
// checks that encoding the typed object again keeps every value of the original manifest,
// i.e. no field is dropped or renamed by our JSON tags.
func TestRoundTrip(t *testing.T) {
	for _, doc := range readManifests(t) {
		t.Run(doc.name, func(t *testing.T) {
			obj := reflect.New(doc.typ).Interface()
			dec := json.NewDecoder(bytes.NewReader(doc.json))
			dec.DisallowUnknownFields()
			if err := dec.Decode(obj); err != nil {
				t.Fatalf("strict decode: %v", err)
			}
			out, err := json.Marshal(obj)
			if err != nil {
				t.Fatal(err)
			}
			var want, got map[string]any
			if err := json.Unmarshal(doc.json, &want); err != nil {
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
		// omitempty drops false, "" and 0; KubeRay's tags do the same, so that is no loss.
		if got == nil && (want == false || want == "" || want == 0.0) {
			return nil
		}
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
	// A zero value left out by omitempty is not a difference; a changed one is.
	want = map[string]any{"suspend": false, "reason": "", "n": 0.0, "s": "x"}
	got = map[string]any{"s": "y"}
	if d := missing("", want, got); len(d) != 1 {
		t.Fatalf("want one difference, got %v", d)
	}
}

// TestFullManifestsSetEveryField keeps the test data complete: every JSON field of every
// struct of this package reachable from RayCluster, RayService and RayJob must be set in at least one
// of the full manifests, so the envtest suite proves the CRD schema accepts it. A field added
// to the types without an example fails here.
func TestFullManifestsSetEveryField(t *testing.T) {
	declared := map[string]bool{}
	for _, typ := range kindTypes {
		declaredFields(typ, map[reflect.Type]bool{}, declared)
	}
	used := map[string]bool{}
	for _, doc := range readManifests(t) {
		var v any
		if err := json.Unmarshal(doc.json, &v); err != nil {
			t.Fatal(err)
		}
		usedFields(v, doc.typ, used)
	}
	var unset []string
	for f := range declared {
		if !used[f] {
			unset = append(unset, f)
		}
	}
	slices.Sort(unset)
	if len(unset) > 0 {
		t.Errorf("fields no full manifest sets (add them to test/testdata/*-full.yaml):\n  %s", strings.Join(unset, "\n  "))
	}
}

// TestFieldCoverageDetectsGaps proves the coverage check can fail.
func TestFieldCoverageDetectsGaps(t *testing.T) {
	declared := map[string]bool{}
	declaredFields(reflect.TypeFor[rayv1.RayClusterStatus](), map[reflect.Type]bool{}, declared)
	used := map[string]bool{}
	usedFields(map[string]any{"state": "ready", "head": map[string]any{"podIP": "10.0.0.1"}},
		reflect.TypeFor[rayv1.RayClusterStatus](), used)
	if !used["RayClusterStatus.state"] || !used["HeadInfo.podIP"] || used["HeadInfo.podName"] {
		t.Fatalf("used fields computed wrongly: %v", used)
	}
	if !declared["HeadInfo.podName"] || !declared["RayClusterStatus.conditions"] {
		t.Fatalf("declared fields computed wrongly: %v", declared)
	}
}

var ourPkg = reflect.TypeFor[rayv1.RayCluster]().PkgPath()

// jsonFields yields the JSON name and type of each field of a struct of our package, with the
// fields of inline embedded structs attributed to the embedded type.
func jsonFields(t reflect.Type, yield func(owner reflect.Type, name string, ft reflect.Type)) {
	for f := range t.Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" {
			continue
		}
		if name == "" && f.Anonymous {
			if f.Type.PkgPath() == ourPkg {
				jsonFields(f.Type, yield)
			}
			continue // TypeMeta and the like belong to apimachinery.
		}
		yield(t, name, f.Type)
	}
}

// elem strips pointers, slices and maps down to the type that holds fields.
func elem(t reflect.Type) reflect.Type {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Map {
		t = t.Elem()
	}
	return t
}

func declaredFields(t reflect.Type, seen map[reflect.Type]bool, out map[string]bool) {
	t = elem(t)
	if t.Kind() != reflect.Struct || t.PkgPath() != ourPkg || seen[t] {
		return
	}
	seen[t] = true
	jsonFields(t, func(owner reflect.Type, name string, ft reflect.Type) {
		if name == "metadata" {
			return // ObjectMeta / ListMeta
		}
		out[owner.Name()+"."+name] = true
		declaredFields(ft, seen, out)
	})
}

func usedFields(v any, t reflect.Type, out map[string]bool) {
	switch t.Kind() {
	case reflect.Pointer:
		usedFields(v, t.Elem(), out)
	case reflect.Slice:
		for _, item := range asSlice(v) {
			usedFields(item, t.Elem(), out)
		}
	case reflect.Map:
		if m, ok := v.(map[string]any); ok {
			for _, item := range m {
				usedFields(item, t.Elem(), out)
			}
		}
	case reflect.Struct:
		m, ok := v.(map[string]any)
		if !ok || t.PkgPath() != ourPkg {
			return
		}
		jsonFields(t, func(owner reflect.Type, name string, ft reflect.Type) {
			if val, ok := m[name]; ok {
				out[owner.Name()+"."+name] = true
				usedFields(val, ft, out)
			}
		})
	}
}

func asSlice(v any) []any {
	s, _ := v.([]any)
	return s
}
