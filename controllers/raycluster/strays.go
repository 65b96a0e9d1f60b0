package raycluster

import (
	"hash/fnv"
	"slices"
	"strconv"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/raygate/raygate/internal/owned/ownerref"
)

// A pod carrying a cluster's ray.io/cluster label is not necessarily the cluster's: anyone
// who may create pods in the namespace can copy the labels. raygate counts, plans for and
// deletes only the pods the cluster controls (a controller reference with the cluster's
// UID), as for every other object it owns; the others are reported once and left alone.

// EventForeignPods: pods carry the cluster's label but the cluster does not control them.
const EventForeignPods = "ForeignPods"

// maxStrayNames bounds the pod names one ForeignPods event lists.
const maxStrayNames = 10

// splitControlled splits pods into those rc controls and the names of the others, sorted.
// controlled reuses pods' array.
func splitControlled(pods []corev1.Pod, rc metav1.Object) (controlled []corev1.Pod, foreign []string) {
	controlled = pods[:0]
	for i := range pods {
		if ownerref.ControlledBy(&pods[i], rc) {
			controlled = append(controlled, pods[i])
		} else {
			foreign = append(foreign, pods[i].Name)
		}
	}
	slices.Sort(foreign)
	return controlled, foreign
}

// strayPods remembers, per cluster, which foreign pods were last reported (a hash of their
// names), so each set is reported once rather than on every pass. The zero value is ready.
type strayPods struct {
	mu   sync.Mutex
	last map[types.NamespacedName]uint64
}

// changed records names (sorted) as the cluster's foreign pods and reports whether they
// differ from the last set recorded; no foreign pods is never a change to report.
func (s *strayPods) changed(k types.NamespacedName, names []string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(names) == 0 {
		delete(s.last, k)
		return false
	}
	h := fnv.New64a()
	for _, n := range names {
		_, _ = h.Write([]byte(n))
		_, _ = h.Write([]byte{0})
	}
	sum := h.Sum64()
	if s.last == nil {
		s.last = map[types.NamespacedName]uint64{}
	}
	if prev, ok := s.last[k]; ok && prev == sum {
		return false
	}
	s.last[k] = sum
	return true
}

func (s *strayPods) forget(k types.NamespacedName) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.last, k)
}

// reportStrays warns once about each new set of foreign pods.
func (r *Reconciler) reportStrays(p *pass) {
	if !r.strays.changed(key(p.object), p.foreign) {
		return
	}
	shown := p.foreign[:min(len(p.foreign), maxStrayNames)]
	more := ""
	if n := len(p.foreign) - len(shown); n > 0 {
		more = " and " + strconv.Itoa(n) + " more"
	}
	p.log.Info("pods carry the cluster's label but the cluster does not control them; they are neither counted nor deleted",
		"pods", shown, "count", len(p.foreign))
	p.warn(EventForeignPods, actionSkip, "%d pods carry the label of this RayCluster but it does not control them (no controller reference with its UID): %s%s; raygate neither counts nor deletes them",
		len(p.foreign), strings.Join(shown, ", "), more)
}
