// Package ownerref decides, without any I/O, about the objects a controller owns: who
// controls an object, how a foreign object found under a wanted name is described (one
// Conflict, worded the same by every controller), and which change brings an owned object to
// what its owner wants. The RayService plan, which does no I/O, decides with it; package
// owned reads, and carries the changes out.
package ownerref

import (
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
)

// ControlledBy reports whether owner is obj's controller (by UID).
func ControlledBy(obj, owner metav1.Object) bool { return metav1.IsControlledBy(obj, owner) }

// SameController reports whether found has the controller that want, an object built for its
// owner, names (by UID). An object without a controller reference has none.
func SameController(found, want metav1.Object) bool {
	a, b := metav1.GetControllerOf(found), metav1.GetControllerOf(want)
	return a != nil && b != nil && a.UID == b.UID
}

// Labelled reports whether obj carries the label raygate's cache selects its objects on
// (app.kubernetes.io/created-by=kuberay-operator). An object an older raygate made without
// it is invisible to the cache until it is relabelled.
func Labelled(obj metav1.Object) bool {
	return obj.GetLabels()[rayv1.KubernetesCreatedByLabelKey] == rayv1.ComponentName
}

// Conflict is an object with a name raygate wants that the wanted owner does not control.
// raygate leaves it untouched and reports it in the owner's OwnershipConflict condition.
type Conflict struct {
	// Kind and Name are the object's.
	Kind, Name string
	// Wanted names the controller the object should have: "this RayCluster" for the object a
	// pass reconciles, "RayCluster demo-abcde" for another.
	Wanted string
	// Controller is the "Kind Name" of the object's controller ("": it has none).
	Controller string
}

// NewConflict describes found, of the given kind, as not controlled by wanted (see
// WantedOwner).
func NewConflict(kind string, found metav1.Object, wanted string) Conflict {
	c := Conflict{Kind: kind, Name: found.GetName(), Wanted: wanted}
	if ref := metav1.GetControllerOf(found); ref != nil {
		c.Controller = ref.Kind + " " + ref.Name
	}
	return c
}

func (c Conflict) String() string {
	owner := "it has no controller"
	if c.Controller != "" {
		owner = "it is controlled by " + c.Controller
	}
	return fmt.Sprintf("%s %s exists and is not controlled by %s (%s)", c.Kind, c.Name, c.Wanted, owner)
}

// WantedOwner names the controller want (an object built for its owner) names, as a
// Conflict words it: "this <Kind>" when it is of passKind, the kind of object the pass
// reconciles, and "<Kind> <name>" otherwise.
func WantedOwner(want metav1.Object, passKind string) string {
	ref := metav1.GetControllerOf(want)
	if ref == nil || ref.Kind == passKind {
		return "this " + passKind
	}
	return ref.Kind + " " + ref.Name
}

// Message joins the descriptions of a pass's conflicts and what follows from them into the
// OwnershipConflict condition's message ("" without conflicts).
func Message(descriptions []string, consequence string) string {
	if len(descriptions) == 0 {
		return ""
	}
	return strings.Join(descriptions, "; ") + ". " + consequence
}
