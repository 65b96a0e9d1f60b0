package webhooks

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"gomodules.xyz/jsonpatch/v2"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
)

// mutator applies a defaulting function and patches what it changed.
type mutator[T client.Object] struct {
	decoder admission.Decoder
	newObj  func() T
	apply   func(T)
	// clean remembers unchanged updates that defaulting left as they were (unchanged.go).
	clean cleanSet
}

func (m *mutator[T]) Handle(ctx context.Context, req admission.Request) admission.Response {
	if req.Operation != admissionv1.Create && req.Operation != admissionv1.Update {
		return admission.Allowed("")
	}
	key, unchanged := unchangedKey(req)
	if unchanged && m.clean.has(key) {
		return admission.Allowed("")
	}
	// Defaulting never reads or writes pod templates or the serve config (most of an
	// object), so they are not decoded: original is the object without them.
	original := m.newObj()
	skeleton, err := decodeWithoutTemplates(req.Object.Raw, original)
	if err != nil {
		return admission.Errored(http.StatusBadRequest, err)
	}
	// An object being deleted is left exactly as sent, so finalizer removal stays a pure
	// metadata change.
	if original.GetDeletionTimestamp() != nil {
		return admission.Allowed("")
	}
	defaulted, ok := original.DeepCopyObject().(T)
	if !ok {
		return admission.Errored(http.StatusInternalServerError, errors.New("unexpected object type"))
	}
	m.apply(defaulted)
	// reflect, not equality.Semantic: the latter calls a nil map equal to an empty one, and
	// rayStartParams: {} (a default) must be patched in when a client-side apply drops it.
	if reflect.DeepEqual(original, defaulted) {
		if unchanged {
			m.clean.add(key)
		}
		return admission.Allowed("")
	}
	patches, err := defaultingPatch(req.Object.Raw, skeleton, original, defaulted, func() (any, any, error) {
		obj := m.newObj()
		if err := m.decoder.DecodeRaw(req.Object, obj); err != nil {
			return nil, nil, undecodable{err}
		}
		return obj, withTemplatesOf(defaulted, obj), nil
	})
	if bad := (undecodable{}); errors.As(err, &bad) {
		return admission.Errored(http.StatusBadRequest, bad.error)
	}
	if err != nil {
		logf.FromContext(ctx).Error(err, "computing the defaulting patch")
		return admission.Errored(http.StatusInternalServerError, err)
	}
	return admission.Patched("", patches...)
}

// undecodable is a request object that does not decode: the sender's fault, a 400. The pod
// templates are decoded only on the slower way of defaultingPatch, so that is where a
// malformed one shows.
type undecodable struct{ error }

// defaultingPatch returns the JSON patch that takes the request's raw object to the
// defaulted one. It compares the decoded object with the defaulted one field by field
// (structPatch: nothing is marshalled), so differences a decode/encode round trip alone
// causes (e.g. "1000m" printed as "1") are not in it: they are not defaults, and patching
// them would rewrite what the user wrote. The operations
// are then fitted to the raw object: a key the user left out is added, not replaced.
//
// original and defaulted are without templates (withoutTemplates), so no operation is inside
// a template or the serve config, and which keys the request has is read from skeleton (raw
// with those emptied, or raw itself); full returns the whole objects, for the slower way.
func defaultingPatch(raw, skeleton []byte, original, defaulted any, full func() (original, defaulted any, err error)) ([]jsonpatch.Operation, error) {
	patches, err := structPatch(original, defaulted)
	if errors.Is(err, errNeedsRemove) {
		return diffFromRaw(raw, full)
	}
	if err != nil || len(patches) == 0 {
		return patches, err
	}
	for i := range patches {
		exists, parentOK := rawHas(skeleton, patches[i].Path)
		if !parentOK || patches[i].Operation == "remove" {
			// Defaulting only adds and replaces, under objects the request has; anything
			// else takes the slower way that assumes nothing.
			return diffFromRaw(raw, full)
		}
		if !exists && patches[i].Operation == "replace" {
			patches[i].Operation = "add"
		}
	}
	return patches, nil
}

