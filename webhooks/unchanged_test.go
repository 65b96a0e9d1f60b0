package webhooks

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	jsonpatchapply "github.com/evanphx/json-patch/v5"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/component-base/featuregate"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	"sigs.k8s.io/yaml"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/features"
	"github.com/raygate/raygate/internal/validation"
	"github.com/raygate/raygate/internal/validation/fuzzer"
)

// TestUnchangedUpdateIsNotDecoded shows the validating webhooks' fast path is taken (an
// object the full path would refuse to decode is admitted when spec and metadata are
// unchanged) and only then: a change in metadata or spec, a create, or a spec the scan cannot
// pin down takes the full path.
func TestUnchangedUpdateIsNotDecoded(t *testing.T) {
	// rayClusterConfig and headGroupSpec must be objects: decoding fails, so only the fast
	// path admits.
	undecodable := `{"apiVersion":"ray.io/v1","kind":"RayService","metadata":{"name":"a","namespace":"ns"},"spec":{"rayClusterConfig":5,"headGroupSpec":5},"status":{%s}}`
	stored := []byte(strings.ReplaceAll(undecodable, "%s", ""))
	for _, tt := range []struct {
		name     string
		op       admissionv1.Operation
		obj, old string
		fast     bool
	}{
		{"no-op update", admissionv1.Update, string(stored), string(stored), true},
		{"status only", admissionv1.Update, strings.ReplaceAll(undecodable, "%s", `"observedGeneration":3`), string(stored), true},
		{"label added", admissionv1.Update, strings.Replace(string(stored), `"name":"a"`, `"name":"a","labels":{"x":"y"}`, 1), string(stored), false},
		{"spec changed", admissionv1.Update, strings.Replace(string(stored), `5`, `6`, 1), string(stored), false},
		{"spec given twice", admissionv1.Update, strings.Replace(string(stored), `"status"`, `"spec":{},"status"`, 1), string(stored), false},
		{"create", admissionv1.Create, string(stored), "", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			req := admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{UID: "u", Operation: tt.op, Namespace: "ns"}}
			req.Object.Raw, req.OldObject.Raw = []byte(tt.obj), []byte(tt.old)
			for _, path := range []string{ValidateRayServicePath, ValidateRayClusterPath} {
				resp := Handlers(Options{})[path].Handle(context.Background(), req)
				if fast := resp.Allowed && len(resp.Patches) == 0; fast != tt.fast {
					t.Errorf("%s: allowed=%v patches=%d result=%v; want the fast path: %v", path, resp.Allowed, len(resp.Patches), resp.Result, tt.fast)
				}
			}
		})
	}
}

// strictHandlers are the handlers under the strictest settings: every feature gate off, one
// pod per group and per cluster, an image registry no object uses, only ClusterIP Services,
// a GatewayClass no object names, no token authentication, Pod Security "restricted"
// enforced in the namespace, and cert-manager not installed.
func strictHandlers(t testing.TB) map[string]admission.Handler {
	s := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	utilruntime.Must(rayv1.AddToScheme(s))
	utilruntime.Must(gatewayv1.Install(s))
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: strictNamespace, Labels: map[string]string{
		"pod-security.kubernetes.io/enforce": "restricted", "pod-security.kubernetes.io/warn": "restricted"}}}
	quota := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "q", Namespace: strictNamespace},
		Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("1")}}}
	reader := fake.NewClientBuilder().WithScheme(s).WithObjects(ns, quota).WithInterceptorFuncs(interceptor.Funcs{
		List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			if gvk := list.GetObjectKind().GroupVersionKind(); gvk.Group == "cert-manager.io" {
				return &meta.NoKindMatchError{GroupKind: schema.GroupKind{Group: gvk.Group, Kind: strings.TrimSuffix(gvk.Kind, "List")}}
			}
			return c.List(ctx, list, opts...)
		},
	}).Build()
	off := features.Static{}
	for f := range features.Specs {
		off[featuregate.Feature(f)] = false
	}
	return Handlers(Options{
		Reader: reader, Namespaces: reader, Gates: off,
		Limits: validation.Limits{MaxPodsPerGroup: 1, MaxPodsPerCluster: 1},
		Policy: validation.Policy{
			AllowedGatewayClasses:  []string{"no-such-class"},
			AllowedServiceTypes:    []corev1.ServiceType{corev1.ServiceTypeClusterIP},
			AllowedImageRegistries: []string{"registry.invalid"},
			PodSecurity:            validation.PodSecurityEnforce,
			TokenAuthenticationOff: true,
		},
	})
}

