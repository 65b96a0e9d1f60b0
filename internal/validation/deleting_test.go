package validation

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func deletingObject(mutate func(o map[string]any)) *unstructured.Unstructured {
	o := map[string]any{
		"apiVersion": "ray.io/v1", "kind": "RayCluster",
		"metadata": map[string]any{
			"name": "demo", "namespace": "ns",
			"finalizers":  []any{"ray.io/gcs-ft-redis-cleanup-finalizer"},
			"annotations": map[string]any{"ray.io/gcs-ft-deletion-timeout": "5m", "example.com/note": "a"},
			"labels":      map[string]any{"team": "ml"},
		},
		"spec": map[string]any{
			"headGroupSpec": map[string]any{"template": map[string]any{"spec": map[string]any{
				"containers": []any{map[string]any{"name": "ray-head", "image": "rayproject/ray:2.52.0"}},
			}}},
			"gcsFaultToleranceOptions": map[string]any{"redisAddress": "redis:6379"},
		},
	}
	if mutate != nil {
		mutate(o)
	}
	return &unstructured.Unstructured{Object: o}
}

func beingDeleted(o map[string]any) {
	o["metadata"].(map[string]any)["deletionTimestamp"] = "2026-11-29T06:00:00Z"
}

func metadataOf(o map[string]any) map[string]any { return o["metadata"].(map[string]any) }

func TestDeletingUpdate(t *testing.T) {
	spec := func(o map[string]any) map[string]any { return o["spec"].(map[string]any) }
	headImage := func(image string) func(map[string]any) {
		return func(o map[string]any) {
			c := spec(o)["headGroupSpec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)["containers"].([]any)[0]
			c.(map[string]any)["image"] = image
		}
	}
	cases := map[string]struct {
		deleting bool
		mutate   func(o map[string]any)
		want     field.ErrorList
	}{
		"finalizer removed": {deleting: true, mutate: func(o map[string]any) { delete(metadataOf(o), "finalizers") }},
		"labels and other annotations changed": {deleting: true, mutate: func(o map[string]any) {
			metadataOf(o)["labels"] = map[string]any{"team": "infra"}
			metadataOf(o)["annotations"].(map[string]any)["example.com/note"] = "b"
		}},
		"nothing changed": {deleting: true},
		"image changed": {deleting: true, mutate: headImage("evil.example.com/ray:latest"),
			want: field.ErrorList{field.Forbidden(p("spec.headGroupSpec"), "")}},
		"privileged container and new worker group": {deleting: true, mutate: func(o map[string]any) {
			headImage("rayproject/ray:2.52.0")(o)
			c := spec(o)["headGroupSpec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)["containers"].([]any)[0]
			c.(map[string]any)["securityContext"] = map[string]any{"privileged": true}
			spec(o)["workerGroupSpecs"] = []any{}
		}, want: field.ErrorList{field.Forbidden(p("spec.headGroupSpec"), ""), field.Forbidden(p("spec.workerGroupSpecs"), "")}},
		"a field removed": {deleting: true, mutate: func(o map[string]any) { delete(spec(o), "gcsFaultToleranceOptions") },
			want: field.ErrorList{field.Forbidden(p("spec.gcsFaultToleranceOptions"), "")}},
		"the whole spec removed": {deleting: true, mutate: func(o map[string]any) { delete(o, "spec") },
			want: field.ErrorList{field.Forbidden(p("spec"), "")}},
		"deletion timeout raised, storage namespace added, ft-enabled removed": {deleting: true, mutate: func(o map[string]any) {
			metadataOf(o)["annotations"] = map[string]any{"ray.io/gcs-ft-deletion-timeout": "1h", "ray.io/external-storage-namespace": "other", "example.com/note": "a"}
		}, want: field.ErrorList{
			field.Forbidden(p("metadata.annotations[ray.io/external-storage-namespace]"), ""),
			field.Forbidden(p("metadata.annotations[ray.io/gcs-ft-deletion-timeout]"), ""),
		}},
		"annotations removed": {deleting: true, mutate: func(o map[string]any) { delete(metadataOf(o), "annotations") },
			want: field.ErrorList{field.Forbidden(p("metadata.annotations[ray.io/gcs-ft-deletion-timeout]"), "")}},
		"not being deleted: not this rule's business": {mutate: headImage("evil.example.com/ray:latest")},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			old := deletingObject(nil)
			if tc.deleting {
				old = deletingObject(beingDeleted)
			}
			obj := old.DeepCopy()
			if tc.mutate != nil {
				tc.mutate(obj.Object)
			}
			diffErrors(t, tc.want, DeletingUpdate(old, obj))
		})
	}
}

// The deletion that sets the timestamp is no spec change; nor is a nil object.
func TestDeletingUpdateEdges(t *testing.T) {
	old := deletingObject(nil)
	obj := deletingObject(beingDeleted)
	if errs := DeletingUpdate(old, obj); len(errs) != 0 {
		t.Errorf("deletion itself: %v", errs)
	}
	if errs := DeletingUpdate(nil, obj); len(errs) != 0 {
		t.Errorf("no old object: %v", errs)
	}
	now := metav1.Now()
	obj.SetDeletionTimestamp(&now)
	obj.Object["spec"] = "not a map"
	if errs := DeletingUpdate(old, obj); len(errs) != 1 || errs[0].Field != "spec" {
		t.Errorf("a spec of the wrong type: %v", errs)
	}
}
