package webhooks

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	"gomodules.xyz/jsonpatch/v2"
	"k8s.io/utils/ptr"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/test/builders"
)

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
		original := withoutTemplates(obj)
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
		got, err := defaultingPatch(raw, raw, original, defaulted, func() (any, any, error) { return obj, withTemplatesOf(defaulted, obj), nil })
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%T patch (-want +got):\n%s", obj, diff)
		}
	}
}
