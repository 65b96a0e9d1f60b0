package podsecurity

import (
	"fmt"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/pod-security-admission/policy"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
)

// A violation is located by running its check again on parts of the pod: first on the pod
// without containers (a pod-level setting: hostNetwork, a volume, the pod's
// securityContext), else on each container alone. Within the part that fails, it narrows
// down to the smallest field that fails on its own (securityContext.privileged,
// ports[0].hostPort). A check that fails for a container that sets nothing at all asks for a
// setting to be added; requiredSettings says where it goes.

// requiredSettings are the fields the restricted checks require a container (or its pod) to
// set, by check ID: a container that sets nothing fails these checks, so the field to add
// cannot be found by narrowing.
var requiredSettings = map[policy.CheckID][]any{
	"allowPrivilegeEscalation":  {"securityContext", "allowPrivilegeEscalation"},
	"capabilities_restricted":   {"securityContext", "capabilities"},
	"runAsNonRoot":              {"securityContext", "runAsNonRoot"},
	"seccompProfile_restricted": {"securityContext", "seccompProfile"},
}

// Fields of the containers raygate adds that come from the RayCluster: the autoscaler
// sidecar's from spec.autoscalerOptions, the wait-gcs-ready init container's from the
// worker's Ray container.
var (
	autoscalerOptionFields = []string{"image", "imagePullPolicy", "env", "envFrom", "volumeMounts", "securityContext", "resources", "command", "args"}
	fromRayContainerFields = []string{"image", "imagePullPolicy", "env", "volumeMounts", "securityContext"}
)

// maxNarrowDepth bounds how deep a located field may be below its container or pod spec.
const maxNarrowDepth = 6

type rootKind int

const (
	podRoot           rootKind = iota // the pod template: segments start with metadata or spec
	containerRoot                     // template.spec.containers[index]
	initContainerRoot                 // template.spec.initContainers[index]
	autoscalerRoot                    // <cluster spec>.autoscalerOptions
	sidecarRoot                       // a sidecar of the operator's configuration: reported at template.spec.containers
)

// origin says where a built pod's containers come from: the first userContainers and
// userInit from the template, then raygate's own, and the admin's sidecars (the operator's
// configuration) from firstSidecar on.
type origin struct {
	userContainers, userInit, firstSidecar int
}

// mapKey is a path segment that is a map key (an annotation), not a field name.
type mapKey string

// part is where in the RayCluster a located violation is.
type part struct {
	root  rootKind
	index int
	segs  []any // string: field, mapKey: map key, int: list index
}

func (p part) key() string { return fmt.Sprintf("%d/%d/%v", p.root, p.index, p.segs) }

func (p part) path(tmpl, specPath *field.Path) *field.Path {
	var path *field.Path
	switch p.root {
	case podRoot:
		path = tmpl
	case containerRoot:
		path = tmpl.Child("spec", "containers").Index(p.index)
	case initContainerRoot:
		path = tmpl.Child("spec", "initContainers").Index(p.index)
	case autoscalerRoot:
		path = specPath.Child("autoscalerOptions")
	case sidecarRoot:
		// Not in the RayCluster: the template's containers are where the pod's list is.
		return tmpl.Child("spec", "containers")
	}
	for _, s := range p.segs {
		switch s := s.(type) {
		case string:
			path = path.Child(s)
		case mapKey:
			path = path.Key(string(s))
		case int:
			path = path.Index(s)
		}
	}
	return path
}

// located is a violation in a pod, at a part of its template.
type located struct {
	check   policy.CheckID
	reason  string
	message string
	part    part
}

// message is a check result as the API server prints it: reason (detail).
func message(r policy.CheckResult) string {
	agg := policy.AggregateCheckResults([]policy.CheckResult{r})
	return agg.ForbiddenDetail()
}

// locatePod finds every check the pod fails and where. o says which containers came from the
// template; raygate appends its own after them (the autoscaler sidecar to the head's
// containers, wait-gcs-ready to a worker's init containers), and the admin's sidecars last.
func locatePod(checks []levelCheck, pod *corev1.Pod, o origin) []located {
	meta := &pod.ObjectMeta
	podOnly := pod.Spec.DeepCopy()
	podOnly.InitContainers, podOnly.Containers, podOnly.EphemeralContainers = nil, nil, nil
	var out []located
	for _, c := range checks {
		full := c.fn(meta, &pod.Spec)
		if full.Allowed {
			continue
		}
		if r := c.fn(meta, podOnly); !r.Allowed {
			out = append(out, podLevel(c, meta, podOnly, r)...)
			continue
		}
		found := containerLevel(c, meta, podOnly, &pod.Spec, o)
		if len(found) == 0 {
			found = []located{{c.id, full.ForbiddenReason, message(full), part{root: podRoot, segs: []any{"spec"}}}}
		}
		out = append(out, found...)
	}
	return out
}

// unlocated reports every check a pod fails at its template's spec, without locating it.
func unlocated(checks []levelCheck, pod *corev1.Pod) []located {
	var out []located
	for _, c := range checks {
		if r := c.fn(&pod.ObjectMeta, &pod.Spec); !r.Allowed {
			out = append(out, located{c.id, r.ForbiddenReason, message(r), part{root: podRoot, segs: []any{"spec"}}})
		}
	}
	return out
}

