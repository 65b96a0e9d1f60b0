package raycronjob

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/defaulting"
	"github.com/raygate/raygate/internal/owned"
	"github.com/raygate/raygate/internal/raycronjob"
)

// Event reasons. InvalidRayCronJobSpec and SuspendedRayCronJob are KubeRay's.
const (
	ReasonInvalidSpec  = "InvalidRayCronJobSpec"
	ReasonSuspended    = "SuspendedRayCronJob"
	ReasonCreated      = "CreatedRayJob"
	ReasonNameTaken    = "RayJobNameTaken"
	ReasonMissedRuns   = "MissedRuns"
	actionValidate     = "Validate"
	actionSuspend      = "Suspend"
	actionCreateRayJob = "CreateRayJob"
)

// Reconcile is one pass: read, admit, decide, create the run due (if any), record.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	cj := &rayv1.RayCronJob{}
	if err := r.statuses.Get(ctx, r.client, r.apiReader, req.NamespacedName, cj); err != nil {
		if apierrors.IsNotFound(err) {
			r.statuses.Forget(req.NamespacedName)
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, err
	}
	if cj.DeletionTimestamp != nil {
		return ctrl.Result{}, nil
	}
	log := ctrl.LoggerFrom(ctx)
	defaulted := cj.DeepCopy()
	defaulting.RayCronJob(defaulted)
	if errs := r.validator.StoredRayCronJob(defaulted); len(errs) > 0 {
		// As KubeRay: nothing is created until the spec is fixed (a spec change starts a pass).
		r.Recorder.Eventf(cj, nil, corev1.EventTypeWarning, ReasonInvalidSpec, actionValidate, "%s", errs.ToAggregate().Error())
		return ctrl.Result{}, nil
	}
	sched, err := raycronjob.Parse(&cj.Spec, r.Location)
	if err != nil { // validated above: only a time zone database without the zone gets here
		r.Recorder.Eventf(cj, nil, corev1.EventTypeWarning, ReasonInvalidSpec, actionValidate, "%v", err)
		return ctrl.Result{}, nil
	}
	now := r.Now()
	in := Input{Schedule: sched, Created: cj.CreationTimestamp.Time, Suspended: cj.Spec.Suspend != nil && *cj.Spec.Suspend, Now: now}
	if t := cj.Status.LastScheduleTime; t != nil {
		in.LastScheduled = &t.Time
	}
	d := Decide(in)
	if in.Suspended {
		log.V(1).Info("suspended: no new RayJobs")
		r.Recorder.Eventf(cj, nil, corev1.EventTypeNormal, ReasonSuspended, actionSuspend, "RayCronJob suspended, no new RayJobs will be created")
		return ctrl.Result{}, nil
	}
	if !d.Due() {
		log.V(1).Info("no run due", "next", d.Next)
		return ctrl.Result{RequeueAfter: d.RequeueAfter(now)}, nil
	}
	created, err := r.createRun(ctx, cj, d.Run)
	if err != nil {
		return ctrl.Result{}, err
	}
	status := *cj.Status.DeepCopy()
	status.LastScheduleTime = &metav1.Time{Time: d.Run}
	if _, err := r.statuses.Write(ctx, r.client, cj, status, now, nil); err != nil {
		return ctrl.Result{}, err
	}
	// Events after the write, so a failed write (retried) announces nothing twice.
	name := raycronjob.RunName(cj.Name, d.Run)
	if d.Skipped {
		r.Recorder.Eventf(cj, nil, corev1.EventTypeWarning, ReasonMissedRuns, actionCreateRayJob,
			"more than %d runs were missed; only the most recent, scheduled at %s, is created", MaxMissedRuns, d.Run.UTC().Format(time.RFC3339))
	}
	switch created {
	case runCreated:
		log.Info("created RayJob", "rayJob", name, "scheduled", d.Run, "next", d.Next)
		r.Recorder.Eventf(cj, nil, corev1.EventTypeNormal, ReasonCreated, actionCreateRayJob, "Created RayJob %s for the run scheduled at %s", name, d.Run.UTC().Format(time.RFC3339))
	case runFound:
		log.Info("RayJob of this run already exists", "rayJob", name, "scheduled", d.Run)
	case runNameTaken:
		r.Recorder.Eventf(cj, nil, corev1.EventTypeWarning, ReasonNameTaken, actionCreateRayJob,
			"the run scheduled at %s is skipped: RayJob %s exists and is not this RayCronJob's", d.Run.UTC().Format(time.RFC3339), name)
	}
	return ctrl.Result{RequeueAfter: d.RequeueAfter(now)}, nil
}

type runOutcome int

const (
	runCreated   runOutcome = iota
	runFound                // created by an earlier pass (before a restart or a lost status write)
	runNameTaken            // another object holds the name: the run is skipped, not retried forever
)

// createRun creates the RayJob of the run scheduled at t; a RayJob of that name already
// there is this run's when this RayCronJob controls it.
func (r *Reconciler) createRun(ctx context.Context, cj *rayv1.RayCronJob, t time.Time) (runOutcome, error) {
	job := RunJob(cj, t)
	// Uncached: a run found under its name is read from the API server and left as it is
	// (RayJobs carry no label of raygate's cache to add).
	runs := owned.Client{Writer: r.client, API: r.apiReader, Owner: client.ObjectKeyFromObject(cj), OwnerKind: rayv1.RayCronJobKind}.Uncached()
	created, err := runs.Create(ctx, job)
	switch {
	case err != nil:
		return 0, fmt.Errorf("creating RayJob %s: %w", job.Name, err)
	case created.Conflict != nil:
		return runNameTaken, nil
	case created.Existing != nil:
		return runFound, nil
	}
	return runCreated, nil
}

// RunJob is the RayJob of the run of cj scheduled at t: the template's spec under the run's
// name, with KubeRay's label and annotation, controlled by cj (deleted with it).
func RunJob(cj *rayv1.RayCronJob, t time.Time) *rayv1.RayJob {
	return &rayv1.RayJob{
		TypeMeta: metav1.TypeMeta{APIVersion: rayv1.GroupVersion.String(), Kind: rayv1.RayJobKind},
		ObjectMeta: metav1.ObjectMeta{
			Name:            raycronjob.RunName(cj.Name, t),
			Namespace:       cj.Namespace,
			Labels:          map[string]string{rayv1.RayCronJobNameLabelKey: cj.Name},
			Annotations:     map[string]string{rayv1.RayCronJobTimestampAnnotationKey: t.UTC().Format(time.RFC3339)},
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(cj, rayv1.GroupVersion.WithKind(rayv1.RayCronJobKind))},
		},
		Spec: *cj.Spec.JobTemplate.DeepCopy(),
	}
}
