package raycluster

import (
	"context"
	"errors"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/utils/ptr"

	"github.com/raygate/raygate/internal/batchscheduler"
)

// PodGroups of the batch schedulers raygate integrates with (--batch-scheduler). RBAC
// markers are static, so both groups are granted whichever scheduler runs (or none).
// +kubebuilder:rbac:groups=scheduling.volcano.sh,resources=podgroups,verbs=get;list;watch;create;update
// +kubebuilder:rbac:groups=scheduling.x-k8s.io,resources=podgroups,verbs=get;list;watch;create;update

// Events about a cluster's PodGroup.
const (
	EventCreatedPodGroup    = "CreatedPodGroup"
	EventUpdatedPodGroup    = "UpdatedPodGroup"
	EventFailedSyncPodGroup = "FailedToSyncPodGroup"
	// reasonFailedSyncPodGroup is the ReplicaFailure reason while the PodGroup cannot be
	// created: no pods are created without it.
	reasonFailedSyncPodGroup = "FailedToSyncPodGroup"
)

// syncBatchScheduling creates or updates the cluster's PodGroup before its pods are
// created, as KubeRay does; a suspended cluster is left alone (its pods are being deleted).
// Without --batch-scheduler it does nothing.
func (r *Reconciler) syncBatchScheduling(ctx context.Context, p *pass) error {
	if r.BatchScheduler == nil || ptr.Deref(p.cluster.Spec.Suspend, false) {
		return nil
	}
	res, err := r.BatchScheduler.Sync(ctx, p.cluster)
	kind := r.BatchScheduler.Scheduler.PodGroupKind()
	switch {
	case apierrors.IsConflict(err):
		return err // the cache was behind (the scheduler wrote the PodGroup): retried, not a failure
	case err != nil && errors.Is(err, batchscheduler.ErrNotInstalled):
		p.warn(EventFailedSyncPodGroup, actionCreate, "No pods are created: %v", err)
		return failure(reasonFailedSyncPodGroup, "%s", err.Error())
	case err != nil:
		p.warn(EventFailedSyncPodGroup, actionCreate, "Failed to create or update the PodGroup; no pods are created until it exists: %v", err)
		return failure(reasonFailedSyncPodGroup, "creating or updating the PodGroup: %w", err)
	case res.Action == batchscheduler.Created:
		p.normal(EventCreatedPodGroup, actionCreate, "Created PodGroup %s (%s) for batch scheduler %s", res.Name, kind.Group, r.BatchScheduler.Scheduler.Name())
	case res.Action == batchscheduler.Updated:
		p.normal(EventUpdatedPodGroup, actionUpdate, "Updated PodGroup %s (%s) to the cluster's size", res.Name, kind.Group)
	}
	return nil
}
