package raycluster

import (
	"context"
	"fmt"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/defaulting"
	"github.com/raygate/raygate/internal/rayspec"
	"github.com/raygate/raygate/internal/validation"
)

// +kubebuilder:rbac:groups=batch,resources=jobs,verbs=get;create

// Events of the Redis cleanup.
const (
	EventCreatedRedisCleanupJob        = "CreatedRedisCleanupJob"
	EventFailedToCreateRedisCleanupJob = "FailedToCreateRedisCleanupJob"
	EventRedisCleanupCompleted         = "RedisCleanupCompleted"
	EventRedisCleanupFailed            = "RedisCleanupFailed"
	// EventForceDeletedStuckCluster: the deletion timeout passed before the cleanup finished;
	// the finalizer was released and the keys may be left in Redis (KubeRay's reason).
	EventForceDeletedStuckCluster = "ForceDeletedStuckCluster"
	// EventRedisCleanupRefused: the spec changed after the deletion started, so no Job is
	// built from it; the finalizer is released at once (raygate's reason).
	EventRedisCleanupRefused = "RedisCleanupRefused"
)

// cleanupPoll is how often a deleted cluster looks at its cleanup Job: Jobs are not watched
// (the cache would have to hold every Job), and the wait is bounded by the deletion timeout.
const cleanupPoll = 2 * time.Second

// cleanupInput is what the cleanup of one deleted cluster decides from.
type cleanupInput struct {
	Now      time.Time
	Deadline time.Time
	// Pods are the cluster's own Ray pods still present (terminating included); HeadPods
	// counts its head pods among them.
	Pods     []corev1.Pod
	HeadPods int
	// Job is the cleanup Job, nil when there is none; Foreign: a Job by that name that the
	// cluster does not control.
	Job     *batchv1.Job
	Foreign bool
	// Unbuildable says why no Job can be built from the spec, or "".
	Unbuildable string
	// Edited says why the spec may not be the one admitted (specEditedWhileDeleting), or "":
	// no Job is built from it.
	Edited string
	// StorageNamespace names the keys to delete, for messages.
	StorageNamespace string
}

// cleanupStep is what one pass does. Exactly one of Release, DeletePods, CreateJob is set,
// or none (wait until RequeueAfter).
type cleanupStep struct {
	// Release removes the finalizer, and reports why in an event.
	Release                 bool
	EventType, Reason, Note string
	DeletePods              []corev1.Pod
	CreateJob               bool
	RequeueAfter            time.Duration
}

// planRedisCleanup follows KubeRay: stop the pods, wait until the head is gone (its GCS would
// write the keys again), run the cleanup Job, release the finalizer when it finished. Every
// path ends at the deadline: then the finalizer is released with a Warning, whatever the
// Job does, so a cluster never stays stuck in deletion.
func planRedisCleanup(in cleanupInput) cleanupStep {
	keys := fmt.Sprintf("the keys of storage namespace %q in Redis", in.StorageNamespace)
	if in.Job != nil && !in.Foreign {
		switch complete, failed := jobFinished(in.Job); {
		case complete:
			return cleanupStep{Release: true, EventType: corev1.EventTypeNormal, Reason: EventRedisCleanupCompleted,
				Note: fmt.Sprintf("Redis cleanup Job %s completed: %s are deleted", in.Job.Name, keys)}
		case failed:
			return cleanupStep{Release: true, EventType: corev1.EventTypeWarning, Reason: EventRedisCleanupFailed,
				Note: fmt.Sprintf("Redis cleanup Job %s failed; the finalizer is released, delete %s by hand (see the Job's pod log)", in.Job.Name, keys)}
		}
	}
	if in.Edited != "" && (in.Job == nil || in.Foreign) {
		// A Job built before the edit runs to its end above; none is built after it.
		return cleanupStep{Release: true, EventType: corev1.EventTypeWarning, Reason: EventRedisCleanupRefused,
			Note: fmt.Sprintf("No Redis cleanup Job is built: %s; the finalizer is released and %s may be left behind, delete them by hand", in.Edited, keys)}
	}
	left := in.Deadline.Sub(in.Now)
	if left <= 0 {
		why := "the Redis cleanup did not finish"
		switch {
		case in.Unbuildable != "":
			why = "no cleanup Job could be built (" + in.Unbuildable + ")"
		case in.Foreign:
			why = fmt.Sprintf("Job %s exists but does not belong to this cluster", in.Job.Name)
		case in.HeadPods > 0:
			why = "the head pod is still terminating"
		}
		return cleanupStep{Release: true, EventType: corev1.EventTypeWarning, Reason: EventForceDeletedStuckCluster,
			Note: fmt.Sprintf("The deletion timeout (%s) passed: %s; the finalizer is released and %s may be left behind, delete them by hand",
				rayv1.GCSFTDeletionTimeoutKey, why, keys)}
	}
	wait := min(left, cleanupPoll)
	var live []corev1.Pod
	for _, p := range in.Pods {
		if p.DeletionTimestamp.IsZero() {
			live = append(live, p)
		}
	}
	switch {
	case len(live) > 0:
		return cleanupStep{DeletePods: live, RequeueAfter: wait}
	case in.HeadPods > 0, in.Job != nil, in.Unbuildable != "":
		// The head's GCS may still write; the Job runs; or nothing can run: wait, bounded.
		return cleanupStep{RequeueAfter: wait}
	}
	return cleanupStep{CreateJob: true, RequeueAfter: wait}
}

