package app

import (
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/raygate/raygate/internal/cacheneeds"
)

// stringTable lets cached objects share equal short strings. Every decoded pod has its own
// copy of each label key and value, its namespace, owner and container names, a measurable
// part of the cached pods' memory (docs/benchmarks.md), and nearly all of it repeats (the
// label keys on every pod, a cluster's name on each of its pods).
//
// Strings come from tenants, so the table is bounded: strings longer than maxSharedString are
// not shared, and a full table starts over (objects already cached keep their strings).
// unique.Make is not used because its table forgets a string as soon as no Handle is left,
// and a cached object keeps only the string.
type stringTable struct {
	mu      sync.Mutex
	strings map[string]string
	max     int
}

const (
	maxSharedString  = 64
	maxSharedStrings = 16384
)

func newStringTable(max int) *stringTable {
	return &stringTable{strings: make(map[string]string, 256), max: max}
}

// share returns the table's copy of s, adding s if it has none.
func (t *stringTable) share(s string) string {
	if s == "" || len(s) > maxSharedString {
		return s
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if v, ok := t.strings[s]; ok {
		return v
	}
	if len(t.strings) >= t.max {
		clear(t.strings)
	}
	t.strings[s] = s
	return s
}

// pod shares the repeated strings of a slim cached pod (SlimPod has already dropped the rest).
func (t *stringTable) pod(p *corev1.Pod) {
	p.Namespace = t.share(p.Namespace)
	p.GenerateName = t.share(p.GenerateName)
	if len(p.Labels) > 0 {
		labels := make(map[string]string, len(p.Labels))
		for k, v := range p.Labels {
			labels[t.share(k)] = t.share(v)
		}
		p.Labels = labels
	}
	for k, v := range p.Annotations {
		p.Annotations[k] = t.share(v)
	}
	if len(p.Annotations) == 0 {
		p.Annotations = nil
	}
	for i := range p.OwnerReferences {
		o := &p.OwnerReferences[i]
		o.APIVersion, o.Kind, o.Name = t.share(o.APIVersion), t.share(o.Kind), t.share(o.Name)
	}
	p.Spec.NodeName = t.share(p.Spec.NodeName)
	for i := range p.Spec.Containers {
		p.Spec.Containers[i].Name = t.share(p.Spec.Containers[i].Name)
	}
	st := &p.Status
	st.Phase = corev1.PodPhase(t.share(string(st.Phase)))
	st.QOSClass = corev1.PodQOSClass(t.share(string(st.QOSClass)))
	st.Reason = t.share(st.Reason)
	for i := range st.Conditions {
		c := &st.Conditions[i]
		c.Type, c.Status, c.Reason = corev1.PodConditionType(t.share(string(c.Type))), corev1.ConditionStatus(t.share(string(c.Status))), t.share(c.Reason)
	}
	for i := range st.ContainerStatuses {
		c := &st.ContainerStatuses[i]
		c.Name = t.share(c.Name)
		if w := c.State.Waiting; w != nil {
			w.Reason = t.share(w.Reason)
		}
		if x := c.State.Terminated; x != nil {
			x.Reason = t.share(x.Reason)
		}
		if x := c.LastTerminationState.Terminated; x != nil {
			x.Reason = t.share(x.Reason)
		}
	}
}

// slimSharedPod is the pod cache's transform: the declared fields only
// (cacheneeds.SlimPod), then shared strings.
func slimSharedPod(fields cacheneeds.PodFields, t *stringTable) cache.TransformFunc {
	return func(obj any) (any, error) {
		if pod, ok := obj.(*corev1.Pod); ok {
			t.pod(cacheneeds.SlimPod(pod, fields))
		}
		return obj, nil
	}
}
