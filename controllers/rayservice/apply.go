package rayservice

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/dashboard"
	"github.com/raygate/raygate/internal/rayspec"
)

// executor carries out what the plan asks for: the controller against the API server and
// the dashboards, tests against a simulated world.
type executor interface {
	apply(actions []action) error
	submit(s submitServeConfig) (*refusal, error)
}

// carryOut plans the pass and carries it out in the order the steps depend on: the
// new-cluster decision, then the serve config submissions, then everything else. A
// dashboard that refuses a config changes what the pass may decide (that cluster's
// applications are not ready, and the status says why), so the plan is made again knowing
// it. Plans are functions of their inputs and the refusals touch no cluster decision, so
// the second plan has the same cluster actions (carried out already) and the same
// submissions minus the refused ones (all attempted already); its other actions are
// carried out. It returns the plan whose status is to be written.
func carryOut(obs *observed, want *desired, stored *rayv1.RayServiceStatuses, now time.Time, x executor) (planned, error) {
	out := plan(obs, want, stored, now)
	if err := x.apply(out.ClusterActions); err != nil {
		return out, err
	}
	refused := map[string]refusal{}
	for _, s := range out.Submits {
		ref, err := x.submit(s)
		if err != nil {
			return out, err
		}
		if ref != nil {
			refused[s.Cluster.Name] = *ref
		}
	}
	if len(refused) > 0 {
		out = plan(obs.withRefusals(refused), want, stored, now)
	}
	return out, x.apply(out.Actions)
}

// reconcilerExecutor carries out one pass of a Reconciler for one RayService.
type reconcilerExecutor struct {
	ctx context.Context
	r   *Reconciler
	svc *rayv1.RayService
}

func (x reconcilerExecutor) apply(actions []action) error { return x.r.apply(x.ctx, x.svc, actions) }

func (x reconcilerExecutor) submit(s submitServeConfig) (*refusal, error) {
	return x.r.submitServeConfig(x.ctx, x.svc, s)
}

// submitServeConfig PUTs a serve config to a cluster's dashboard, then records on the
// cluster what it accepted. A refusal is an answer, not an error; failing to record is.
func (r *Reconciler) submitServeConfig(ctx context.Context, svc *rayv1.RayService, s submitServeConfig) (*refusal, error) {
	dc, err := r.dashboardOf(ctx, s.Cluster)
	if err != nil {
		return nil, err
	}
	if err := dc.DeployApplications(ctx, s.Config.body(s.TargetCapacity)); err != nil {
		r.emit(svc, warningEvent(s.Cluster, EventFailedServeConfig, "SubmitServeConfig", "submitting the serve config to %s (%s): %v", s.Cluster.Name, s.Reason, err))
		return &refusal{Message: err.Error(), BadRequest: dashboard.IsBadRequest(err)}, nil
	}
	// Record what the dashboard accepted even if the operator is shutting down: the record
	// is what keeps the next operator from resubmitting. (Only a hard crash in this short
	// window resubmits the same config, which Ray treats as a no-op.)
	commitCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if err := r.annotate(commitCtx, s.Cluster, s.record()); err != nil {
		return nil, err
	}
	r.emit(svc, s.Done)
	r.logFor(ctx, s.Cluster).Info("submitted serve config", "reason", s.Reason, "targetCapacity", s.TargetCapacity)
	return nil, nil
}

// apply carries out actions in order and stops at the first failure: the status that relies
// on them is then not written, and the next pass plans again from what is.
func (r *Reconciler) apply(ctx context.Context, svc *rayv1.RayService, actions []action) error {
	log := r.logFor(ctx, nil)
	for _, a := range actions {
		log.V(1).Info("applying", "action", a.String())
		if err := r.applyOne(ctx, svc, a); err != nil {
			return err
		}
	}
	return nil
}