const strictNamespace = "strict"

// FuzzUnchangedUpdate checks that the fast path admits nothing the full path would refuse.
// For a random object (the fuzz seeds of the defaulting, validation and webhook fuzz tests;
// the repository's sample objects in TestUnchangedUpdateSamples), stored as the mutating
// webhook defaults it, an update that changes nothing is admitted by both webhooks with no
// patch and no warning, and the full path admits it too under the strictest settings. A
// failure here means a rule refuses something an update did not change.
func FuzzUnchangedUpdate(f *testing.F) {
	for _, seed := range fuzzSeeds(f) {
		f.Add(seed)
	}
	h := strictHandlers(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		var rc rayv1.RayCluster
		var svc rayv1.RayService
		fill := fuzzer.New(data)
		fill.Fill(&rc)
		fill.Fill(&svc)
		rc.APIVersion, rc.Kind = rayv1.GroupVersion.String(), rayv1.RayClusterKind
		svc.APIVersion, svc.Kind = rayv1.GroupVersion.String(), rayv1.RayServiceKind
		checkUnchangedUpdate(t, h, MutateRayClusterPath, ValidateRayClusterPath, mustJSON(t, &rc))
		checkUnchangedUpdate(t, h, MutateRayServicePath, ValidateRayServicePath, mustJSON(t, &svc))
	})
}

// TestUnchangedUpdateSamples runs the same check on the repository's sample and test objects.
func TestUnchangedUpdateSamples(t *testing.T) {
	h := strictHandlers(t)
	for _, s := range sampleObjects(t) {
		t.Run(s.name, func(t *testing.T) {
			switch s.kind {
			case rayv1.RayClusterKind:
				checkUnchangedUpdate(t, h, MutateRayClusterPath, ValidateRayClusterPath, s.body)
			case rayv1.RayServiceKind:
				checkUnchangedUpdate(t, h, MutateRayServicePath, ValidateRayServicePath, s.body)
			}
		})
	}
}

// sample is a RayCluster or RayService of the repository's samples and test objects, as JSON.
type sample struct {
	name, kind string
	body       []byte
}

// sampleObjects are the RayClusters and RayServices of config/samples and test/testdata.
func sampleObjects(t testing.TB) []sample {
	t.Helper()
	files, _ := filepath.Glob("../config/samples/*.yaml")
	more, _ := filepath.Glob("../test/testdata/*.yaml")
	var out []sample
	for _, file := range append(files, more...) {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for _, doc := range strings.Split(string(b), "\n---") {
			var tm metav1.TypeMeta
			if yaml.Unmarshal([]byte(doc), &tm) != nil || (tm.Kind != rayv1.RayClusterKind && tm.Kind != rayv1.RayServiceKind) {
				continue
			}
			body, err := yaml.YAMLToJSON([]byte(doc))
			if err != nil {
				continue
			}
			out = append(out, sample{name: filepath.Base(file) + "/" + tm.Kind, kind: tm.Kind, body: body})
		}
	}
	if len(out) < 4 {
		t.Fatalf("found %d sample objects; the globs found too few", len(out))
	}
	return out
}

func checkUnchangedUpdate(t *testing.T, h map[string]admission.Handler, mutatePath, validatePath string, sent []byte) {
	t.Helper()
	ctx := context.Background()
	update := func(obj, old []byte) admission.Request {
		req := admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{UID: "u", Operation: admissionv1.Update, Namespace: strictNamespace}}
		req.Object.Raw, req.OldObject.Raw = obj, old
		return req
	}
	// The object as stored: what the mutating webhook made of it when it was written.
	mutated := h[mutatePath].Handle(ctx, update(sent, respaced(t, sent)))
	if !mutated.Allowed {
		t.Fatalf("defaulting refused an object: %v", mutated.Result)
	}
	stored := applyPatches(t, sent, mutated)

	// An update that leaves it as it is: both webhooks admit it, adding nothing.
	fast := update(stored, stored)
	if !unchangedUpdate(fast) {
		t.Fatalf("an update with the stored bytes is not recognised as unchanged:\n%s", stored)
	}
	for range 2 { // the second time from the mutating webhook's set of clean objects
		for _, path := range []string{mutatePath, validatePath} {
			if resp := h[path].Handle(ctx, fast); !resp.Allowed || len(resp.Patches) > 0 || len(resp.Warnings) > 0 {
				t.Fatalf("%s: unchanged update: allowed=%v patches=%v warnings=%v result=%v", path, resp.Allowed, resp.Patches, resp.Warnings, resp.Result)
			}
		}
	}

	// The full path on the same update — the old object sent with one more space decodes to
	// the same object but defeats the byte comparison — must admit it too.
	full := update(stored, respaced(t, stored))
	if unchangedUpdate(full) {
		t.Fatal("respaced old object still takes the fast path")
	}
	resp := h[validatePath].Handle(ctx, full)
	if resp.Result != nil && resp.Result.Code == 400 {
		return // the full path cannot decode what the fuzzer built; nothing to compare
	}
	if !resp.Allowed {
		t.Fatalf("full validation refused an update that changes neither spec nor metadata: %v\nobject: %s", resp.Result, stored)
	}
}

