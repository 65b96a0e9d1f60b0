package admissionjson

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	goruntime "runtime"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	sigsjson "sigs.k8s.io/json"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/defaulting"
	"github.com/raygate/raygate/internal/sharedtable"
	"github.com/raygate/raygate/test/builders"
)

func TestFindElided(t *testing.T) {
	const tmpl = `{"spec":{"containers":[{"name":"ray-head","args":["}\"]"]}]}}`
	tests := []struct {
		name    string
		raw     string
		service bool
		serve   bool
		want    []string // the elided values, in order
		ok      bool
	}{
		{name: "head and workers", raw: `{"metadata":{"name":"a"},"spec":{"headGroupSpec":{"template":` + tmpl + `},"workerGroupSpecs":[{"groupName":"a","template":{"x":1}},{"template":{}}]}}`,
			want: []string{tmpl, `{"x":1}`, `{}`}, ok: true},
		{name: "spaces everywhere", raw: ` { "spec" : { "headGroupSpec" : { "template" : {"a": [1]} } , "workerGroupSpecs" : [ { "template" : { } } ] } } `,
			want: []string{`{"a": [1]}`, `{ }`}, ok: true},
		{name: "service: the cluster config", service: true, raw: `{"spec":{"serveConfigV2":"a: 1","rayClusterConfig":{"headGroupSpec":{"template":{"h":1}}}}}`,
			want: []string{`{"h":1}`}, ok: true},
		{name: "service: with its serve config", service: true, serve: true, raw: `{"spec":{"serveConfigV2":"a: \"1\"","rayClusterConfig":{"headGroupSpec":{"template":{"h":1}}}}}`,
			want: []string{`"a: \"1\""`, `{"h":1}`}, ok: true},
		{name: "no spec", raw: `{"metadata":{}}`, ok: true},
		{name: "null spec", raw: `{"spec":null}`, ok: true},
		{name: "null template, null groups, null group", raw: `{"spec":{"headGroupSpec":{"template":null},"workerGroupSpecs":[null,{"template":{"w":1}}]}}`,
			want: []string{`{"w":1}`}, ok: true},
		{name: "null worker list", raw: `{"spec":{"workerGroupSpecs":null}}`, ok: true},
		{name: "template not an object", raw: `{"spec":{"headGroupSpec":{"template":"x"}}}`},
		{name: "group not an object", raw: `{"spec":{"workerGroupSpecs":[1]}}`},
		{name: "spec not an object", raw: `{"spec":[]}`},
		{name: "spec twice", raw: `{"spec":{},"spec":{"headGroupSpec":{"template":{}}}}`},
		{name: "template twice", raw: `{"spec":{"headGroupSpec":{"template":{},"template":{"a":1}}}}`},
		{name: "worker list twice", raw: `{"spec":{"workerGroupSpecs":[],"workerGroupSpecs":[]}}`},
		{name: "escaped key on the way", raw: `{"spec":{"headGroupSpec":{"templ\u0061te":{"a":1}}}}`},
		{name: "escaped key elsewhere", raw: `{"spec":{"head\u0047roupSpec":{}}}`},
		{name: "trailing bytes", raw: `{"spec":{}} x`},
		{name: "cut short", raw: `{"spec":{"headGroupSpec":{"template":{"a":`},
		{name: "not an object", raw: `[]`},
		{name: "serve config not a string", service: true, serve: true, raw: `{"spec":{"serveConfigV2":1}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var obj runtime.Object = &rayv1.RayCluster{}
			if tt.service {
				obj = &rayv1.RayService{}
			}
			raw := []byte(tt.raw)
			found, ok := findElided(raw, obj, tt.serve)
			if ok != tt.ok {
				t.Fatalf("ok = %v, want %v", ok, tt.ok)
			}
			var got []string
			for _, e := range found {
				got = append(got, string(raw[e.start:e.end]))
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("elided %q, want %q", got, tt.want)
			}
		})
	}
}

// decodeFixtures are objects whose templates differ from group to group, with the
// repository's samples.
func decodeFixtures(t testing.TB) map[string][]byte {
	t.Helper()
	rc := builders.RayCluster("c", "ns").Obj()
	rc.Spec.WorkerGroupSpecs = append(rc.Spec.WorkerGroupSpecs, builders.WorkerGroup("gpu", 2), builders.WorkerGroup("cpu", 1))
	for i := range rc.Spec.WorkerGroupSpecs {
		c := &rc.Spec.WorkerGroupSpecs[i].Template.Spec.Containers[0]
		c.Env = append(c.Env, corev1.EnvVar{Name: "GROUP", Value: fmt.Sprint(i)})
	}
	defaulting.RayCluster(rc)
	svc := builders.RayService("s", "ns").Obj()
	svc.Spec.RayClusterSpec = *rc.Spec.DeepCopy()
	out := map[string][]byte{"RayCluster": mustJSON(t, rc), "RayService": mustJSON(t, svc)}
	for _, s := range sampleObjects(t) {
		out[s.name] = s.body
	}
	return out
}

func newObjectFor(name string, body []byte) runtime.Object {
	if strings.Contains(name, "RayService") || strings.Contains(string(body), `"kind":"RayService"`) {
		return &rayv1.RayService{}
	}
	return &rayv1.RayCluster{}
}

func plainDecode(t testing.TB, body []byte, into runtime.Object) {
	t.Helper()
	if err := Decode(body, into); err != nil {
		t.Fatal(err)
	}
}

// formatted is obj (as the plain decoder returns it) with its templates' quantities
// formatted, as the sharing decoder returns them: the same values, encoded the same.
func formatted(t testing.TB, obj runtime.Object) runtime.Object {
	t.Helper()
	before := mustJSON(t, obj)
	if spec := clusterSpecOf(obj); spec != nil {
		formatQuantities(&spec.HeadGroupSpec.Template)
		for i := range spec.WorkerGroupSpecs {
			formatQuantities(&spec.WorkerGroupSpecs[i].Template)
		}
	}
	if after := mustJSON(t, obj); !bytes.Equal(before, after) {
		t.Fatalf("formatting the quantities changed the object:\n%s\n%s", before, after)
	}
	return obj
}

// The sharing decoder returns what the plain one does, whether none, all or some of the
// object's templates were seen before, and the templates it found are shared, not copied.
func TestSharingDecoderDecodesAsThePlainDecoder(t *testing.T) {
	for name, body := range decodeFixtures(t) {
		t.Run(name, func(t *testing.T) {
			want := newObjectFor(name, body)
			plainDecode(t, body, want)
			want = formatted(t, want)
			d := NewSharingDecoder()
			decode := func(body []byte) runtime.Object {
				t.Helper()
				got := newObjectFor(name, body)
				if err := d.Decode("team-a", body, got); err != nil {
					t.Fatal(err)
				}
				return got
			}
			cold := decode(body)
			warm := decode(body)
			for what, got := range map[string]runtime.Object{"no template seen": cold, "all seen": warm} {
				if !reflect.DeepEqual(got, want) {
					t.Errorf("%s: decoded differently from the plain decoder", what)
				}
			}
			spec, warmSpec := clusterSpecOf(cold), clusterSpecOf(warm)
			if c := spec.HeadGroupSpec.Template.Spec.Containers; len(c) > 0 && &c[0] != &warmSpec.HeadGroupSpec.Template.Spec.Containers[0] {
				t.Error("a template seen before was decoded again, not shared")
			}

			// Some seen: change the head's image, so only the worker templates are found.
			changed := newObjectFor(name, body)
			plainDecode(t, body, changed)
			if c := clusterSpecOf(changed).HeadGroupSpec.Template.Spec.Containers; len(c) > 0 {
				c[0].Image = "registry.example/ray:changed"
			}
			changedBody := mustJSON(t, changed)
			wantChanged := newObjectFor(name, changedBody)
			plainDecode(t, changedBody, wantChanged)
			wantChanged = formatted(t, wantChanged)
			if got := decode(changedBody); !reflect.DeepEqual(got, wantChanged) {
				t.Error("some seen: decoded differently from the plain decoder")
			}
		})
	}
}

// Templates are shared within a namespace only: whether a review is quick must not tell a
// tenant that another namespace holds the same template.
func TestSharingDecoderSharesWithinANamespaceOnly(t *testing.T) {
	body := decodeFixtures(t)["RayCluster"]
	d := NewSharingDecoder()
	head := func(namespace string) *corev1.Container {
		rc := &rayv1.RayCluster{}
		if err := d.Decode(namespace, body, rc); err != nil {
			t.Fatal(err)
		}
		return &rc.Spec.HeadGroupSpec.Template.Spec.Containers[0]
	}
	a := head("team-a")
	if head("team-a") != a {
		t.Error("not shared within a namespace")
	}
	if b := head("team-b"); b == a || !reflect.DeepEqual(*b, *a) {
		t.Error("shared across namespaces, or decoded differently")
	}
}

// The mutating webhook's decode equals the plain decode with templates and serve config
// taken out, and never decodes them.
func TestDecodeWithoutTemplates(t *testing.T) {
	for name, body := range decodeFixtures(t) {
		t.Run(name, func(t *testing.T) {
			full := newObjectFor(name, body)
			plainDecode(t, body, full)
			got := newObjectFor(name, body)
			skeleton, err := DecodeWithoutTemplates(body, got)
			if err != nil {
				t.Fatal(err)
			}
			if !json.Valid(skeleton) || len(skeleton) > len(body) {
				t.Errorf("skeleton %s", skeleton)
			}
			if want := WithoutTemplates(full); !reflect.DeepEqual(got, want) {
				t.Errorf("got %+v\nwant %+v", got, want)
			}
		})
	}
	// A malformed template is not read here (the validating webhook reports it), but
	// everything else is.
	bad := []byte(`{"spec":{"headGroupSpec":{"template":{"spec":{"containers":"x"}}},"workerGroupSpecs":[{"replicas":"2"}]}}`)
	if _, err := DecodeWithoutTemplates(bad, &rayv1.RayCluster{}); err == nil || !strings.Contains(err.Error(), "replicas") {
		t.Errorf("a malformed field outside the templates: %v", err)
	}
}

// FuzzSharingDecoder: for any bytes, the sharing decoder, the first time and again, fails
// exactly when the plain decoder fails, with the same message, and otherwise returns the same
// object; the mutating webhook's decode never panics and, when the plain decode succeeds,
// returns it without templates.
func FuzzSharingDecoder(f *testing.F) {
	for _, body := range decodeFixtures(f) {
		f.Add(body)
	}
	for _, s := range []string{
		`{"spec":{"headGroupSpec":{"template":{"spec":{"containers":"x"}}}}}`,
		`{"spec":{"headGroupSpec":{"template":{"metadata":{"labels":{"a":1}}}}}}`,
		`{"spec":{"headGroupSpec":{"template":{}},"headGroupSpec":{"template":{"metadata":{"name":"b"}}}}}`,
		`{"spec":{"workerGroupSpecs":[{"template":{"spec":{"nodeName":"n"}}},null,{"template":{"spec":{"x":1}}}]}}`,
		`{"kind":"RayService","spec":{"serveConfigV2":"x","rayClusterConfig":{"headGroupSpec":{"template":{"spec":{"hostname":"h"}}}}}}`,
		`{"spec":{"headGroupSpec":{"template":{"spec":{"priority":1e99}}}}}`,
		`{"spec":{"headGroupSpec":{"template":{"spec":{"containers":[{"resources":{"limits":{"cpu":"1000m","memory":"1024Mi"}}}],"overhead":{"cpu":"0.5"},"volumes":[{"emptyDir":{"sizeLimit":"2048Ki"}}]}}}}}`,
	} {
		f.Add([]byte(s))
	}
	d := NewSharingDecoder()
	f.Fuzz(func(t *testing.T, body []byte) {
		for _, kind := range []string{"RayCluster", "RayService"} {
			want := newObjectFor(kind, nil)
			wantErr := Decode(body, want)
			if wantErr == nil {
				want = formatted(t, want)
			}
			for round := range 2 {
				got := newObjectFor(kind, nil)
				err := d.Decode("team-a", body, got)
				if fmt.Sprint(err) != fmt.Sprint(wantErr) {
					t.Fatalf("%s, round %d: error %v, plain decoder %v", kind, round, err, wantErr)
				}
				if err == nil && !reflect.DeepEqual(got, want) {
					t.Fatalf("%s, round %d: decoded differently from the plain decoder", kind, round)
				}
			}
			checkSharedTemplates(t, d, "team-a", body)
			slim := newObjectFor(kind, nil)
			if _, err := DecodeWithoutTemplates(body, slim); wantErr == nil {
				if err != nil || !reflect.DeepEqual(slim, WithoutTemplates(want)) {
					t.Fatalf("%s: without templates: %v", kind, err)
				}
			}
		}
	})
}

// checkSharedTemplates checks that each template of body the decoder's table holds is exactly
// what its bytes decode to, and returns how many it checked.
func checkSharedTemplates(t testing.TB, d *SharingDecoder, namespace string, body []byte) (checked int) {
	t.Helper()
	for _, obj := range []runtime.Object{&rayv1.RayCluster{}, &rayv1.RayService{}} {
		elided, ok := findElided(body, obj, false)
		if !ok {
			continue
		}
		for _, e := range elided {
			shared, ok := d.templates.Get(sharedtable.KeyIn(namespace, body[e.start:e.end]))
			if !ok {
				continue
			}
			var fresh corev1.PodTemplateSpec
			if err := sigsjson.UnmarshalCaseSensitivePreserveInts(body[e.start:e.end], &fresh); err != nil {
				t.Fatalf("a template that does not decode is shared: %v", err)
			}
			formatQuantities(&fresh)
			if !reflect.DeepEqual(*shared, fresh) {
				t.Fatalf("the shared template of %s is not what it decodes to:\nshared %+v\nfresh  %+v", body[e.start:e.end], *shared, fresh)
			}
			checked++
		}
	}
	return checked
}

// Tenants choose the templates: filled with the largest it keeps, the table holds no more
// than its limits allow. Logged for the record, checked against a generous bound.
func TestSharedTemplatesMemoryIsBounded(t *testing.T) {
	d := NewSharingDecoder()
	goruntime.GC()
	var before, after goruntime.MemStats
	goruntime.ReadMemStats(&before)
	for i := range 2 * sharedTemplates {
		rc := builders.RayCluster("c", "ns").Obj()
		rc.Spec.WorkerGroupSpecs = nil
		c := &rc.Spec.HeadGroupSpec.Template.Spec.Containers[0]
		env := func(j int) corev1.EnvVar {
			return corev1.EnvVar{Name: fmt.Sprintf("VARIABLE_%04d_%04d", i, j), Value: strings.Repeat("v", 40)}
		}
		for j := range (maxSharedTemplateBytes - len(mustJSON(t, rc)) - 100) / (len(mustJSON(t, env(0))) + 1) {
			c.Env = append(c.Env, env(j))
		}
		if err := d.Decode("team-a", mustJSON(t, rc), &rayv1.RayCluster{}); err != nil {
			t.Fatal(err)
		}
	}
	goruntime.GC()
	goruntime.ReadMemStats(&after)
	held := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	t.Logf("%d templates, %d bytes of JSON, %.1f MB of heap", d.templates.Len(), d.templates.Bytes(), float64(held)/1e6)
	if d.templates.Bytes() > sharedTemplateBytes || held > 8<<20 {
		t.Errorf("the table holds %d bytes of JSON and %d of heap", d.templates.Bytes(), held)
	}
	goruntime.KeepAlive(d)
}