// podLevel locates a violation of the pod without its containers, in the template's spec
// or annotations.
func podLevel(c levelCheck, meta *metav1.ObjectMeta, podOnly *corev1.PodSpec, whole policy.CheckResult) []located {
	wholePod := []located{{c.id, whole.ForbiddenReason, message(whole), part{root: podRoot, segs: []any{"spec"}}}}
	spec, err := runtime.DefaultUnstructuredConverter.ToUnstructured(podOnly)
	if err != nil {
		return wholePod
	}
	annotations := map[string]any{}
	for k, v := range meta.Annotations {
		annotations[k] = v
	}
	doc := map[string]any{"spec": spec, "metadata": map[string]any{"annotations": annotations}}
	run := func(segs []any) policy.CheckResult {
		var pod corev1.Pod
		part, ok := isolate(doc, segs).(map[string]any)
		if !ok || runtime.DefaultUnstructuredConverter.FromUnstructured(part, &pod) != nil {
			return policy.CheckResult{Allowed: true}
		}
		return c.fn(&pod.ObjectMeta, &pod.Spec)
	}
	fails := func(segs []any) bool { return !run(segs).Allowed }
	var candidates [][]any
	for _, k := range slices.Sorted(maps.Keys(spec)) {
		candidates = append(candidates, []any{"spec", k})
	}
	for _, k := range slices.Sorted(maps.Keys(annotations)) {
		candidates = append(candidates, []any{"metadata", "annotations", mapKey(k)})
	}
	var out []located
	for _, cand := range candidates {
		if !fails(cand) {
			continue
		}
		for _, segs := range narrow(doc, cand, fails, 0) {
			r := run(segs)
			out = append(out, located{c.id, r.ForbiddenReason, message(r), part{root: podRoot, segs: segs}})
		}
	}
	if len(out) == 0 {
		return wholePod
	}
	return out
}

// witness is a container, or the part of one, that fails a check.
type witness struct {
	init bool
	c    corev1.Container
}

// withContainers is the pod spec without containers plus the given ones.
func withContainers(podOnly *corev1.PodSpec, ws ...witness) *corev1.PodSpec {
	s := *podOnly
	s.InitContainers, s.Containers = nil, nil
	for _, w := range ws {
		if w.init {
			s.InitContainers = append(s.InitContainers, w.c)
		} else {
			s.Containers = append(s.Containers, w.c)
		}
	}
	return &s
}

// containerLevel locates a violation in the containers, each alone in the pod. Containers
// whose violations come from the same field (a worker's Ray container and raygate's init
// container, which copies its securityContext) are reported once, with the library's
// message naming all of them.
func containerLevel(c levelCheck, meta *metav1.ObjectMeta, podOnly, full *corev1.PodSpec, o origin) []located {
	type group struct {
		part      part
		witnesses []witness
	}
	var order []string
	groups := map[string]*group{}
	add := func(p part, w witness) {
		k := p.key()
		if groups[k] == nil {
			groups[k] = &group{part: p}
			order = append(order, k)
		}
		groups[k].witnesses = append(groups[k].witnesses, w)
	}
	visit := func(init bool, i int, ctr corev1.Container) {
		if c.fn(meta, withContainers(podOnly, witness{init, ctr})).Allowed {
			return
		}
		if !c.fn(meta, withContainers(podOnly, witness{init, corev1.Container{Name: ctr.Name}})).Allowed {
			// Fails while setting nothing: a required setting is missing (or set wrong).
			segs, ok := requiredSettings[c.id]
			if !ok {
				segs = []any{"securityContext"}
			}
			add(containerPart(init, i, o, segs), witness{init, ctr})
			return
		}
		for _, f := range narrowContainer(c, meta, podOnly, init, ctr) {
			add(containerPart(init, i, o, f.segs), f.w)
		}
	}
	for i := range full.InitContainers {
		visit(true, i, full.InitContainers[i])
	}
	for i := range full.Containers {
		visit(false, i, full.Containers[i])
	}
	out := make([]located, 0, len(order))
	for _, k := range order {
		g := groups[k]
		r := c.fn(meta, withContainers(podOnly, g.witnesses...))
		out = append(out, located{c.id, r.ForbiddenReason, message(r), g.part})
	}
	return out
}

type narrowed struct {
	segs []any
	w    witness
}

