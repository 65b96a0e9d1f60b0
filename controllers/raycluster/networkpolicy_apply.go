package raycluster

import (
	"context"
	"fmt"
	"maps"
	"slices"

	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/owned/ownerref"
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
var networkPolicyKind = ownedKind{noun: "NetworkPolicy", named: true,
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
	listed := list.Items
	for _, d := range desired {
		if slices.ContainsFunc(listed, func(np networkingv1.NetworkPolicy) bool { return np.Name == d.Name }) {
			continue
		}
		// The list holds only labelled policies: a name found taken is read from the API.
		got := &networkingv1.NetworkPolicy{}
		if found, err := r.objects(p).Get(ctx, key(d), got); err != nil {
			return err
		} else if found {
			listed = append(listed, *got)
		}
	}
	for _, c := range planNetworkPolicies(p.object, desired, listed) {
		if _, err := r.applyChange(ctx, p, networkPolicyKind, c); err != nil {
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
		if c := changeOf(ownerref.Decide(d, e, e != nil && ownerref.ControlledBy(e, rc), mergeNetworkPolicy)); c.op != ownerref.Keep {
			changes = append(changes, c)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(existing)) {
		if e := existing[name]; !wanted[name] {
			if c := changeOf(ownerref.Decide(nil, e, ownerref.ControlledBy(e, rc), mergeNetworkPolicy)); c.op == ownerref.Delete {
				c.why = "the cluster no longer asks for it"
				changes = append(changes, c)
			}
		}
	}
	return changes
}

// mergeNetworkPolicy is the existing policy with raygate's spec and labels, or nil when it
// already has them (it is never recreated). Labels others added are kept.
func mergeNetworkPolicy(existing, desired *networkingv1.NetworkPolicy) (*networkingv1.NetworkPolicy, bool) {
	if ownerref.HasEntries(existing.Labels, desired.Labels) && equality.Semantic.DeepEqual(existing.Spec, desired.Spec) {
		return nil, false
	}
	u := existing.DeepCopy()
	u.Spec = *desired.Spec.DeepCopy()
	if u.Labels == nil {
		u.Labels = map[string]string{}
	}
	maps.Copy(u.Labels, desired.Labels)
	return u, false
}
