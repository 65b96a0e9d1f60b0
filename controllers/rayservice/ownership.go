package rayservice

import (
	"sigs.k8s.io/controller-runtime/pkg/client"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/owned"
)

// raygate updates or deletes only objects the RayService (or, for per-cluster objects, the
// cluster) controls, by UID: the plan decides (ownerref), package owned reads and writes.
// The cache holds only objects raygate labels, so an object with a wanted name made by
// someone else (or by an older raygate, without the label) is invisible to it until a create
// finds the name taken. Such names are remembered (taken) and read from the API server on
// every pass until the object is gone or in the cache; one of the RayService's own is
// relabelled at once. A cache of API facts, not state: after a restart the next create finds
// the name taken again.

// takenNames are the names a create found taken by objects the cache lacks.
type takenNames = owned.TakenNames

// objects reads and writes the objects svc owns, and those its clusters own.
func (r *Reconciler) objects(svc *rayv1.RayService) owned.Client {
	return owned.Client{Writer: r.client, API: r.apiReader, Names: &r.taken, Owner: client.ObjectKeyFromObject(svc), OwnerKind: rayv1.RayServiceKind}
}
