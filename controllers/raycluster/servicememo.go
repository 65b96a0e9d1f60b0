package raycluster

import (
	"sync"

	"k8s.io/apimachinery/pkg/types"
)

// serviceMemo remembers, per cluster, the stored versions of the cluster and of its head
// Service that a pass last found in agreement, so a pass over the same two versions takes the
// Service as it is instead of building the wanted one and comparing them: most passes of a
// bring-up follow pod events and change neither, and building and comparing the Service was a
// good share of what they allocated (docs/benchmarks.md). A resourceVersion names one stored
// version of one object, so any change of the cluster (spec, metadata, status) or of the
// Service (an edit, a re-creation) makes the next pass compare again. The memo lives in the
// process: a restarted or upgraded raygate compares every Service once.
type serviceMemo struct {
	mu sync.Mutex
	m  map[types.NamespacedName]serviceVersions
}

// serviceVersions are the resourceVersions of a cluster and its head Service.
type serviceVersions struct{ cluster, service string }

// agree says whether these versions were last found in agreement.
func (s *serviceMemo) agree(k types.NamespacedName, cluster, service string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.m[k]
	return ok && cluster != "" && service != "" && v == serviceVersions{cluster, service}
}

// remember records versions found in agreement.
func (s *serviceMemo) remember(k types.NamespacedName, cluster, service string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = map[types.NamespacedName]serviceVersions{}
	}
	s.m[k] = serviceVersions{cluster, service}
}

func (s *serviceMemo) forget(k types.NamespacedName) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.m, k)
}
