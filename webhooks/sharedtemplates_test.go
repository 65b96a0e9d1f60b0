package webhooks

import (
	"context"
	"fmt"
	"reflect"
	"sync"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/admissionjson"
	"github.com/raygate/raygate/internal/defaulting"
	"github.com/raygate/raygate/test/builders"
)

// TestValidationLeavesSharedTemplatesAlone runs every handler, many at once, on objects whose
// templates the sharing decoder hands to several requests (creates, updates, and rejections
// under restricted Pod Security, which locate violations field by field), then decodes every
// object again with the validating handlers' decoder: each template now comes from its table
// (none is added), and each object is still exactly what its bytes decode to. A handler that
// wrote into a decoded template would change what other requests see.
func TestValidationLeavesSharedTemplatesAlone(t *testing.T) {
	h := strictHandlers(t)
	var objects []sample
	for _, s := range templateFixtures(t) {
		obj := newObject(s.kind)
		if err := admissionjson.Decode(s.body, obj); err != nil {
			t.Fatal(err)
		}
		spec := clusterSpecOf(obj)
		spec.HeadGroupSpec.Template.Spec.SecurityContext = &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(false)}
		if c := spec.HeadGroupSpec.Template.Spec.Containers; len(c) > 0 {
			c[0].SecurityContext = &corev1.SecurityContext{Privileged: ptr.To(true)}
		}
		objects = append(objects, s, sample{name: s.name + "/refused", kind: s.kind, body: mustJSON(t, obj)})
	}
	paths := []string{ValidateRayClusterPath, ValidateRayServicePath, MutateRayClusterPath, MutateRayServicePath}
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i, s := range objects {
				old := objects[(i+w)%len(objects)].body
				for _, path := range paths {
					for _, req := range []admission.Request{
						review(admissionv1.Create, s.body, nil),
						review(admissionv1.Update, s.body, old),
					} {
						h[path].Handle(context.Background(), req)
					}
				}
			}
		})
	}
	wg.Wait()

	d := h[ValidateRayServicePath].(*rayServiceValidator).decoder.(*admissionjson.SharingDecoder)
	held := d.Len()
	if held < len(objects)/2 {
		t.Fatalf("the table holds %d templates for %d objects: the handlers did not share them", held, len(objects))
	}
	for _, s := range objects {
		got, want := newObject(s.kind), newObject(s.kind)
		if err := d.Decode(strictNamespace, s.body, got); err != nil {
			t.Fatal(err)
		}
		// A fresh decoder shares nothing: the object as its bytes decode (with the quantities
		// formatted as the sharing decoder leaves them; admissionjson's tests compare it with
		// the plain decoder).
		if err := admissionjson.NewSharingDecoder().Decode(strictNamespace, s.body, want); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: a shared template is no longer what its bytes decode to", s.name)
		}
	}
	if added := d.Len() - held; added != 0 {
		t.Fatalf("decoding the objects again added %d templates: the handlers did not share them", added)
	}
}

// templateFixtures are a RayCluster and a RayService whose templates differ from group to
// group, and the repository's samples.
func templateFixtures(t testing.TB) []sample {
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
	return append(sampleObjects(t),
		sample{name: "RayCluster", kind: rayv1.RayClusterKind, body: mustJSON(t, rc)},
		sample{name: "RayService", kind: rayv1.RayServiceKind, body: mustJSON(t, svc)})
}

func newObject(kind string) runtime.Object {
	if kind == rayv1.RayServiceKind {
		return &rayv1.RayService{}
	}
	return &rayv1.RayCluster{}
}

// clusterSpecOf is the RayCluster spec inside a RayCluster or RayService.
func clusterSpecOf(obj runtime.Object) *rayv1.RayClusterSpec {
	if svc, ok := obj.(*rayv1.RayService); ok {
		return &svc.Spec.RayClusterSpec
	}
	return &obj.(*rayv1.RayCluster).Spec
}

func review(op admissionv1.Operation, obj, old []byte) admission.Request {
	req := admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{UID: "u", Operation: op, Namespace: strictNamespace}}
	req.Object.Raw, req.OldObject.Raw = obj, old
	return req
}

// A malformed template is not read by the mutating webhook's decode, but the patch's slower
// way decodes the whole object: both webhooks then name the field and the type it must have.
func TestMalformedTemplateIsAnsweredWithItsField(t *testing.T) {
	// No headGroupSpec: its defaults have no parent in the request, so the patch is computed
	// from the whole object.
	body := []byte(`{"apiVersion":"ray.io/v1","kind":"RayCluster","metadata":{"name":"a","namespace":"ns"},
		"spec":{"workerGroupSpecs":[{"groupName":"w","template":{"spec":{"containers":"x"}}}]}}`)
	h := Handlers(Options{})
	req := review(admissionv1.Create, body, nil)
	req.Kind = metav1.GroupVersionKind{Group: "ray.io", Version: "v1", Kind: "RayCluster"}
	req.Name = "a"
	want := `RayCluster.ray.io "a" is invalid: spec.workerGroupSpecs[0].template.spec.containers: Invalid value: "string": must be of type array`
	for _, path := range []string{MutateRayClusterPath, ValidateRayClusterPath} {
		resp := h[path].Handle(context.Background(), req)
		if resp.Allowed || resp.Result == nil || resp.Result.Code != 422 || resp.Result.Message != want {
			t.Errorf("%s: want %q, got %+v", path, want, resp.Result)
		}
	}
}
