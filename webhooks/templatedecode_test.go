package webhooks

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	goruntime "runtime"
	"strings"
	"sync"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
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
	if err := (typedDecoder{}).DecodeRaw(runtime.RawExtension{Raw: body}, into); err != nil {
		t.Fatal(err)
	}
}

// The sharing decoder returns what the plain one does, whether none, all or some of the
// object's templates were seen before, and the templates it found are shared, not copied.
func TestSharingDecoderDecodesAsThePlainDecoder(t *testing.T) {
	for name, body := range decodeFixtures(t) {
		t.Run(name, func(t *testing.T) {
			want := newObjectFor(name, body)
			plainDecode(t, body, want)
			d := newSharingDecoder()
			decode := func(body []byte) runtime.Object {
				t.Helper()
				got := newObjectFor(name, body)
				if err := d.decode("team-a", runtime.RawExtension{Raw: body}, got); err != nil {
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
	d := newSharingDecoder()
	head := func(namespace string) *corev1.Container {
		rc := &rayv1.RayCluster{}
		if err := d.decode(namespace, runtime.RawExtension{Raw: body}, rc); err != nil {
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
			skeleton, err := decodeWithoutTemplates(body, got)
			if err != nil {
				t.Fatal(err)
			}
			if !json.Valid(skeleton) || len(skeleton) > len(body) {
				t.Errorf("skeleton %s", skeleton)
			}
			if want := withoutTemplates(full); !reflect.DeepEqual(got, want) {
				t.Errorf("got %+v\nwant %+v", got, want)
			}
		})
	}
	// A malformed template is not read here (the validating webhook reports it), but
	// everything else is.
	bad := []byte(`{"spec":{"headGroupSpec":{"template":{"spec":{"containers":"x"}}},"workerGroupSpecs":[{"replicas":"2"}]}}`)
	if _, err := decodeWithoutTemplates(bad, &rayv1.RayCluster{}); err == nil || !strings.Contains(err.Error(), "replicas") {
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
	} {
		f.Add([]byte(s))
	}
	d := newSharingDecoder()
	f.Fuzz(func(t *testing.T, body []byte) {
		for _, kind := range []string{"RayCluster", "RayService"} {
			want := newObjectFor(kind, nil)
			wantErr := (typedDecoder{}).DecodeRaw(runtime.RawExtension{Raw: body}, want)
			for round := range 2 {
				got := newObjectFor(kind, nil)
				err := d.decode("team-a", runtime.RawExtension{Raw: body}, got)
				if fmt.Sprint(err) != fmt.Sprint(wantErr) {
					t.Fatalf("%s, round %d: error %v, plain decoder %v", kind, round, err, wantErr)
				}
				if err == nil && !reflect.DeepEqual(got, want) {
					t.Fatalf("%s, round %d: decoded differently from the plain decoder", kind, round)
				}
			}
			checkSharedTemplates(t, d, "team-a", body)
			slim := newObjectFor(kind, nil)
			if _, err := decodeWithoutTemplates(body, slim); wantErr == nil {
				if err != nil || !reflect.DeepEqual(slim, withoutTemplates(want)) {
					t.Fatalf("%s: without templates: %v", kind, err)
				}
			}
		}
	})
}

// TestValidationLeavesSharedTemplatesAlone runs every handler, many at once, on objects whose
// templates the sharing decoder hands to several requests (creates, updates, and rejections
// under restricted Pod Security, which locate violations field by field), then checks every
// shared template is still exactly what its bytes decode to. A handler that wrote into a
// decoded template would change what other requests see.
func TestValidationLeavesSharedTemplatesAlone(t *testing.T) {
	h := strictHandlers(t)
	var bodies [][]byte
	for name, body := range decodeFixtures(t) {
		obj := newObjectFor(name, body)
		plainDecode(t, body, obj)
		spec := clusterSpecOf(obj)
		spec.HeadGroupSpec.Template.Spec.SecurityContext = &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(false)}
		if c := spec.HeadGroupSpec.Template.Spec.Containers; len(c) > 0 {
			c[0].SecurityContext = &corev1.SecurityContext{Privileged: ptr.To(true)}
		}
		bodies = append(bodies, body, mustJSON(t, obj))
	}
	paths := []string{ValidateRayClusterPath, ValidateRayServicePath, MutateRayClusterPath, MutateRayServicePath}
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i, body := range bodies {
				old := bodies[(i+w)%len(bodies)]
				for _, path := range paths {
					for _, req := range []admission.Request{
						review(admissionv1.Create, body, nil),
						review(admissionv1.Update, body, old),
					} {
						h[path].Handle(context.Background(), req)
					}
				}
			}
		})
	}
	wg.Wait()

	d := h[ValidateRayServicePath].(*rayServiceValidator).decoder.(sharingDecoder)
	checked := 0
	for _, body := range bodies {
		checked += checkSharedTemplates(t, d, strictNamespace, body)
	}
	if checked < len(bodies) {
		t.Fatalf("checked %d shared templates for %d objects: the handlers did not share them", checked, len(bodies))
	}
}

// checkSharedTemplates checks that each template of body the decoder's table holds is exactly
// what its bytes decode to, and returns how many it checked.
func checkSharedTemplates(t testing.TB, d sharingDecoder, namespace string, body []byte) (checked int) {
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
			if !reflect.DeepEqual(*shared, fresh) {
				t.Fatalf("the shared template of %s is not what it decodes to:\nshared %+v\nfresh  %+v", body[e.start:e.end], *shared, fresh)
			}
			checked++
		}
	}
	return checked
}

func review(op admissionv1.Operation, obj, old []byte) admission.Request {
	req := admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{UID: "u", Operation: op, Namespace: strictNamespace}}
	req.Object.Raw, req.OldObject.Raw = obj, old
	return req
}

// Tenants choose the templates: filled with the largest it keeps, the table holds no more
// than its limits allow. Logged for the record, checked against a generous bound.
func TestSharedTemplatesMemoryIsBounded(t *testing.T) {
	d := newSharingDecoder()
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
		if err := d.decode("team-a", runtime.RawExtension{Raw: mustJSON(t, rc)}, &rayv1.RayCluster{}); err != nil {
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

// A malformed template is not read by the mutating webhook's decode, but when the patch takes
// the slower way, which decodes the whole object, it is a 400 with the decoder's message, not
// a 500.
func TestMutatorRefusesAMalformedTemplateOnTheSlowerWay(t *testing.T) {
	// No headGroupSpec: its defaults have no parent in the request, so the patch is computed
	// from the whole object.
	body := []byte(`{"apiVersion":"ray.io/v1","kind":"RayCluster","metadata":{"name":"a","namespace":"ns"},
		"spec":{"workerGroupSpecs":[{"groupName":"w","template":{"spec":{"containers":"x"}}}]}}`)
	resp := Handlers(Options{})[MutateRayClusterPath].Handle(context.Background(), review(admissionv1.Create, body, nil))
	if resp.Allowed || resp.Result == nil || resp.Result.Code != 400 || !strings.Contains(resp.Result.Message, "containers") {
		t.Fatalf("want a 400 naming the malformed field, got %+v", resp.Result)
	}
}
