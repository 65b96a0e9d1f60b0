package app

import (
	"crypto/sha256"
	"encoding/json"
	"reflect"
	"sync"

	corev1 "k8s.io/api/core/v1"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
)

// Pod templates are most of a cached RayCluster (the webhook's defaults fill in probes,
// resources and environment), and a fleet's RayClusters usually share them: one chart or one
// RayService stamps out the same head and worker templates many times. templateInterner lets
// the cached RayClusters and RayServices share one decoded copy of each distinct template.
//
// Sharing is safe because nothing writes to a cached object: controller-runtime's cache reader
// hands out deep copies (raygate never sets UnsafeDisableDeepCopy) and event handlers only read.
// Two templates are shared only when they are identical field for field (reflect.DeepEqual, so
// nil and empty lists or two spellings of one quantity stay apart): every read of a spec sees
// exactly what it would see without sharing.
//
// Tenants choose the templates, so the table is bounded in entries and bytes; a template larger
// than maxInternedTemplateBytes is never shared (it is rare, and its JSON would cost more to
// keep than sharing saves). When the table is full an arbitrary entry goes: a later identical
// template then starts a new shared copy, costing memory, never correctness.
type templateInterner struct {
	mu         sync.Mutex
	entries    map[[sha256.Size]byte]*corev1.PodTemplateSpec
	sizes      map[[sha256.Size]byte]int
	bytes      int
	maxEntries int
	maxBytes   int
}

const (
	maxInternedTemplates     = 512
	maxInternedTemplateBytes = 64 << 10
	maxInternedBytes         = 8 << 20
)

func newTemplateInterner() *templateInterner {
	return &templateInterner{
		entries:    map[[sha256.Size]byte]*corev1.PodTemplateSpec{},
		sizes:      map[[sha256.Size]byte]int{},
		maxEntries: maxInternedTemplates,
		maxBytes:   maxInternedBytes,
	}
}

// intern makes *t share the internals of an identical template seen before, or records *t as
// the one to share from now on.
func (in *templateInterner) intern(t *corev1.PodTemplateSpec) {
	b, err := json.Marshal(t)
	if err != nil || len(b) > maxInternedTemplateBytes {
		return
	}
	key := sha256.Sum256(b)
	in.mu.Lock()
	defer in.mu.Unlock()
	if shared, ok := in.entries[key]; ok {
		if reflect.DeepEqual(shared, t) {
			*t = *shared
		}
		return
	}
	for len(in.entries) >= in.maxEntries || (len(in.entries) > 0 && in.bytes+len(b) > in.maxBytes) {
		for k := range in.entries {
			in.bytes -= in.sizes[k]
			delete(in.entries, k)
			delete(in.sizes, k)
			break
		}
	}
	shared := *t
	in.entries[key] = &shared
	in.sizes[key] = len(b)
	in.bytes += len(b)
}

// rayClusterSpec interns the head and worker templates of a RayCluster spec.
func (in *templateInterner) rayClusterSpec(s *rayv1.RayClusterSpec) {
	in.intern(&s.HeadGroupSpec.Template)
	for i := range s.WorkerGroupSpecs {
		in.intern(&s.WorkerGroupSpecs[i].Template)
	}
}

// transform is the cache transform of RayClusters and RayServices: it strips managedFields (as
// the default transform does for every other kind) and interns the pod templates.
func (in *templateInterner) transform(obj any) (any, error) {
	switch o := obj.(type) {
	case *rayv1.RayCluster:
		o.ManagedFields = nil
		in.rayClusterSpec(&o.Spec)
	case *rayv1.RayService:
		o.ManagedFields = nil
		in.rayClusterSpec(&o.Spec.RayClusterSpec)
	}
	return obj, nil
}