// specEditedWhileDeleting says why the spec of a cluster being deleted may not be the one
// admitted and acted on, or "". Admission skips objects being deleted (so that finalizer
// removal never waits for a webhook), and refuses their spec edits with a webhook of its own
// (webhooks/deleting.go) that an admin may have left out; so the controller also checks,
// with what a tenant cannot write: metadata.generation, which the API server raises by one
// when the deletion starts and by one for every spec edit, against status.observedGeneration,
// the generation of the last pass that acted on the cluster (generation 1 was admitted at
// create). An admitted edit the controller had not seen when the deletion started is
// refused too: its spec was never acted on either.
func specEditedWhileDeleting(generation, observed int64) string {
	acted := max(observed, 1)
	if generation <= acted+1 {
		return ""
	}
	return fmt.Sprintf("the spec changed after the deletion started or before raygate acted on it (generation %d, last acted on %d)", generation, observed)
}

// redisCleanupWanted: the cluster keeps its GCS state in Redis and the operator cleans it up.
// (A rocksdb backend, refused at admission, may still be stored: it has nothing in Redis.)
func redisCleanupWanted(rc *rayv1.RayCluster, enabled bool) bool {
	return enabled && rayspec.GCSFaultToleranceEnabled(&rc.Spec, rc.Annotations) &&
		rayspec.GCSFaultToleranceBackend(rc.Spec.GcsFaultToleranceOptions) == rayv1.GcsFTBackendRedis
}

// reconcileGCSFaultTolerance keeps the Redis cleanup finalizer on fault-tolerant clusters and,
// once such a cluster is deleted, runs the cleanup. done: the pass is over (the cluster is
// being deleted, or the finalizer was just added and the next pass starts from it).
// The finalizer is written with a patch of metadata only, which the webhooks skip for
// objects being deleted, so its release never depends on admission.
func (r *Reconciler) reconcileGCSFaultTolerance(ctx context.Context, req reconcile.Request) (res reconcile.Result, done bool, err error) {
	rc := &rayv1.RayCluster{}
	// Every pass reads the cluster here first: read only (patchFinalizer changes a copy), so
	// no deep copy of the cached object.
	if err := r.Get(ctx, req.NamespacedName, rc, client.UnsafeDisableDeepCopy); err != nil {
		return reconcile.Result{}, false, client.IgnoreNotFound(err)
	}
	if managedByOther(rc) {
		return reconcile.Result{}, false, nil
	}
	has := controllerutil.ContainsFinalizer(rc, rayv1.GCSFTRedisCleanupFinalizer)
	wanted := redisCleanupWanted(rc, !r.DisableGCSFTRedisCleanup)
	deleting := !rc.DeletionTimestamp.IsZero()
	switch {
	case !deleting && wanted && !has:
		if err := r.patchFinalizer(ctx, rc, true); err != nil {
			return reconcile.Result{}, true, err
		}
		return reconcile.Result{RequeueAfter: requeueSoon}, true, nil
	case has && !wanted:
		// Fault tolerance was turned off, or the cleanup is: nothing will clean up, so
		// nothing may block the deletion.
		return reconcile.Result{}, deleting, r.patchFinalizer(ctx, rc, false)
	case !deleting || !has:
		return reconcile.Result{}, deleting, nil
	}
	res, err = r.cleanupRedis(ctx, rc)
	return res, true, err
}

func (r *Reconciler) patchFinalizer(ctx context.Context, rc *rayv1.RayCluster, add bool) error {
	changed := rc.DeepCopy() // rc may be the cache's object
	if add {
		controllerutil.AddFinalizer(changed, rayv1.GCSFTRedisCleanupFinalizer)
	} else {
		controllerutil.RemoveFinalizer(changed, rayv1.GCSFTRedisCleanupFinalizer)
	}
	err := r.Patch(ctx, changed, client.MergeFromWithOptions(rc, client.MergeFromWithOptimisticLock{}))
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("updating the finalizer %s: %w", rayv1.GCSFTRedisCleanupFinalizer, err)
	}
	return nil
}

