package rayservice

import (
	"context"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/controllers/rayservice/plan"
	"github.com/raygate/raygate/internal/validation"
)

// Reconcile observes the RayService and what it owns, plans the pass, carries the plan out,
// writes the status once (only when it changed), then emits the events the status records.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	svc, err := r.get(ctx, req.NamespacedName)
	if apierrors.IsNotFound(err) {
		// The status writer forgot it; so do the names found taken for it.
		r.taken.Forget(req.NamespacedName)
		r.Metrics.Forget(req.Namespace, req.Name)
		return ctrl.Result{}, nil
	}
	if err != nil {
		return ctrl.Result{}, err
	}
	if svc.DeletionTimestamp != nil {
		return ctrl.Result{}, nil // owner references delete what raygate created
	}
	if validation.ManagedByOther(svc.Spec.ManagedBy) {
		// Another controller (MultiKueue) runs it: raygate neither creates nor writes anything.
		r.logFor(ctx, nil).V(1).Info("skipping a RayService managed by another controller", "rayservice", req.NamespacedName, "managedBy", *svc.Spec.ManagedBy)
		return ctrl.Result{}, nil
	}
	now := r.Now()
	want := plan.RestrictSharedGateway(plan.Admit(plan.WithUpgradeDefault(svc, !r.DisableZeroDowntime), r.Gates, r.Limits, r.Version), r.SharedGateways)
	obs := observation{Observed: &plan.Observed{}}
	if want.Invalid == "" {
		if obs, err = r.observe(ctx, svc, want); err != nil {
			return ctrl.Result{}, err
		}
	}
	out, err := carryOut(obs.Observed, want, &svc.Status, now, reconcilerExecutor{ctx: ctx, r: r, svc: svc, targets: obs.targets})
	for _, d := range out.Decisions {
		r.logFor(ctx, nil).V(1).Info(d, "rayservice", req.NamespacedName)
	}
	if err != nil {
		return ctrl.Result{}, err
	}
	for _, name := range out.Refresh {
		if t, ok := obs.targets[name]; ok {
			r.dashboards.Refresh(t)
		}
	}
	return r.record(ctx, svc, out.Outcome, now)
}

// get reads the RayService from the cache, or from the API when the cache has not yet seen
// raygate's last status write.
func (r *Reconciler) get(ctx context.Context, key types.NamespacedName) (*rayv1.RayService, error) {
	svc := &rayv1.RayService{}
	if err := r.statuses.Get(ctx, r.client, r.apiReader, key, svc); err != nil {
		return nil, err
	}
	return svc, nil
}

// record writes the outcome's status when it differs from the stored one; once it is stored
// (or needed no write) come the metrics and the events, and the outcome says when to come
// back.
func (r *Reconciler) record(ctx context.Context, svc *rayv1.RayService, out plan.Outcome, now time.Time) (ctrl.Result, error) {
	requeue := out.Wake.After(now, r.DeployingPoll, r.AppStatusResync)
	quiet := len(out.Events) == 0 && out.Metrics == (plan.MetricFacts{})
	// A replace without resourceVersion (internal/statuspatch): it cannot conflict, and get
	// made this pass start from the status last written.
	written, err := r.statuses.Write(ctx, r.client, svc, out.Status, now, messagePolicy(quiet, r.MessageCoalesce))
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("writing the status: %w", err)
	}
	if written.Wait > 0 {
		// Only progress messages changed: written with the next change, or when the wait is
		// over.
		if requeue <= 0 || written.Wait < requeue {
			requeue = written.Wait
		}
		r.Metrics.Observe(svc)
		return ctrl.Result{RequeueAfter: requeue}, nil
	}
	r.Metrics.Observe(svc)
	for _, e := range out.Events {
		r.emit(svc, e)
	}
	if a := out.Metrics.ActionRecorded; a != "" {
		r.Metrics.UpgradeAction(a)
	}
	if g := out.Metrics.GateFailed; g != nil {
		r.Metrics.GateFailed(svc.Namespace, g.Gate, g.Action)
	}
	if f := out.Metrics.Finished; f != nil {
		r.Metrics.UpgradeFinished(f.Strategy, f.Result, f.Seconds)
	}
	return ctrl.Result{RequeueAfter: requeue}, nil
}

// emit records an event about the RayService.
func (r *Reconciler) emit(svc *rayv1.RayService, e plan.Event) {
	if e.Related != nil {
		r.recorder.Eventf(svc, e.Related, e.Type, e.Reason, e.Action, "%s", e.Note)
		return
	}
	r.recorder.Eventf(svc, nil, e.Type, e.Reason, e.Action, "%s", e.Note)
}

func (r *Reconciler) logFor(ctx context.Context, rc *rayv1.RayCluster) logr.Logger {
	log := ctrl.LoggerFrom(ctx)
	if rc != nil {
		log = log.WithValues("raycluster", rc.Name)
	}
	return log
}