// narrowContainer finds the smallest fields of a container that fail the check on their own.
func narrowContainer(c levelCheck, meta *metav1.ObjectMeta, podOnly *corev1.PodSpec, init bool, ctr corev1.Container) []narrowed {
	whole := []narrowed{{nil, witness{init, ctr}}}
	doc, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&ctr)
	if err != nil {
		return whole
	}
	isolated := func(segs []any) (corev1.Container, bool) {
		var out corev1.Container
		part, ok := isolate(doc, segs).(map[string]any)
		if !ok {
			return out, false
		}
		part["name"] = ctr.Name
		return out, runtime.DefaultUnstructuredConverter.FromUnstructured(part, &out) == nil
	}
	fails := func(segs []any) bool {
		part, ok := isolated(segs)
		return ok && !c.fn(meta, withContainers(podOnly, witness{init, part})).Allowed
	}
	var out []narrowed
	for _, k := range slices.Sorted(maps.Keys(doc)) {
		if k == "name" || !fails([]any{k}) {
			continue
		}
		for _, segs := range narrow(doc, []any{k}, fails, 0) {
			part, _ := isolated(segs)
			out = append(out, narrowed{segs, witness{init, part}})
		}
	}
	if len(out) == 0 {
		return whole
	}
	return out
}

// containerPart says where a container of the pod comes from.
func containerPart(init bool, i int, o origin, segs []any) part {
	switch {
	case init && i < o.userInit:
		return part{root: initContainerRoot, index: i, segs: segs}
	case init:
		// raygate's wait-gcs-ready takes these fields from the worker's Ray container.
		return part{root: containerRoot, index: rayv1.RayContainerIndex, segs: keepIf(segs, fromRayContainerFields)}
	case i < o.userContainers:
		return part{root: containerRoot, index: i, segs: segs}
	case i >= o.firstSidecar:
		return part{root: sidecarRoot, index: i - o.firstSidecar}
	default:
		// The autoscaler sidecar, configured by spec.autoscalerOptions.
		return part{root: autoscalerRoot, segs: keepIf(segs, autoscalerOptionFields)}
	}
}

// keepIf keeps segs when they start with one of the fields, else points at the whole.
func keepIf(segs []any, fields []string) []any {
	if len(segs) > 0 {
		if s, ok := segs[0].(string); ok && slices.Contains(fields, s) {
			return segs
		}
	}
	return nil
}

// narrow returns, below segs, the smallest parts of doc that fail on their own. A value
// that fails even when emptied (a hostPath volume fails whatever it holds; a sysctl fails by
// its name, which an emptied list item keeps) is the answer itself; otherwise narrow goes
// on into each child that fails alone (securityContext.privileged, ports[1].hostPort,
// capabilities.add[1]).
func narrow(doc any, segs []any, fails func([]any) bool, depth int) [][]any {
	here := [][]any{segs}
	value, ok := valueAt(doc, segs)
	if !ok || depth >= maxNarrowDepth || len(children(value)) == 0 || fails(appendSeg(segs, emptied{})) {
		return here
	}
	var out [][]any
	for _, k := range children(value) {
		if k == "name" && isListItem(segs) {
			continue // an emptied list item keeps its name
		}
		if kid := appendSeg(segs, k); fails(kid) {
			out = append(out, narrow(doc, kid, fails, depth+1)...)
		}
	}
	if len(out) == 0 {
		return here
	}
	return out
}

// emptied, as the last segment given to isolate, empties the value it reaches (a list item
// keeps its name).
type emptied struct{}

func isListItem(segs []any) bool {
	if len(segs) == 0 {
		return false
	}
	_, ok := segs[len(segs)-1].(int)
	return ok
}

// children are the segments below a value: its keys, or its indices.
func children(value any) []any {
	var out []any
	switch v := value.(type) {
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(v)) {
			out = append(out, k)
		}
	case []any:
		for i := range v {
			out = append(out, i)
		}
	}
	return out
}

func appendSeg(segs []any, s any) []any {
	return append(slices.Clip(segs), s)
}

func valueAt(doc any, segs []any) (any, bool) {
	v := doc
	for _, s := range segs {
		switch s := s.(type) {
		case int:
			l, ok := v.([]any)
			if !ok || s < 0 || s >= len(l) {
				return nil, false
			}
			v = l[s]
		case string, mapKey:
			m, ok := v.(map[string]any)
			if !ok {
				return nil, false
			}
			if v, ok = m[segKey(s)]; !ok {
				return nil, false
			}
		}
	}
	return v, true
}

func segKey(s any) string {
	if k, ok := s.(mapKey); ok {
		return string(k)
	}
	return s.(string)
}

// isolate returns the object that holds doc's value at segs and nothing else: a list keeps
// just that item, and each list item on the way keeps its name, which the library's
// messages quote.
func isolate(doc any, segs []any) any {
	if len(segs) == 0 {
		return doc
	}
	switch s := segs[0].(type) {
	case emptied:
		switch v := doc.(type) {
		case map[string]any:
			if name, ok := v["name"]; ok {
				return map[string]any{"name": name}
			}
			return map[string]any{}
		case []any:
			return []any{}
		}
		return doc
	case int:
		l, _ := doc.([]any)
		if s < 0 || s >= len(l) {
			return []any{}
		}
		inner := isolate(l[s], segs[1:])
		if item, ok := l[s].(map[string]any); ok && len(segs) > 1 {
			if name, ok := item["name"]; ok {
				if m, ok := inner.(map[string]any); ok {
					m["name"] = name
				}
			}
		}
		return []any{inner}
	default:
		m, _ := doc.(map[string]any)
		return map[string]any{segKey(s): isolate(m[segKey(s)], segs[1:])}
	}
}
