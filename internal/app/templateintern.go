package app

import (
	"crypto/sha256"
	"encoding/json"
	"reflect"

	corev1 "k8s.io/api/core/v1"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/sharedtable"
)

// Pod templates are most of a cached RayCluster (the webhook's defaults fill in probes,
// resources and environment), and a fleet's RayClusters usually share them: one chart or one
// RayService stamps out the same head and worker templates many times, and a RayJob's cluster
// is a copy of its own. templateInterner lets the cached RayClusters, RayServices and RayJobs
// share one decoded copy of each distinct template.
//
// Sharing is safe because nothing writes to a cached object: controller-runtime's cache reader
// hands out deep copies, the few reads that ask for none (client.UnsafeDisableDeepCopy) only
// read (controllers/raycluster/sharedpods_test.go), and event handlers only read.
// Two templates are shared only when they are identical field for field (reflect.DeepEqual, so
// nil and empty lists or two spellings of one quantity stay apart): every read of a spec sees
// exactly what it would see without sharing.
//
// Tenants choose the templates, so the table is bounded in entries and bytes; a template larger
// than maxInternedTemplateBytes is never shared (it is rare, and its JSON would cost more to
// keep than sharing saves). When the table is full an arbitrary entry goes: a later identical
// template then starts a new shared copy, costing memory, never correctness.
type templateInterner struct {
	table *sharedtable.Table[*corev1.PodTemplateSpec]
}

const (
	maxInternedTemplates     = 512
	maxInternedTemplateBytes = 64 << 10
	maxInternedBytes         = 8 << 20
)

func newTemplateInterner() *templateInterner {
	return newTemplateInternerWithin(sharedtable.Limits{
		Entries: maxInternedTemplates, Bytes: maxInternedBytes, EntryBytes: maxInternedTemplateBytes,
	})
}

func newTemplateInternerWithin(limits sharedtable.Limits) *templateInterner {
	return &templateInterner{table: sharedtable.New[*corev1.PodTemplateSpec](limits)}
}

// intern makes *t share the internals of an identical template seen before, or records *t as
// the one to share from now on.
func (in *templateInterner) intern(t *corev1.PodTemplateSpec) {
	b, err := json.Marshal(t)
	if err != nil || len(b) > maxInternedTemplateBytes {
		return
	}
	key := sha256.Sum256(b)
	if shared, ok := in.table.Get(key); ok {
		if reflect.DeepEqual(shared, t) {
			*t = *shared
		}
		return
	}
	shared := *t
	in.table.Add(key, &shared, len(b))
}

// rayClusterSpec interns the head and worker templates of a RayCluster spec.
func (in *templateInterner) rayClusterSpec(s *rayv1.RayClusterSpec) {
	in.intern(&s.HeadGroupSpec.Template)
	for i := range s.WorkerGroupSpecs {
		in.intern(&s.WorkerGroupSpecs[i].Template)
	}
}

// transform is the cache transform of RayClusters, RayServices and RayJobs: it strips managedFields (as
// the default transform does for every other kind) and interns the pod templates.
func (in *templateInterner) transform(obj any) (any, error) {
	switch o := obj.(type) {
	case *rayv1.RayCluster:
		o.ManagedFields = nil
		in.rayClusterSpec(&o.Spec)
	case *rayv1.RayService:
		o.ManagedFields = nil
		in.rayClusterSpec(&o.Spec.RayClusterSpec)
	case *rayv1.RayJob:
		o.ManagedFields = nil
		if o.Spec.RayClusterSpec != nil {
			in.rayClusterSpec(o.Spec.RayClusterSpec)
		}
	}
	return obj, nil
}
