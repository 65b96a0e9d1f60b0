package podsecurity

import (
	"reflect"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/pod-security-admission/api"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/raypod"
)

// Origin says where a pod raygate builds comes from in the object a user wrote: the pod
// template, and the cluster spec for what raygate adds (the autoscaler sidecar comes from
// spec.autoscalerOptions). The API server names the fields of the pod it refuses
// ("spec.containers[0].env[2].name"); FieldPath turns them into fields of the object.
type Origin struct {
	// Template is the user's template the pod was built from, as the user wrote it (nil: the
	// pod comes from no template of the user's, e.g. a RayJob's default submitter pod).
	Template *corev1.PodTemplateSpec
	// TemplatePath is where Template is in the object (or where it would go).
	TemplatePath *field.Path
	// SpecPath is the spec of the cluster the pod belongs to; nil for pods outside a cluster.
	SpecPath *field.Path
}

// FieldPath maps a field of pod (built from o.Template), as the API server writes it, to
// the field of the object that causes it. The pod's lists hold the template's items plus
// what raygate adds (environment, mounts, ports, containers), not always at the same
// index, so items are matched by content, then by name; a field raygate added itself maps
// to the closest field of the template that holds it.
func (o Origin) FieldPath(pod *corev1.Pod, podField string) *field.Path {
	segs, ok := parseFieldPath(podField)
	if o.Template == nil || !ok || len(segs) == 0 {
		return o.TemplatePath
	}
	podDoc, err1 := runtime.DefaultUnstructuredConverter.ToUnstructured(pod)
	tmplDoc, err2 := runtime.DefaultUnstructuredConverter.ToUnstructured(o.Template)
	if err1 != nil || err2 != nil {
		return o.TemplatePath
	}
	if len(segs) >= 3 && segs[0] == "spec" && (segs[1] == "containers" || segs[1] == "initContainers") {
		if i, ok := segs[2].(int); ok {
			return o.containerField(podDoc, tmplDoc, segs[1].(string), i, segs[3:])
		}
	}
	return walk(podDoc, tmplDoc, o.TemplatePath, segs)
}

// containerField maps a field of the pod's container list[i]: one of the template's
// (matched by name), raygate's autoscaler sidecar (spec.autoscalerOptions), or a container
// raygate derives from the Ray container (wait-gcs-ready, a RayJob's submitter sidecar).
func (o Origin) containerField(podDoc, tmplDoc map[string]any, list string, i int, rest []any) *field.Path {
	podC, _ := valueAt(podDoc, []any{"spec", list, i})
	name := nameOf(podC)
	tmplList, _ := valueAt(tmplDoc, []any{"spec", list})
	items, _ := tmplList.([]any)
	for j, item := range items {
		if n := nameOf(item); n != "" && n == name {
			return walk(podC, item, o.TemplatePath.Child("spec", list).Index(j), rest)
		}
	}
	if list == "containers" && name == raypod.AutoscalerContainer && o.SpecPath != nil {
		return part{root: autoscalerRoot, segs: autoscalerField(rest)}.path(o.TemplatePath, o.SpecPath)
	}
	ray, ok := valueAt(tmplDoc, []any{"spec", "containers", rayv1.RayContainerIndex})
	if !ok {
		return o.TemplatePath.Child("spec", list)
	}
	rayPath := o.TemplatePath.Child("spec", "containers").Index(rayv1.RayContainerIndex)
	if len(keepIf(rest, fromRayContainerFields)) == 0 {
		return rayPath
	}
	return walk(podC, ray, rayPath, rest)
}

// autoscalerField is the field of spec.autoscalerOptions a field of the autoscaler sidecar
// comes from: the same path for the fields it copies whole, the list itself for the lists
// raygate adds its own items to first (env, envFrom, volumeMounts), none for the rest.
func autoscalerField(segs []any) []any {
	segs = keepIf(segs, autoscalerOptionFields)
	if len(segs) > 0 && slices.Contains([]any{"env", "envFrom", "volumeMounts"}, segs[0]) {
		return segs[:1]
	}
	return segs
}

