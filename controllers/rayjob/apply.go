package rayjob

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/controllers/rayjob/plan"
	"github.com/raygate/raygate/internal/owned"
	"github.com/raygate/raygate/internal/owned/ownerref"
	"github.com/raygate/raygate/internal/rayjob"
	"github.com/raygate/raygate/internal/raypod"
	"github.com/raygate/raygate/internal/rayspec"
)

// carryOut carries out a pass's effects: the actions in order, the first that fails ending
// the pass (announced with the plan's failure reason), each that succeeds announced with its
// Done event; then the requests to the pool. gone reports that the RayJob is gone, or going
// with nothing left to record (its finalizer removed).
func (r *Reconciler) carryOut(ctx context.Context, job *rayv1.RayJob, obs observation, e plan.Effects) (gone bool, err error) {
	log := ctrlLog(ctx)
	for _, a := range e.Actions {
		log.V(1).Info("applying", "action", a.String())
		did, err := r.applyOne(ctx, job, a)
		if err != nil {
			if reason := plan.FailureReason(a); reason != "" {
				r.recorder.Eventf(job, nil, corev1.EventTypeWarning, reason, actionVerb(a), "%s failed: %v", a, err)
			}
			return false, fmt.Errorf("%s: %w", a, err)
		}
		if ev := plan.Done(a); did && !ev.IsZero() {
			r.emit(job, ev)
		}
		if _, removed := a.(plan.RemoveFinalizer); removed {
			gone = true
		}
	}
	for _, q := range e.Requests {
		log.V(1).Info("asking the Jobs API pool", "request", q.String())
		r.request(job, obs.target, q)
	}
	return gone, nil
}

// applyOne carries out one action; did is false when there was nothing to do after all (an
// object made by an earlier pass that the cache did not show yet).
func (r *Reconciler) applyOne(ctx context.Context, job *rayv1.RayJob, a plan.Action) (did bool, err error) {
	objects := r.objects(job)
	switch a := a.(type) {
	case plan.AddFinalizer:
		return true, r.setFinalizer(ctx, job, true)
	case plan.RemoveFinalizer:
		return true, r.setFinalizer(ctx, job, false)
	case plan.CreateCluster:
		return r.create(ctx, objects, a.Cluster)
	case plan.CreateSubmitter:
		return r.create(ctx, objects, a.Job)
	case plan.DeleteCluster:
		target := &rayv1.RayCluster{ObjectMeta: metav1.ObjectMeta{Namespace: a.Cluster.Namespace, Name: a.Cluster.Name, UID: a.Cluster.UID}}
		return true, objects.Delete(ctx, target, client.PropagationPolicy(metav1.DeletePropagationBackground))
	case plan.DeleteSubmitter:
		return true, objects.Delete(ctx, a.Job, client.PropagationPolicy(metav1.DeletePropagationBackground))
	case plan.SuspendWorkers:
		rc := a.Cluster
		for i := range rc.Spec.WorkerGroupSpecs {
			rc.Spec.WorkerGroupSpecs[i].Suspend = ptr.To(true)
		}
		// An update: the resourceVersion read makes it fail if the cluster changed since.
		return true, objects.Update(ctx, rc)
	case plan.PointJobService:
		return r.pointJobService(ctx, objects, job, a)
	case plan.DeleteRayJob:
		uid := job.UID
		return true, r.client.Delete(ctx, &rayv1.RayJob{ObjectMeta: metav1.ObjectMeta{Namespace: job.Namespace, Name: job.Name}},
			client.Preconditions{UID: &uid}, client.PropagationPolicy(metav1.DeletePropagationBackground))
	case plan.BatchSchedulerHook:
		// No batch scheduler hook for RayJobs yet (Settings.BatchScheduler is off): the
		// job's RayCluster gets its scheduler from the RayCluster controller.
		return false, nil
	}
	return false, fmt.Errorf("unknown action %T", a)
}

