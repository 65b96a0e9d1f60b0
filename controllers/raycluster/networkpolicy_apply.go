package raycluster

import (
	"context"
	"fmt"
	"maps"
	"slices"

	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
)

// +kubebuilder:rbac:groups=networking.k8s.io,resources=networkpolicies,verbs=get;list;watch;create;update;delete

// Events about the cluster's NetworkPolicies (KubeRay's reasons), each related to its
// policy so the events of several policies are not merged into one series.
const (
	EventCreatedNetworkPolicy = "CreatedNetworkPolicy"
	EventUpdatedNetworkPolicy = "UpdatedNetworkPolicy"
	EventDeletedNetworkPolicy = "DeletedNetworkPolicy"
	EventFailedNetworkPolicy  = "FailedToReconcileNetworkPolicy"
)

// reconcileNetworkPolicies brings the cluster's NetworkPolicies to spec.networkPolicy: it
// creates the missing ones, corrects changed ones, and deletes those the spec no longer asks
// for (a removed worker group, or networkPolicy removed altogether). It runs before pods are
// created, so new pods are isolated from their start. A policy of that name the cluster
// does not control is reported and left alone.
func (r *Reconciler) reconcileNetworkPolicies(ctx context.Context, p *pass) error {
	desired := desiredNetworkPolicies(p.cluster, r.OperatorNamespace)
	var list networkingv1.NetworkPolicyList
	if err := r.List(ctx, &list, client.InNamespace(p.cluster.Namespace), client.MatchingLabels{rayv1.ClusterLabelKey: p.cluster.Name}); err != nil {
		return fmt.Errorf("listing NetworkPolicies: %w", err)
	}
	existing := map[string]*networkingv1.NetworkPolicy{}
	for i := range list.Items {
		existing[list.Items[i].Name] = &list.Items[i]
	}
	wanted := map[string]bool{}
	for _, d := range desired {
		wanted[d.Name] = true
		if err := r.applyNetworkPolicy(ctx, p, d, existing[d.Name]); err != nil {
			return err
		}
	}
	for _, name := range slices.Sorted(maps.Keys(existing)) {
		e := existing[name]
		if wanted[name] || !metav1.IsControlledBy(e, p.object) {
			continue
		}
		if err := r.Delete(ctx, e, client.Preconditions{UID: &e.UID}); err != nil && !apierrors.IsNotFound(err) {
			p.warnAbout(e, EventFailedNetworkPolicy, actionDelete, "Failed to delete NetworkPolicy %s: %v", name, err)
			return fmt.Errorf("deleting NetworkPolicy %s: %w", name, err)
		}
		p.normalAbout(e, EventDeletedNetworkPolicy, actionDelete, "Deleted NetworkPolicy %s: the cluster no longer asks for it", name)
	}
	return nil
}

func (r *Reconciler) applyNetworkPolicy(ctx context.Context, p *pass, desired, existing *networkingv1.NetworkPolicy) error {
	if existing == nil {
		err := r.Create(ctx, desired)
		switch {
		case apierrors.IsAlreadyExists(err):
			return r.reportTaken(ctx, p, "NetworkPolicy", desired, &networkingv1.NetworkPolicy{})
		case err != nil:
			p.warnAbout(desired, EventFailedNetworkPolicy, actionCreate, "Failed to create NetworkPolicy %s: %v", desired.Name, err)
			return fmt.Errorf("creating NetworkPolicy %s: %w", desired.Name, err)
		}
		p.normalAbout(desired, EventCreatedNetworkPolicy, actionCreate, "Created NetworkPolicy %s", desired.Name)
		return nil
	}
	if c, foreign := conflictOf(p, "NetworkPolicy", existing); foreign {
		p.conflicts = append(p.conflicts, c)
		return nil
	}
	updated := mergeNetworkPolicy(existing, desired)
	if updated == nil {
		return nil
	}
	if err := r.Update(ctx, updated); err != nil {
		p.warnAbout(updated, EventFailedNetworkPolicy, actionUpdate, "Failed to update NetworkPolicy %s: %v", desired.Name, err)
		return fmt.Errorf("updating NetworkPolicy %s: %w", desired.Name, err)
	}
	p.normalAbout(updated, EventUpdatedNetworkPolicy, actionUpdate, "Updated NetworkPolicy %s", desired.Name)
	return nil
}

// mergeNetworkPolicy is the existing policy with raygate's spec and labels, or nil when it
// already has them. Labels others added are kept.
func mergeNetworkPolicy(existing, desired *networkingv1.NetworkPolicy) *networkingv1.NetworkPolicy {
	labelsOK := true
	for k, v := range desired.Labels {
		if existing.Labels[k] != v {
			labelsOK = false
		}
	}
	if labelsOK && equality.Semantic.DeepEqual(existing.Spec, desired.Spec) {
		return nil
	}
	u := existing.DeepCopy()
	u.Spec = *desired.Spec.DeepCopy()
	if u.Labels == nil {
		u.Labels = map[string]string{}
	}
	maps.Copy(u.Labels, desired.Labels)
	return u
}
