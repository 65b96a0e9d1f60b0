package admissionjson

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	"gomodules.xyz/jsonpatch/v2"
	"k8s.io/utils/ptr"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/test/builders"
)

func TestRawHas(t *testing.T) {
	raw := []byte(`{"metadata": {"name":"a", "labels":{"ray.io/x":"1","q\"k":"2"}},
	  "spec": {"groups": [ {"name":"w","n":[1,{"x":"}]"}]}, {"name":"v"} ], "s":"a,b}", "z": null}}`)
	for _, tt := range []struct {
		pointer          string
		exists, parentOK bool
	}{
		{"/metadata/name", true, true},
		{"/metadata/namespace", false, true},
		{"/metadata/labels/ray.io~1x", true, true},
		{`/metadata/labels/q"k`, true, true},
		{"/spec/groups/1/name", true, true},
		{"/spec/groups/1/replicas", false, true},
		{"/spec/groups/0/n/1/x", true, true},
		{"/spec/groups/2/name", false, false},
		{"/spec/z", true, true},
		{"/spec/z/a", false, false},
		{"/spec/missing/a", false, false},
		{"/spec/s/a", false, false},
		{"/spec/groups/x/name", false, false},
	} {
		exists, parentOK := rawHas(raw, tt.pointer)
		if exists != tt.exists || parentOK != tt.parentOK {
			t.Errorf("rawHas(%s) = %v, %v; want %v, %v", tt.pointer, exists, parentOK, tt.exists, tt.parentOK)
		}
	}
}

// One lookup answering pointers in any order (it resumes from the last parent's path) says
// what a fresh lookup says for each.
func TestRawLookupAnswersLikeAFreshOne(t *testing.T) {
	raw := []byte(`{"metadata": {"name":"a", "labels":{"ray.io/x":"1"}},
	  "spec": {"groups": [ {"name":"w","n":[1,{"x":"}]"}]}, {"name":"v"}, {"name":"u","t":{"a":1}} ], "groupsX": {"a": 1}, "z": null}}`)
	pointers := []string{"/spec/groups/0/name", "/spec/groups/0/n/1/x", "/spec/groups/1/name", "/spec/groups/2/t/a",
		"/spec/groups/2/t/b", "/spec/groupsX/a", "/spec/groups/1/replicas", "/metadata/labels/ray.io~1x", "/spec/groups/0/n/1/y",
		"/spec/groups/3/name", "/spec/z/a", "/spec/groups/2/name", "/metadata/name", "/spec/groups/x/name", "/spec/groupsX/b",
		"/spec/groups/0/n/0/x", "/spec/missing/a", "/metadata/namespace"}
	for order := range 4 {
		l := newRawLookup(raw)
		for i := range pointers {
			p := pointers[(i*(order*2+1))%len(pointers)]
			gotExists, gotParent := l.has(p)
			wantExists, wantParent := rawHas(raw, p)
			if gotExists != wantExists || gotParent != wantParent {
				t.Errorf("order %d: has(%s) = %v, %v after others; alone %v, %v", order, p, gotExists, gotParent, wantExists, wantParent)
			}
		}
	}
}

// The mutating webhook defaults a copy without pod templates and serve config. When the
// change needs the slower raw diff (a value removed), the whole objects are rebuilt: the
// patch must hold the change only, not the removal of every template and the serve config.
func TestDefaultingPatchSlowPathKeepsTemplates(t *testing.T) {
	for _, obj := range []any{
		func() any {
			svc := builders.RayService("svc", "ns").Obj()
			svc.Spec.RayClusterDeletionDelaySeconds = ptr.To[int32](30)
			return svc
		}(),
		func() any {
			rc := builders.RayCluster("rc", "ns").Obj()
			rc.Spec.EnableInTreeAutoscaling = ptr.To(true)
			return rc
		}(),
	} {
		raw, err := json.Marshal(obj)
		if err != nil {
			t.Fatal(err)
		}
		original := WithoutTemplates(obj)
		var defaulted any
		var want []jsonpatch.Operation
		switch o := original.(type) {
		case *rayv1.RayService:
			d := o.DeepCopy()
			d.Spec.RayClusterDeletionDelaySeconds = nil
			defaulted = d
			want = []jsonpatch.Operation{{Operation: "remove", Path: "/spec/rayClusterDeletionDelaySeconds"}}
		case *rayv1.RayCluster:
			d := o.DeepCopy()
			d.Spec.EnableInTreeAutoscaling = nil
			defaulted = d
			want = []jsonpatch.Operation{{Operation: "remove", Path: "/spec/enableInTreeAutoscaling"}}
		}
		got, err := DefaultingPatch(raw, raw, original, defaulted, func() (any, any, error) { return obj, WithTemplatesOf(defaulted, obj), nil })
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%T patch (-want +got):\n%s", obj, diff)
		}
	}
}