// create creates an object the RayJob controls; one of the RayJob's already there (made by
// an earlier pass the cache did not show yet) is fine, anyone else's is an error.
func (r *Reconciler) create(ctx context.Context, objects owned.Client, obj client.Object) (bool, error) {
	res, err := objects.Create(ctx, obj)
	switch {
	case err != nil:
		return false, err
	case res.Conflict != nil:
		return false, fmt.Errorf("%s", res.Conflict)
	}
	return res.Existing == nil, nil
}

// setFinalizer adds or removes the RayJob's finalizer with a patch that fails if the RayJob
// changed since it was read.
func (r *Reconciler) setFinalizer(ctx context.Context, job *rayv1.RayJob, add bool) error {
	patched := job.DeepCopy()
	has := slices.Contains(patched.Finalizers, plan.StopJobFinalizer)
	switch {
	case add && !has:
		patched.Finalizers = append(patched.Finalizers, plan.StopJobFinalizer)
	case !add && has:
		patched.Finalizers = slices.DeleteFunc(patched.Finalizers, func(f string) bool { return f == plan.StopJobFinalizer })
	default:
		return nil
	}
	if err := r.client.Patch(ctx, patched, client.MergeFromWithOptions(job, client.MergeFromWithOptimisticLock{})); err != nil {
		return err
	}
	job.Finalizers, job.ResourceVersion = patched.Finalizers, patched.ResourceVersion
	return nil
}

// jobServiceLabels name the RayJob on `<job>-head-svc`, as KubeRay labels it, plus the label
// raygate's cache selects its objects on.
func jobServiceLabels(job *rayv1.RayJob) map[string]string {
	return map[string]string{
		rayv1.OriginatedFromCRNameLabelKey: job.Name,
		rayv1.OriginatedFromCRDLabelKey:    rayv1.RayJobKind,
		rayv1.NodeTypeLabelKey:             string(rayv1.HeadNode),
		rayv1.IdentifierLabelKey:           rayspec.HeadIdentifier(job.Name),
		rayv1.KubernetesCreatedByLabelKey:  rayv1.ComponentName,
	}
}

// JobService is `<job>-head-svc`: the cluster's head Service (raypod.HeadService: its
// selector, ports, type and headGroupSpec.headService) placed under the RayJob.
func JobService(job *rayv1.RayJob, rc *rayv1.RayCluster) *corev1.Service {
	return raypod.PlacedHeadService(rc, raypod.Placement{
		Name:   rayjob.HeadServiceName(job.Name),
		Labels: jobServiceLabels(job),
		Owner:  *metav1.NewControllerRef(job, rayv1.GroupVersion.WithKind(rayv1.RayJobKind)),
	})
}

// pointJobService creates `<job>-head-svc`, or points the one the RayJob controls at the
// cluster's head (a change of clusterIP kind cannot be an update: that one is deleted, and
// the next pass creates it).
func (r *Reconciler) pointJobService(ctx context.Context, objects owned.Client, job *rayv1.RayJob, a plan.PointJobService) (bool, error) {
	desired := JobService(job, a.Cluster)
	if a.Existing == nil {
		return r.create(ctx, objects, desired)
	}
	if !ownerref.ControlledBy(a.Existing, job) {
		return false, fmt.Errorf("service %s is not controlled by this RayJob", a.Existing.Name)
	}
	updated, recreate := raypod.MergeService(a.Existing, desired)
	switch {
	case recreate:
		return false, objects.Delete(ctx, a.Existing)
	case updated == nil:
		return false, nil
	}
	return true, objects.Update(ctx, updated)
}

// actionVerb is the event action of an action's failure.
func actionVerb(a plan.Action) string {
	switch a.(type) {
	case plan.CreateCluster, plan.CreateSubmitter:
		return plan.ActionCreate
	case plan.DeleteCluster, plan.DeleteSubmitter, plan.DeleteRayJob:
		return plan.ActionDelete
	case plan.BatchSchedulerHook:
		return plan.ActionCleanup
	}
	return plan.ActionUpdate
}