// walk follows segs down the pod's value and the template's together, from path (where
// tmplV is in the object), and returns the deepest field of the template it reaches. A
// field the template does not set is named once (the field to set) and not followed.
func walk(podV, tmplV any, path *field.Path, segs []any) *field.Path {
	for _, s := range segs {
		switch s := s.(type) {
		case int:
			podList, _ := podV.([]any)
			tmplList, _ := tmplV.([]any)
			if s < 0 || s >= len(podList) {
				return path
			}
			j := matchItem(podList[s], tmplList, s)
			if j < 0 {
				return path // an item raygate added
			}
			path, podV, tmplV = path.Index(j), podList[s], tmplList[j]
		default:
			key := segKey(s)
			child := path.Child(key)
			if _, isKey := s.(mapKey); isKey {
				child = path.Key(key)
			}
			tmplMap, _ := tmplV.(map[string]any)
			next, ok := tmplMap[key]
			if !ok {
				return child
			}
			podMap, _ := podV.(map[string]any)
			path, podV, tmplV = child, podMap[key], next
		}
	}
	return path
}

// matchItem finds the template's list item a pod's list item comes from: an identical one
// (at the same index first), else the one with the same name (raygate replaced its value);
// -1 when raygate added the item.
func matchItem(item any, list []any, hint int) int {
	if hint < len(list) && reflect.DeepEqual(list[hint], item) {
		return hint
	}
	if j := slices.IndexFunc(list, func(t any) bool { return reflect.DeepEqual(t, item) }); j >= 0 {
		return j
	}
	name := nameOf(item)
	if name == "" {
		return -1
	}
	return slices.IndexFunc(list, func(t any) bool { return nameOf(t) == name })
}

// nameOf is the name of a list item ("" when it has none).
func nameOf(item any) string {
	v, _ := valueAt(item, []any{"name"})
	s, _ := v.(string)
	return s
}

// parseFieldPath splits a field path as field.Path prints it ("spec.containers[0].env",
// "metadata.labels[app.kubernetes.io/name]") into segments: field names, list indices and
// map keys. A bracket holding digits is read as an index; walk treats it as a key where the
// value is a map.
func parseFieldPath(s string) ([]any, bool) {
	var segs []any
	for len(s) > 0 {
		switch s[0] {
		case '.':
			s = s[1:]
		case '[':
			end := strings.IndexByte(s, ']')
			if end < 0 {
				return nil, false
			}
			inner := s[1:end]
			if n, err := strconv.Atoi(inner); err == nil && n >= 0 {
				segs = append(segs, n)
			} else {
				segs = append(segs, mapKey(inner))
			}
			s = s[end+1:]
		default:
			end := strings.IndexAny(s, ".[")
			if end < 0 {
				end = len(s)
			}
			segs = append(segs, s[:end])
			s = s[end:]
		}
	}
	return segs, true
}

// PodAt evaluates a pod raygate built at a level and version, naming for each violation the
// field of the object at o that causes it, as Cluster does for a whole cluster. Containers
// raygate derives from the Ray container (a RayJob's submitter sidecar) are left out: they
// take its securityContext, so the Ray container fails the same checks.
func (e *Evaluator) PodAt(lv api.LevelVersion, pod *corev1.Pod, o Origin) []Violation {
	checks := e.checksFor(lv)
	if len(checks) == 0 {
		return nil
	}
	if o.Template == nil {
		n := len(pod.Spec.Containers)
		found := locatePod(checks, pod, origin{userContainers: n, userInit: len(pod.Spec.InitContainers), firstSidecar: n})
		return materialize(found, o.TemplatePath, o.SpecPath, "")
	}
	p := *pod
	p.Spec.Containers = slices.DeleteFunc(slices.Clone(pod.Spec.Containers), func(c corev1.Container) bool {
		return c.Name != raypod.AutoscalerContainer && !slices.ContainsFunc(o.Template.Spec.Containers, func(t corev1.Container) bool { return t.Name == c.Name })
	})
	found := locatePod(checks, &p, origin{userContainers: len(o.Template.Spec.Containers), userInit: len(o.Template.Spec.InitContainers), firstSidecar: len(p.Spec.Containers)})
	return materialize(found, o.TemplatePath, o.SpecPath, "")
}
