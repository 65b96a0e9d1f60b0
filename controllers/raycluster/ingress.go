package raycluster

import (
	"context"
	"maps"

	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
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

// ingressKind names the dashboard Ingress in events and errors.
var ingressKind = ownedKind{kind: "Ingress", noun: "ingress",
	created: EventCreatedIngress, updated: EventUpdatedIngress, deleted: EventDeletedIngress,
	createFailed: EventFailedIngress, changeFailed: EventFailedIngressUpdate}

// decideIngress is the change to the dashboard Ingress: desired is nil when the cluster does
// not want one, existing nil when there is none. controlled says the cluster is the existing
// object's controller.
func decideIngress(desired, existing *networkingv1.Ingress, controlled bool) change {
	switch {
	case existing == nil && desired == nil:
		return change{}
	case existing == nil:
		return change{op: changeCreate, object: desired}
	case !controlled && desired == nil:
		return change{}
	case !controlled:
		return change{op: changeConflict, object: existing}
	case desired == nil:
		return change{op: changeDelete, object: existing, why: "enableIngress is no longer true"}
	}
	if u := mergeIngress(existing, desired); u != nil {
		return change{op: changeUpdate, object: u}
	}
	return change{}
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
	existing, err := r.readIngress(ctx, p.cluster)
	if err != nil {
		return err
	}
	return r.applyChange(ctx, p, ingressKind, planIngress(&p.observation, existing), &networkingv1.Ingress{})
}

// readIngress reads the cluster's dashboard Ingress from the cache (nil: none).
func (r *Reconciler) readIngress(ctx context.Context, rc *rayv1.RayCluster) (*networkingv1.Ingress, error) {
	got := &networkingv1.Ingress{}
	switch err := r.Get(ctx, client.ObjectKey{Namespace: rc.Namespace, Name: raypod.HeadIngressName(rc.Name)}, got); {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, err
	}
	return got, nil
}

// planIngress is the change to the dashboard Ingress the cluster asks for.
func planIngress(obs *observation, existing *networkingv1.Ingress) change {
	var desired *networkingv1.Ingress
	if raypod.WantsIngress(obs.cluster) {
		desired = raypod.HeadIngress(obs.cluster)
	}
	return decideIngress(desired, existing, existing != nil && metav1.IsControlledBy(existing, obs.object))
}
