package raycluster

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/raypod"
)

// The claim of the rocksdb GCS backend. raygate creates it and reads it back by name; it
// never lists, watches, caches, updates or deletes claims: the garbage collector deletes
// the claim with its cluster (deletionPolicy DeleteWithCluster, the default), and nothing
// does with Retain. Claims are not cached, so a rocksdb cluster costs one GET per pass and
// other claims in the cluster cost nothing.
// +kubebuilder:rbac:groups="",resources=persistentvolumeclaims,verbs=get;create

// Events about the GCS storage claim (KubeRay's reasons).
const (
	EventCreatedGCSStorage = "CreatedPVC"
	EventFailedGCSStorage  = "FailedToCreatePVC"
)

// errGCSStorageTaken stops the pass before pods are created: the head would keep its GCS
// state on a claim the cluster does not control.
var errGCSStorageTaken = fmt.Errorf("the GCS storage claim's name is taken by an object another controller controls: %w", errStopPass)

// reconcileGCSStorage creates the claim of a rocksdb cluster before its head pod. An
// existing claim of that name is used when the cluster controls it or nothing does (a claim
// kept by deletionPolicy Retain from an earlier cluster of the same name, or made
// beforehand by the user); one controlled by another object is reported as an ownership
// conflict, and no pod is created meanwhile.
func (r *Reconciler) reconcileGCSStorage(ctx context.Context, p *pass) error {
	desired := raypod.GCSStoragePVC(p.cluster)
	if desired == nil {
		return nil // no rocksdb, or the user's own claim
	}
	objects := r.objects(p).Uncached()
	existing := &corev1.PersistentVolumeClaim{}
	if found, err := objects.Get(ctx, key(desired), existing); err != nil {
		return err
	} else if found {
		return useClaim(p, existing)
	}
	switch res, err := objects.Create(ctx, desired); {
	case err == nil && res.Existing != nil:
		return useClaim(p, res.Existing.(*corev1.PersistentVolumeClaim))
	case err != nil:
		p.warn(EventFailedGCSStorage, actionCreate, "Failed to create PersistentVolumeClaim %s for the GCS storage: %v", desired.Name, err)
		return fmt.Errorf("creating PersistentVolumeClaim %s: %w", desired.Name, err)
	}
	size := desired.Spec.Resources.Requests[corev1.ResourceStorage]
	p.normal(EventCreatedGCSStorage, actionCreate, "Created PersistentVolumeClaim %s (%s) for the GCS storage", desired.Name, size.String())
	return nil
}

// usableClaim: the head may keep its GCS state on a claim the cluster controls or nothing
// controls.
func usableClaim(rc *rayv1.RayCluster, pvc *corev1.PersistentVolumeClaim) bool {
	return metav1.GetControllerOf(pvc) == nil || metav1.IsControlledBy(pvc, rc)
}

// useClaim goes on with an existing claim when it is usable, and otherwise reports it and
// stops the pass.
func useClaim(p *pass, pvc *corev1.PersistentVolumeClaim) error {
	if usableClaim(p.object, pvc) {
		return nil
	}
	c, _ := conflictOf(p, "PersistentVolumeClaim", pvc)
	p.conflicts = append(p.conflicts, c)
	return errGCSStorageTaken
}