// cleanupBuildable re-checks the defaulted spec as a pass does before it builds pods
// (validation skips objects being deleted, so it sees a copy without the timestamp).
func (r *Reconciler) cleanupBuildable(defaulted *rayv1.RayCluster) field.ErrorList {
	live := *defaulted
	live.DeletionTimestamp = nil
	if errs := (validation.Validator{Gates: r.Gates, Limits: r.Limits}).StoredRayCluster(&live); len(errs) > 0 {
		return errs
	}
	return buildable(&defaulted.Spec)
}

// cleanupRedis reads what the cleanup decides from, plans one step and carries it out.
func (r *Reconciler) cleanupRedis(ctx context.Context, rc *rayv1.RayCluster) (reconcile.Result, error) {
	log := ctrl.LoggerFrom(ctx)
	defaulted := rc.DeepCopy()
	defaulting.RayCluster(defaulted)
	in := cleanupInput{
		Now:              r.Now(),
		Deadline:         rc.DeletionTimestamp.Add(rayspec.GCSFTDeletionTimeout(rc.Annotations)),
		StorageNamespace: rayspec.ExternalStorageNamespace(rc),
	}
	in.Edited = specEditedWhileDeleting(rc.Generation, rc.Status.ObservedGeneration)
	if errs := r.cleanupBuildable(defaulted); len(errs) > 0 {
		in.Unbuildable = errs.ToAggregate().Error()
	}
	pods, err := r.listPods(ctx, rc)
	if err != nil {
		return reconcile.Result{}, err
	}
	for _, p := range pods {
		if !metav1.IsControlledBy(&p, rc) {
			continue // the cleanup Job's pod, or a pod raygate does not control
		}
		in.Pods = append(in.Pods, p)
		if p.Labels[rayv1.NodeTypeLabelKey] == string(rayv1.HeadNode) {
			in.HeadPods++
		}
	}
	job := &batchv1.Job{}
	switch err := r.getUncached(ctx, client.ObjectKey{Namespace: rc.Namespace, Name: rayspec.RedisCleanupJobName(rc.Name)}, job); {
	case err == nil:
		in.Job, in.Foreign = job, !metav1.IsControlledBy(job, rc)
	case !apierrors.IsNotFound(err):
		return reconcile.Result{}, fmt.Errorf("reading the Redis cleanup Job: %w", err)
	}

	step := planRedisCleanup(in) // pure
	switch {
	case step.Release:
		if err := r.patchFinalizer(ctx, rc, false); err != nil {
			return reconcile.Result{}, err
		}
		log.Info("released the Redis cleanup finalizer", "reason", step.Reason, "storageNamespace", in.StorageNamespace)
		r.Recorder.Eventf(rc, nil, step.EventType, step.Reason, actionDelete, "%s", cutBytes(step.Note, maxEventNote))
		return reconcile.Result{}, nil
	case len(step.DeletePods) > 0:
		for i := range step.DeletePods {
			p := &step.DeletePods[i]
			if err := r.Delete(ctx, p, client.Preconditions{UID: &p.UID}); err != nil && !apierrors.IsNotFound(err) {
				return reconcile.Result{}, fmt.Errorf("deleting pod %s before the Redis cleanup: %w", p.Name, err)
			}
		}
		log.Info("deleted the pods of a fault-tolerant cluster before its Redis cleanup", "pods", len(step.DeletePods))
	case step.CreateJob:
		j := redisCleanupJob(defaulted, r.Pods)
		if err := r.Create(ctx, j); err != nil && !apierrors.IsAlreadyExists(err) {
			r.Recorder.Eventf(rc, nil, corev1.EventTypeWarning, EventFailedToCreateRedisCleanupJob, actionCreate,
				"%s", cutBytes(fmt.Sprintf("Failed to create the Redis cleanup Job %s: %v", j.Name, err), maxEventNote))
			return reconcile.Result{RequeueAfter: step.RequeueAfter}, nil
		} else if err == nil {
			r.Recorder.Eventf(rc, j, corev1.EventTypeNormal, EventCreatedRedisCleanupJob, actionCreate,
				"Created the Redis cleanup Job %s for storage namespace %q", j.Name, in.StorageNamespace)
		}
	}
	return reconcile.Result{RequeueAfter: step.RequeueAfter}, nil
}