// rawHas reports whether the JSON pointer's key exists in the raw object, and whether its
// parent is an object. It scans the raw bytes along the pointer without decoding or
// copying them.
func rawHas(raw []byte, pointer string) (exists, parentOK bool) {
	rest, ok := strings.CutPrefix(pointer, "/")
	if !ok {
		return false, false
	}
	cur := raw
	for more := true; more; {
		var t string
		t, rest, more = strings.Cut(rest, "/")
		t = strings.ReplaceAll(strings.ReplaceAll(t, "~1", "/"), "~0", "~")
		last := !more
		cur = bytes.TrimLeft(cur, " \t\r\n")
		switch {
		case len(cur) > 0 && cur[0] == '{':
			next, found, ok := rawMember(cur, t)
			if !ok {
				return false, false
			}
			if last {
				return found, true
			}
			if !found {
				return false, false
			}
			cur = next
		case len(cur) > 0 && cur[0] == '[' && !last:
			n, err := strconv.Atoi(t)
			if err != nil {
				return false, false
			}
			next, ok := rawElement(cur, n)
			if !ok {
				return false, false
			}
			cur = next
		default:
			return false, false
		}
	}
	return false, false
}

// diffFromRaw diffs the raw object against the defaulted one and drops what the round trip
// alone changes.
func diffFromRaw(raw []byte, full func() (original, defaulted any, err error)) ([]jsonpatch.Operation, error) {
	original, defaulted, err := full()
	if err != nil {
		return nil, err
	}
	defaultedJSON, err := json.Marshal(defaulted)
	if err != nil {
		return nil, err
	}
	originalJSON, err := json.Marshal(original)
	if err != nil {
		return nil, err
	}
	patches, err := jsonpatch.CreatePatch(raw, defaultedJSON)
	if err != nil {
		return nil, err
	}
	roundTrip, err := jsonpatch.CreatePatch(raw, originalJSON)
	if err != nil {
		return nil, err
	}
	return slices.DeleteFunc(patches, func(p jsonpatch.Operation) bool {
		return slices.ContainsFunc(roundTrip, func(q jsonpatch.Operation) bool {
			return p.Operation == q.Operation && p.Path == q.Path && reflect.DeepEqual(p.Value, q.Value)
		})
	}), nil
}

// withoutTemplates returns a shallow copy of a RayCluster or RayService without its pod
// templates and serve config, which are most of its bytes (up to 256 KiB of serve config)
// and which defaulting never touches (FuzzMutateRayService checks the patch against full
// defaulting).
func withoutTemplates(obj any) any {
	switch o := obj.(type) {
	case *rayv1.RayCluster:
		c := *o
		c.Spec = specWithoutTemplates(o.Spec)
		return &c
	case *rayv1.RayService:
		s := *o
		s.Spec.RayClusterSpec = specWithoutTemplates(o.Spec.RayClusterSpec)
		s.Spec.ServeConfigV2 = ""
		return &s
	}
	return obj
}

// withTemplatesOf returns slim (an object of withoutTemplates, defaulted) with the pod
// templates and serve config of full put back: the whole defaulted object.
func withTemplatesOf(slim, full any) any {
	switch s := slim.(type) {
	case *rayv1.RayCluster:
		if f, ok := full.(*rayv1.RayCluster); ok {
			c := *s
			c.Spec = specWithTemplatesOf(s.Spec, &f.Spec)
			return &c
		}
	case *rayv1.RayService:
		if f, ok := full.(*rayv1.RayService); ok {
			c := *s
			c.Spec.RayClusterSpec = specWithTemplatesOf(s.Spec.RayClusterSpec, &f.Spec.RayClusterSpec)
			c.Spec.ServeConfigV2 = f.Spec.ServeConfigV2
			return &c
		}
	}
	return slim
}

func specWithTemplatesOf(spec rayv1.RayClusterSpec, full *rayv1.RayClusterSpec) rayv1.RayClusterSpec {
	spec.HeadGroupSpec.Template = full.HeadGroupSpec.Template
	groups := slices.Clone(spec.WorkerGroupSpecs)
	for i := range groups {
		if i < len(full.WorkerGroupSpecs) {
			groups[i].Template = full.WorkerGroupSpecs[i].Template
		}
	}
	spec.WorkerGroupSpecs = groups
	return spec
}

func specWithoutTemplates(spec rayv1.RayClusterSpec) rayv1.RayClusterSpec {
	spec.HeadGroupSpec.Template = corev1.PodTemplateSpec{}
	groups := slices.Clone(spec.WorkerGroupSpecs)
	for i := range groups {
		groups[i].Template = corev1.PodTemplateSpec{}
	}
	spec.WorkerGroupSpecs = groups
	return spec
}
