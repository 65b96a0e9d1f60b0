package owned

import (
	"reflect"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TakenNames remembers, per owner (the object a pass reconciles), the names of objects it
// wants that a create found taken while the cache did not hold them: the cache holds only
// objects raygate labels, so an object someone else made under a wanted name (or an older
// raygate made without the label) is invisible to it. Such names are read from the API
// server until the object is gone, the cache holds it, or it turns out to be the owner's.
// A foreign one stays remembered while it is there: each pass reports it again and notices
// when it goes. It is a cache of API facts, not state: after a restart the next create finds
// the name taken again. The zero value is ready to use.
type TakenNames struct {
	mu sync.Mutex
	m  map[types.NamespacedName]map[takenName]struct{}
}

// takenName is one object: its Go type (one per kind; an unstructured object's kind too)
// and its key. Building one allocates nothing: a pass asks for every object it reads.
type takenName struct {
	typ  reflect.Type
	kind string
	key  types.NamespacedName
}

func nameOf(obj client.Object, key types.NamespacedName) takenName {
	n := takenName{typ: reflect.TypeOf(obj), key: key}
	if u, ok := obj.(*unstructured.Unstructured); ok {
		n.kind = u.GetKind()
	}
	return n
}

func (t *TakenNames) remember(owner types.NamespacedName, n takenName) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.m == nil {
		t.m = map[types.NamespacedName]map[takenName]struct{}{}
	}
	if t.m[owner] == nil {
		t.m[owner] = map[takenName]struct{}{}
	}
	t.m[owner][n] = struct{}{}
}

func (t *TakenNames) has(owner types.NamespacedName, n takenName) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	_, ok := t.m[owner][n]
	return ok
}

func (t *TakenNames) drop(owner types.NamespacedName, n takenName) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if names, ok := t.m[owner]; ok {
		delete(names, n)
		if len(names) == 0 {
			delete(t.m, owner)
		}
	}
}

// Forget drops what is remembered for owner, once it is gone.
func (t *TakenNames) Forget(owner types.NamespacedName) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.m, owner)
}

// Len is how many names are remembered, for all owners.
func (t *TakenNames) Len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := 0
	for _, names := range t.m {
		n += len(names)
	}
	return n
}
