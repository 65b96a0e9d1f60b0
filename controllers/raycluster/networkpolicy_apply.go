package raycluster

import (
	"context"
	"fmt"
	"maps"
	"slices"

	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/equality"
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

// networkPolicyKind names NetworkPolicies in events and errors.
var networkPolicyKind = ownedKind{kind: "NetworkPolicy", noun: "NetworkPolicy", named: true,
	created: EventCreatedNetworkPolicy, updated: EventUpdatedNetworkPolicy, deleted: EventDeletedNetworkPolicy,
	createFailed: EventFailedNetworkPolicy, changeFailed: EventFailedNetworkPolicy}

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
	for _, c := range planNetworkPolicies(p.object, desired, list.Items) {
		if err := r.applyChange(ctx, p, networkPolicyKind, c, &networkingv1.NetworkPolicy{}); err != nil {
			return err
		}
	}
	return nil
}

// planNetworkPolicies are the changes that bring the policies listed (existing) to those
// desired for the cluster rc: the desired ones in order, then the deletions of the ones the
// cluster controls and no longer asks for, by name.
func planNetworkPolicies(rc *rayv1.RayCluster, desired []*networkingv1.NetworkPolicy, listed []networkingv1.NetworkPolicy) []change {
	existing := map[string]*networkingv1.NetworkPolicy{}
	for i := range listed {
		existing[listed[i].Name] = &listed[i]
	}
	var changes []change
	wanted := map[string]bool{}
	for _, d := range desired {
		wanted[d.Name] = true
		e := existing[d.Name]
		switch {
		case e == nil:
			changes = append(changes, change{op: changeCreate, object: d})
		case !metav1.IsControlledBy(e, rc):
			changes = append(changes, change{op: changeConflict, object: e})
		default:
			if u := mergeNetworkPolicy(e, d); u != nil {
				changes = append(changes, change{op: changeUpdate, object: u})
			}
		}
	}
	for _, name := range slices.Sorted(maps.Keys(existing)) {
		if e := existing[name]; !wanted[name] && metav1.IsControlledBy(e, rc) {
			changes = append(changes, change{op: changeDelete, object: e, why: "the cluster no longer asks for it"})
		}
	}
	return changes
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
