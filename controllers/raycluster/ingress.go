package raycluster

import (
	"context"
	"fmt"
	"maps"

	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/raygate/raygate/internal/raypod"
)

// +kubebuilder:rbac:groups=networking.k8s.io,resources=ingresses,verbs=get;list;watch;create;update;delete

// Events about the dashboard Ingress (KubeRay's reasons for create and failure).
const (
	EventCreatedIngress = "CreatedIngress"
	EventUpdatedIngress = "UpdatedIngress"
	EventDeletedIngress = "DeletedIngress"
	EventFailedIngress  = "FailedToCreateIngress"
	// EventFailedIngressUpdate is a failed update or delete of the Ingress.
	EventFailedIngressUpdate = "FailedToReconcileIngress"
)

// The dashboard Ingress `<cluster>-head-ingress` exists while headGroupSpec.enableIngress is
// true, as under KubeRay, and goes with the cluster (owner reference). Unlike KubeRay, which
// creates it once and never looks at it again, raygate keeps it in line with the spec and the
// cluster's annotations, and deletes it when enableIngress is turned off.

// decideIngress is the step for the dashboard Ingress: desired is nil when the cluster does
// not want one, existing nil when there is none. controlled says the cluster is the existing
// object's controller. updated is the object to write for serviceUpdate.
func decideIngress(desired, existing *networkingv1.Ingress, controlled bool) (step serviceStep, updated *networkingv1.Ingress) {
	switch {
	case existing == nil && desired == nil:
		return serviceKeep, nil
	case existing == nil:
		return serviceCreate, nil
	case !controlled && desired == nil:
		return serviceKeep, nil
	case !controlled:
		return serviceConflict, nil
	case desired == nil:
		return serviceDelete, nil
	}
	if u := mergeIngress(existing, desired); u != nil {
		return serviceUpdate, u
	}
	return serviceKeep, nil
}

// mergeIngress returns the existing Ingress with raygate's labels, annotations and spec, or
// nil when nothing differs. Annotations raygate copied from the cluster earlier and the
// cluster no longer has are removed; those others added (an Ingress controller's) are kept.
// The status is the Ingress controller's. Without a class annotation on the cluster the ingressClassName
// the API server's DefaultIngressClass admission set on create is kept.
func mergeIngress(existing, desired *networkingv1.Ingress) *networkingv1.Ingress {
	u := existing.DeepCopy()
	if u.Labels == nil {
		u.Labels = map[string]string{}
	}
	maps.Copy(u.Labels, desired.Labels)
	for _, k := range raypod.CopiedAnnotations(existing) {
		if _, still := desired.Annotations[k]; !still {
			delete(u.Annotations, k)
		}
	}
	if u.Annotations == nil {
		u.Annotations = map[string]string{}
	}
	maps.Copy(u.Annotations, desired.Annotations)
	u.Spec = *desired.Spec.DeepCopy()
	if u.Spec.IngressClassName == nil {
		u.Spec.IngressClassName = existing.Spec.IngressClassName
	}
	if equality.Semantic.DeepEqual(existing, u) {
		return nil
	}
	return u
}

// reconcileIngress creates, corrects or deletes the cluster's dashboard Ingress.
func (r *Reconciler) reconcileIngress(ctx context.Context, p *pass) error {
	name := raypod.HeadIngressName(p.cluster.Name)
	var desired *networkingv1.Ingress
	if raypod.WantsIngress(p.cluster) {
		desired = raypod.HeadIngress(p.cluster)
	}
	var existing *networkingv1.Ingress
	got := &networkingv1.Ingress{}
	switch err := r.Get(ctx, client.ObjectKey{Namespace: p.cluster.Namespace, Name: name}, got); {
	case err == nil:
		existing = got
	case !apierrors.IsNotFound(err):
		return err
	}
	step, updated := decideIngress(desired, existing, existing != nil && metav1.IsControlledBy(existing, p.object))
	switch step {
	case serviceCreate:
		err := r.Create(ctx, desired)
		switch {
		case apierrors.IsAlreadyExists(err):
			return r.reportTaken(ctx, p, "Ingress", desired, &networkingv1.Ingress{})
		case err != nil:
			p.warnAbout(desired, EventFailedIngress, actionCreate, "Failed to create ingress %s: %v", name, err)
			return fmt.Errorf("creating ingress: %w", err)
		}
		p.normalAbout(desired, EventCreatedIngress, actionCreate, "Created ingress %s", name)
	case serviceUpdate:
		if err := r.Update(ctx, updated); err != nil {
			p.warnAbout(updated, EventFailedIngressUpdate, actionUpdate, "Failed to update ingress %s: %v", name, err)
			return fmt.Errorf("updating ingress: %w", err)
		}
		p.normalAbout(updated, EventUpdatedIngress, actionUpdate, "Updated ingress %s", name)
	case serviceDelete:
		if err := r.Delete(ctx, existing, client.Preconditions{UID: &existing.UID}); err != nil && !apierrors.IsNotFound(err) {
			p.warnAbout(existing, EventFailedIngressUpdate, actionDelete, "Failed to delete ingress %s: %v", name, err)
			return fmt.Errorf("deleting ingress: %w", err)
		}
		p.normalAbout(existing, EventDeletedIngress, actionDelete, "Deleted ingress %s: enableIngress is no longer true", name)
	case serviceConflict:
		c, _ := conflictOf(p, "Ingress", existing)
		p.conflicts = append(p.conflicts, c)
	}
	return nil
}