func applyPatches(t *testing.T, body []byte, resp admission.Response) []byte {
	t.Helper()
	if len(resp.Patches) == 0 {
		return body
	}
	patch, err := jsonpatchapply.DecodePatch(mustJSON(t, resp.Patches))
	if err != nil {
		t.Fatal(err)
	}
	out, err := patch.Apply(body)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// respaced is the object indented: the same object once decoded, different bytes in its
// metadata and spec.
func respaced(t *testing.T, raw []byte) []byte {
	var out bytes.Buffer
	if err := json.Indent(&out, raw, "", " "); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

func mustJSON(t testing.TB, v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// fuzzSeeds are the first []byte or string argument of every stored fuzz input of the
// defaulting, validation and webhook fuzz tests.
func fuzzSeeds(t testing.TB) [][]byte {
	seeds := [][]byte{[]byte("seed"), {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}}
	for _, dir := range []string{"testdata/fuzz/*", "../internal/validation/testdata/fuzz/*", "../internal/defaulting/testdata/fuzz/*"} {
		files, _ := filepath.Glob(dir + "/*")
		for _, file := range files {
			b, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			sc := bufio.NewScanner(bytes.NewReader(b))
			sc.Buffer(nil, 1<<22)
			for sc.Scan() {
				line := sc.Text()
				for _, prefix := range []string{"[]byte(", "string("} {
					if lit, ok := strings.CutPrefix(line, prefix); ok {
						if s, err := strconv.Unquote(strings.TrimSuffix(lit, ")")); err == nil {
							seeds = append(seeds, []byte(s))
						}
					}
				}
			}
		}
	}
	if len(seeds) < 40 {
		t.Fatalf("found %d fuzz seeds; the corpus globs are wrong", len(seeds))
	}
	return seeds
}

// TestMutatorRemembersCleanObjects: an unchanged update is decoded and defaulted the first
// time; once defaulting left it as it was, the same bytes are admitted without decoding. An
// object stored without its defaults is defaulted every time, so nothing is skipped that
// would have been patched.
func TestMutatorRemembersCleanObjects(t *testing.T) {
	calls := 0
	m := &mutator[*rayv1.RayService]{newObj: func() *rayv1.RayService { return &rayv1.RayService{} },
		apply: func(svc *rayv1.RayService) {
			calls++
			if svc.Spec.RayClusterDeletionDelaySeconds == nil {
				svc.Spec.RayClusterDeletionDelaySeconds = ptr.To[int32](60)
			}
		}}
	update := func(body string) admission.Request {
		req := admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{UID: "u", Operation: admissionv1.Update}}
		req.Object.Raw, req.OldObject.Raw = []byte(body), []byte(body)
		return req
	}
	defaulted := `{"apiVersion":"ray.io/v1","kind":"RayService","metadata":{"name":"a"},"spec":{"rayClusterDeletionDelaySeconds":60,"rayClusterConfig":{"headGroupSpec":{"template":{}}}}}`
	bare := `{"apiVersion":"ray.io/v1","kind":"RayService","metadata":{"name":"b"},"spec":{"rayClusterConfig":{"headGroupSpec":{"template":{}}}}}`
	for i, tt := range []struct {
		body      string
		patched   bool
		wantCalls int
	}{
		{defaulted, false, 1}, // decoded, found clean
		{defaulted, false, 1}, // remembered: not decoded
		{bare, true, 2},       // needs its default
		{bare, true, 3},       // and again: only clean objects are remembered
		{strings.Replace(defaulted, `"a"`, `"c"`, 1), false, 4},
	} {
		resp := m.Handle(context.Background(), update(tt.body))
		if !resp.Allowed || (len(resp.Patches) > 0) != tt.patched || calls != tt.wantCalls {
			t.Errorf("request %d: allowed=%v patches=%v defaulting runs=%d; want patched=%v runs=%d", i, resp.Allowed, resp.Patches, calls, tt.patched, tt.wantCalls)
		}
	}
}
