package admissionjson

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	sigsjson "sigs.k8s.io/json"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
)

// DecodeWithoutTemplates decodes raw into a RayCluster or RayService without its pod
// templates and serve config (as WithoutTemplates leaves it) and without ever decoding them:
// defaulting does not read them. A template the raw scan cannot set aside is decoded and then
// dropped. Malformed content inside a template is therefore not reported here; the API
// server's schema check and the validating webhook report it.
//
// skeleton is what was decoded: raw with the templates and serve config emptied (raw itself
// when they could not be set aside). It answers what raw has outside them at a fraction of
// the scanning.
func DecodeWithoutTemplates(raw []byte, into runtime.Object) (skeleton []byte, err error) {
	if elided, ok := findElided(raw, into, true); ok && len(elided) > 0 {
		skeleton = withElided(raw, elided)
		return skeleton, sigsjson.UnmarshalCaseSensitivePreserveInts(skeleton, into)
	}
	if err := Decode(raw, into); err != nil {
		return nil, err
	}
	if spec := clusterSpecOf(into); spec != nil {
		*spec = specWithoutTemplates(*spec)
	}
	if svc, ok := into.(*rayv1.RayService); ok {
		svc.Spec.ServeConfigV2 = ""
	}
	return raw, nil
}

// WithoutTemplates returns a shallow copy of a RayCluster or RayService without its pod
// templates and serve config, which are most of its bytes (up to 256 KiB of serve config)
// and which defaulting never touches (webhooks.FuzzMutateRayService checks the patch against
// full defaulting). Other objects are returned as they are.
func WithoutTemplates(obj any) any {
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

// WithTemplatesOf returns slim (an object of WithoutTemplates, defaulted) with the pod
// templates and serve config of full put back: the whole defaulted object.
func WithTemplatesOf(slim, full any) any {
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

// clusterSpecOf is the RayCluster spec inside a RayCluster or RayService, nil for others.
func clusterSpecOf(obj runtime.Object) *rayv1.RayClusterSpec {
	switch o := obj.(type) {
	case *rayv1.RayCluster:
		return &o.Spec
	case *rayv1.RayService:
		return &o.Spec.RayClusterSpec
	}
	return nil
}
