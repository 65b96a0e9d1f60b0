package rayjob

import (
	"context"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/controllers/rayjob/plan"
	"github.com/raygate/raygate/internal/defaulting"
	"github.com/raygate/raygate/internal/validation"
)

// Reconcile is one pass: read the RayJob (the status last written, never an older one),
// admit it (defaulted in memory, validated), observe what it owns, plan, carry the plan's
// effects out (a failed action ends the pass before anything is recorded), then record the
// outcome: one status write when it changed, then the events and the metrics.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	job := &rayv1.RayJob{}
	if err := r.statuses.Get(ctx, r.client, r.apiReader, req.NamespacedName, job); err != nil {
		if apierrors.IsNotFound(err) {
			r.forget(req.NamespacedName)
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, err
	}
	now := r.Now()
	in := r.admit(job, now)
	var obs observation
	if !validation.ManagedByOther(job.Spec.ManagedBy) {
		var err error
		if obs, err = r.observe(ctx, job); err != nil {
			return ctrl.Result{}, err
		}
		in.Observed = obs.Observed
	}
	p := plan.Decide(in)
	log := ctrlLog(ctx)
	for _, d := range p.Decisions {
		log.V(1).Info(d)
	}
	gone, err := r.carryOut(ctx, job, obs, p.Effects)
	if err != nil || gone {
		return ctrl.Result{}, err
	}
	return r.record(ctx, job, p.Outcome, now)
}

// admit is the plan's inputs for a RayJob as read: its spec defaulted on a copy, what
// validation finds wrong with it, fresh names, the settings and the time.
func (r *Reconciler) admit(job *rayv1.RayJob, now time.Time) plan.Inputs {
	defaulted := job.DeepCopy()
	defaulting.RayJob(defaulted)
	in := plan.Inputs{Job: defaulted, Fresh: r.fresh(job.Name), Settings: r.Settings, Now: now}
	if !validation.ManagedByOther(job.Spec.ManagedBy) {
		in.Invalid = r.validator.StoredRayJob(defaulted)
	}
	return in
}

// record writes the outcome's status when it differs from the stored one; once it is stored
// (or needed no write) come the events and the metrics, and the outcome says when to come
// back.
func (r *Reconciler) record(ctx context.Context, job *rayv1.RayJob, out plan.Outcome, now time.Time) (ctrl.Result, error) {
	// A replace without resourceVersion (internal/statuspatch): the pass started from the
	// status last written, so it replaces nothing it did not see.
	if _, err := r.statuses.Write(ctx, r.client, job, out.Status, now, nil); err != nil {
		if apierrors.IsNotFound(err) {
			r.forget(types.NamespacedName{Namespace: job.Namespace, Name: job.Name})
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, fmt.Errorf("writing the status: %w", err)
	}
	r.Metrics.Observe(job)
	for _, e := range out.Events {
		r.emit(job, e)
	}
	r.Metrics.Record(job, out.Metrics)
	return ctrl.Result{RequeueAfter: out.Wake.After(now)}, nil
}

// forget drops what the controller remembers of a RayJob that is gone.
func (r *Reconciler) forget(key types.NamespacedName) {
	r.statuses.Forget(key)
	r.taken.Forget(key)
	r.Metrics.Forget(key.Namespace, key.Name)
}

// emit records an event about the RayJob.
func (r *Reconciler) emit(job *rayv1.RayJob, e plan.Event) {
	r.recorder.Eventf(job, nil, e.Type, e.Reason, e.Action, "%s", e.Note)
}

func ctrlLog(ctx context.Context) logr.Logger { return ctrl.LoggerFrom(ctx) }
