package raycluster

import (
	"context"
	"maps"
	"strings"

	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/raygate/raygate/internal/owned"
	"github.com/raygate/raygate/internal/owned/ownerref"
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
	// EventIngressNotAllowed: the admin's Ingress policy refuses the Ingress (or, where
	// OpenShift's Route API is served, the Route) the cluster asks for; none is created, and
	// one created earlier is deleted.
	EventIngressNotAllowed = "IngressNotAllowed"
)

// The dashboard Ingress `<cluster>-head-ingress` exists while headGroupSpec.enableIngress is
// true, as under KubeRay, and goes with the cluster (owner reference). Unlike KubeRay, which
// creates it once and never looks at it again, raygate keeps it in line with the spec and the
// cluster's annotations, and deletes it when enableIngress is turned off.

// ingressKind names the dashboard Ingress in events and errors.
var ingressKind = ownedKind{noun: "ingress",
	created: EventCreatedIngress, updated: EventUpdatedIngress, deleted: EventDeletedIngress,
	createFailed: EventFailedIngress, changeFailed: EventFailedIngressUpdate}

// decideIngress is the change to the dashboard Ingress: desired is nil when the cluster does
// not want one, existing nil when there is none. controlled says the cluster is the existing
// object's controller.
func decideIngress(desired, existing *networkingv1.Ingress, controlled bool) change {
	c := changeOf(ownerref.Decide(desired, existing, controlled, mergeIngress))
	if c.op == ownerref.Delete {
		c.why = "enableIngress is no longer true"
	}
	return c
}

// mergeIngress returns the existing Ingress with raygate's labels, annotations and spec, or
// nil when nothing differs (it is never recreated). Annotations raygate copied from the cluster earlier and the
// cluster no longer has are removed; those others added (an Ingress controller's) are kept.
// The status is the Ingress controller's. Without a class annotation on the cluster the ingressClassName
// the API server's DefaultIngressClass admission set on create is kept.
func mergeIngress(existing, desired *networkingv1.Ingress) (*networkingv1.Ingress, bool) {
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
		return nil, false
	}
	return u, false
}

// reconcileIngress creates, corrects or deletes the cluster's dashboard Ingress. One the
// admin's policy refuses is neither created nor kept: admission refuses such a spec, but a
// cluster stored before the policy changed, or admitted while the webhook was down, must not
// get raygate to publish it.
func (r *Reconciler) reconcileIngress(ctx context.Context, p *pass) error {
	existing, err := owned.Read(ctx, r.objects(p), client.ObjectKey{Namespace: p.cluster.Namespace, Name: raypod.HeadIngressName(p.cluster.Name)}, &networkingv1.Ingress{})
	if err != nil {
		return err
	}
	c, refusals := planIngress(&p.observation, existing, r.Ingress)
	if len(refusals) > 0 {
		p.warn(EventIngressNotAllowed, actionCreate, "Not creating ingress %s: the admin's Ingress policy refuses it: %s",
			raypod.HeadIngressName(p.cluster.Name), strings.Join(refusals, "; "))
	}
	_, err = r.applyChange(ctx, p, ingressKind, c)
	return err
}

// planIngress is the change to the dashboard Ingress the cluster asks for under the admin's
// policy, and why the policy refuses the Ingress the cluster asks for (nil: it does not, or
// none is asked for). A refused Ingress is not wanted: an existing one is deleted.
func planIngress(obs *observation, existing *networkingv1.Ingress, policy raypod.IngressPolicy) (change, []string) {
	var desired *networkingv1.Ingress
	var refusals []string
	if raypod.WantsIngress(obs.cluster) {
		desired = raypod.HeadIngress(obs.cluster, policy)
		if refusals = policy.Refusals(desired); len(refusals) > 0 {
			desired = nil
		}
	}
	c := decideIngress(desired, existing, existing != nil && ownerref.ControlledBy(existing, obs.object))
	if c.op == ownerref.Delete && len(refusals) > 0 {
		c.why = "the admin's Ingress policy refuses it"
	}
	return c, refusals
}
