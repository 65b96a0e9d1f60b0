package ownerref

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// Op is what a pass does to one owned object.
type Op int

const (
	Keep     Op = iota // nothing to do
	Create             // create the object
	Update             // write the object: the existing one with the owner's fields set
	Recreate           // delete the existing object (a field it needs cannot change); a later pass creates it
	Delete             // delete the existing object: the owner no longer wants it
	Report             // the object under the wanted name is not the owner's: report it, touch nothing
)

var opNames = [...]string{"keep", "create", "update", "recreate", "delete", "report"}

func (o Op) String() string {
	if o < 0 || int(o) >= len(opNames) {
		return "unknown"
	}
	return opNames[o]
}

// Object is what a change is about: a pointer to an API object (nil: none).
type Object interface {
	comparable
	metav1.Object
}

// Change is one decision about one owned object.
type Change[T Object] struct {
	Op Op
	// Object is what to create or write, or the existing object (recreate, delete, report).
	Object T
}

// Merge returns existing with the owner's fields set as in desired, leaving what others
// (the API server's defaults, other controllers) set, or nil when nothing differs.
// recreate is true when the difference cannot be written in place.
type Merge[T Object] func(existing, desired T) (updated T, recreate bool)

// Decide is the change that brings an owned object to desired. desired is nil when the owner
// does not want the object, existing nil when there is none; controlled says the owner
// controls existing. An object the owner does not control is reported when it is wanted and
// ignored otherwise: it is never written or deleted.
func Decide[T Object](desired, existing T, controlled bool, merge Merge[T]) Change[T] {
	var none T
	switch {
	case existing == none && desired == none:
		return Change[T]{}
	case existing == none:
		return Change[T]{Op: Create, Object: desired}
	case !controlled && desired == none:
		return Change[T]{}
	case !controlled:
		return Change[T]{Op: Report, Object: existing}
	case desired == none:
		return Change[T]{Op: Delete, Object: existing}
	}
	updated, recreate := merge(existing, desired)
	switch {
	case recreate:
		return Change[T]{Op: Recreate, Object: existing}
	case updated != none:
		return Change[T]{Op: Update, Object: updated}
	}
	return Change[T]{}
}

// HasEntries reports whether m holds every entry of want (labels or annotations an owner sets
// among those others added).
func HasEntries(m, want map[string]string) bool {
	for k, v := range want {
		if got, ok := m[k]; !ok || got != v {
			return false
		}
	}
	return true
}
