package rayservice

import (
	"fmt"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// raygate updates or deletes only objects the RayService (or, for per-cluster objects, the
// cluster) controls, by UID. The cache holds only objects raygate labels, so an object with
// a wanted name made by someone else (or by an older raygate, without the label) is
// invisible to it until a create finds the name taken. Such names are remembered here, and
// read from the API server on every pass until the object is gone, labelled (it was ours)
// or reported (it is not). A cache of API facts, not state: after a restart the next create
// finds the name taken again.

func suspectKey(obj client.Object, key types.NamespacedName) string {
	return fmt.Sprintf("%T/%s/%s", obj, key.Namespace, key.Name)
}

// suspect remembers that an object with this name exists although the cache lacks it.
func (r *Reconciler) suspect(obj client.Object, key types.NamespacedName) {
	r.taken.Store(suspectKey(obj, key), struct{}{})
}

func (r *Reconciler) suspected(obj client.Object, key types.NamespacedName) bool {
	_, ok := r.taken.Load(suspectKey(obj, key))
	return ok
}

func (r *Reconciler) unsuspect(obj client.Object, key types.NamespacedName) {
	r.taken.Delete(suspectKey(obj, key))
}

// nameTaken is a create that found the name taken by an object the cache does not hold.
type nameTaken struct {
	kind, name string
}

func (e *nameTaken) Error() string {
	return fmt.Sprintf("%s %s exists but raygate's cache does not hold it: it is read from the API server on the next pass", e.kind, e.name)
}