func (r *Reconciler) applyOne(ctx context.Context, svc *rayv1.RayService, a action) error {
	switch a := a.(type) {
	case createCluster:
		if err := r.client.Create(ctx, a.Cluster); err != nil {
			r.emit(svc, warningEvent(nil, EventFailedCluster, "Create", "creating RayCluster %s: %v", a.Cluster.Name, err))
			return fmt.Errorf("creating RayCluster %s: %w", a.Cluster.Name, err)
		}
		r.emit(svc, a.Done)
	case updateCluster:
		if err := r.client.Update(ctx, a.Cluster); err != nil {
			return fmt.Errorf("updating RayCluster %s: %w", a.Cluster.Name, err)
		}
		r.emit(svc, a.Done)
	case annotateCluster:
		if err := r.annotate(ctx, a.Cluster, a.Annotations); err != nil {
			return err
		}
		if a.Done != nil {
			r.emit(svc, *a.Done)
		}
	case deleteCluster:
		if err := r.deleteCluster(ctx, a.Cluster); err != nil {
			r.emit(svc, warningEvent(a.Cluster, EventFailedCluster, "Delete", "deleting RayCluster %s: %v", a.Cluster.Name, err))
			return err
		}
		r.emit(svc, a.Done)
	case createObject:
		if err := r.client.Create(ctx, a.Object); err != nil {
			kind := kindOf(a.Object)
			r.emit(svc, warningEvent(nil, failedEventReason(kind), "Create"+kind, "creating %s %s: %v", kind, a.Object.GetName(), err))
			return fmt.Errorf("creating %s %s: %w", kind, a.Object.GetName(), err)
		}
	case updateObject:
		if err := r.client.Update(ctx, a.Object); err != nil {
			kind := kindOf(a.Object)
			r.emit(svc, warningEvent(nil, failedEventReason(kind), "Update"+kind, "updating %s %s: %v", kind, a.Object.GetName(), err))
			return fmt.Errorf("updating %s %s: %w", kind, a.Object.GetName(), err)
		}
	case labelPod:
		patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"labels": map[string]string{rayv1.ServeLabelKey: a.Value}}})
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: a.Pod.Namespace, Name: a.Pod.Name}}
		if err := r.client.Patch(ctx, pod, client.RawPatch(types.MergePatchType, patch)); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("labelling head pod %s: %w", a.Pod.Name, err)
		}
	default:
		return fmt.Errorf("unknown action %T", a)
	}
	return nil
}

func failedEventReason(kind string) string {
	if kind == "Service" {
		return EventFailedService
	}
	return EventFailedGateway
}

// annotate merge-patches annotations onto a cluster.
func (r *Reconciler) annotate(ctx context.Context, rc *rayv1.RayCluster, ann map[string]string) error {
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": ann}})
	target := &rayv1.RayCluster{ObjectMeta: metav1.ObjectMeta{Namespace: rc.Namespace, Name: rc.Name}}
	if err := r.client.Patch(ctx, target, client.RawPatch(types.MergePatchType, patch)); err != nil {
		return fmt.Errorf("annotating RayCluster %s: %w", rc.Name, err)
	}
	return nil
}

// deleteCluster deletes a cluster and its per-cluster serve Service. The cluster owns that
// Service; deleting it now keeps the namespace tidy where garbage collection lags (or, in
// envtest, does not run).
func (r *Reconciler) deleteCluster(ctx context.Context, rc *rayv1.RayCluster) error {
	target := &rayv1.RayCluster{ObjectMeta: metav1.ObjectMeta{Namespace: rc.Namespace, Name: rc.Name}}
	if err := r.client.Delete(ctx, target, client.PropagationPolicy(metav1.DeletePropagationBackground)); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting RayCluster %s: %w", rc.Name, err)
	}
	serve := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: rc.Namespace, Name: rayspec.ClusterServeServiceName(rc.Name)}}
	if err := r.client.Delete(ctx, serve); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting Service %s: %w", serve.Name, err)
	}
	return nil
}
