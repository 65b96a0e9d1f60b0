package rayservice

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/defaulting"
	"github.com/raygate/raygate/internal/rayspec"
	"github.com/raygate/raygate/internal/validation"
)

// admit defaults a copy of the spec and validates it as the admission webhook would. A spec
// the webhook would reject (stored while it was off) gets Ready=False/ValidationFailed and
// an event, and nothing is created or deleted for it.
func (r *Reconciler) admit(_ context.Context, p *pass) bool {
	s := p.svc.DeepCopy()
	defaulting.RayService(s)
	errs, _ := validation.RayService(s, r.Gates)
	var cfg *serveConfig
	var g goal
	if len(errs) == 0 {
		var err error
		if cfg, err = parseServeConfig(s.Spec.ServeConfigV2); err != nil {
			errs = append(errs, field.Invalid(field.NewPath("spec", "serveConfigV2"), "", err.Error()))
		} else if g, err = newGoal(s.Spec.RayClusterSpec); err != nil {
			errs = append(errs, field.InternalError(field.NewPath("spec", "rayClusterConfig"), err))
		}
	}
	if len(errs) > 0 {
		p.invalid = errs.ToAggregate().Error()
		if c := findCondition(p.old.Conditions, rayv1.RayServiceReady); c == nil || c.Reason != rayv1.ValidationFailed || c.Message != p.invalid {
			p.afterWrite = append(p.afterWrite, func() {
				r.warn(p, nil, EventValidationFailed, "Validate", "spec rejected, nothing is created or deleted until it is fixed: %s", p.invalid)
			})
		}
		return false
	}
	p.spec, p.serve, p.goal = s.Spec, cfg, g
	p.strategy, p.pacing = strategyOf(&s.Spec), pacingOf(&s.Spec)
	return true
}

// observeClusters finds the RayService's clusters and which is active and pending. A
// cluster named in the status but gone is forgotten; an unnamed cluster with the goal's
// hash and no deletion time is one raygate created just before a crash: it is adopted as
// the pending cluster instead of creating another.
func (r *Reconciler) observeClusters(ctx context.Context, p *pass) error {
	var list rayv1.RayClusterList
	if err := r.client.List(ctx, &list, client.InNamespace(p.svc.Namespace), client.MatchingLabels{
		rayv1.OriginatedFromCRNameLabelKey: p.svc.Name, rayv1.OriginatedFromCRDLabelKey: rayServiceKind,
	}); err != nil {
		return fmt.Errorf("listing RayClusters: %w", err)
	}
	byName := map[string]*rayv1.RayCluster{}
	for i := range list.Items {
		c := &list.Items[i]
		if metav1.IsControlledBy(c, p.svc) {
			p.owned = append(p.owned, c)
			byName[c.Name] = c
		}
	}
	st := &p.svc.Status
	live := func(name string) *rayv1.RayCluster {
		if c := byName[name]; c != nil && c.DeletionTimestamp == nil {
			return c
		}
		return nil
	}
	if n := st.ActiveServiceStatus.RayClusterName; n != "" {
		if p.active = live(n); p.active == nil {
			r.warn(p, nil, EventFailedCluster, "Observe", "active RayCluster %s is gone; a new one will be created", n)
			st.ActiveServiceStatus = rayv1.RayServiceStatus{}
		}
	}
	if n := st.PendingServiceStatus.RayClusterName; n != "" {
		if p.pending = live(n); p.pending == nil {
			r.warn(p, nil, EventFailedCluster, "Observe", "pending RayCluster %s is gone", n)
			st.PendingServiceStatus = rayv1.RayServiceStatus{}
		}
	}
	if p.pending != nil || (p.active != nil && matchGoal(stampOf(p.active), p.goal, r.Version) == matchSame) {
		return nil
	}
	for _, c := range p.owned {
		if c.DeletionTimestamp == nil && c != p.active && c.Annotations[rayv1.DeleteAfterKey] == "" && stampOf(c).Hash == p.goal.Hash {
			logFor(ctx, p).Info("adopting a RayCluster created for the current spec as the pending cluster", "raycluster", c.Name)
			p.pending = c
			st.PendingServiceStatus = rayv1.RayServiceStatus{RayClusterName: c.Name}
			r.initPendingStatus(p)
			return nil
		}
	}
	return nil
}

// reconcileClusters carries out the new-cluster decision.
func (r *Reconciler) reconcileClusters(ctx context.Context, p *pass) error {
	in := clusterInputs{Strategy: p.strategy, Goal: p.goal, Version: r.Version, GatewayAPI: r.gatewayAPI}
	if p.active != nil {
		s := stampOf(p.active)
		in.Active = &s
	}
	if p.pending != nil {
		s := stampOf(p.pending)
		in.Pending = &s
	}
	p.plan = decideClusters(in)
	if p.plan.Action != actNone {
		logFor(ctx, p).V(1).Info("cluster decision", "action", p.plan.Action, "reason", p.plan.Reason)
	}
	switch p.plan.Action {
	case actCreatePending:
		return r.createPending(ctx, p)
	case actReplacePending:
		old := p.pending
		if err := r.deleteCluster(ctx, p, old, "replaced: "+p.plan.Reason); err != nil {
			return err
		}
		p.svc.Status.PendingServiceStatus, p.pending = rayv1.RayServiceStatus{}, nil
		return r.createPending(ctx, p)
	case actDropPending:
		if err := r.deleteCluster(ctx, p, p.pending, p.plan.Reason); err != nil {
			return err
		}
		p.svc.Status.PendingServiceStatus, p.pending = rayv1.RayServiceStatus{}, nil
		p.decided = true
	case actUpdateActive, actAppendActive:
		return r.updateInPlace(ctx, p, p.active, p.plan.Action == actAppendActive)
	case actUpdatePending, actAppendPending:
		return r.updateInPlace(ctx, p, p.pending, p.plan.Action == actAppendPending)
	case actRestampActive:
		return r.restamp(ctx, p, p.active)
	case actRestampPending:
		return r.restamp(ctx, p, p.pending)
	case actRollback:
		p.rollingBack = true
	case actBlockedNoGwAPI:
		p.blocked = p.plan.Reason
		if c := findCondition(p.old.Conditions, rayv1.UpgradeInProgress); c == nil || c.Reason != ReasonGatewayAPIUnavailable {
			p.afterWrite = append(p.afterWrite, func() { r.warn(p, nil, EventGatewayAPIUnavailable, "Upgrade", "%s", p.plan.Reason) })
		}
	}
	return nil
}

func (r *Reconciler) createPending(ctx context.Context, p *pass) error {
	upgrade := p.active != nil
	rc := newRayCluster(p.svc, r.newName(p.svc.Name), p.goal, r.Version, upgrade && p.incremental())
	if err := r.client.Create(ctx, rc); err != nil {
		r.warn(p, nil, EventFailedCluster, "Create", "creating RayCluster %s: %v", rc.Name, err)
		return fmt.Errorf("creating RayCluster %s: %w", rc.Name, err)
	}
	p.owned = append(p.owned, rc)
	p.pending = rc
	p.svc.Status.PendingServiceStatus = rayv1.RayServiceStatus{RayClusterName: rc.Name}
	r.initPendingStatus(p)
	p.decided = true
	if upgrade {
		r.normal(p, rc, EventUpgradeStarted, "Create", "created pending RayCluster %s (%s strategy) to replace %s: %s", rc.Name, p.strategy, p.active.Name, p.plan.Reason)
	} else {
		r.normal(p, rc, EventCreatedCluster, "Create", "created RayCluster %s", rc.Name)
	}
	return nil
}

// initPendingStatus fills the capacity fields a pending cluster's status lacks: an
// incremental upgrade starts it at 0% capacity and traffic (the active cluster at 100%); a
// first cluster takes 100% at once. Fields already set are progress and are kept.
func (r *Reconciler) initPendingStatus(p *pass) {
	if !p.incremental() {
		return
	}
	st := &p.svc.Status
	fill := func(f **int32, v int32) {
		if *f == nil {
			*f = ptr.To(v)
		}
	}
	if p.active == nil {
		fill(&st.PendingServiceStatus.TargetCapacity, 100)
		return
	}
	fill(&st.PendingServiceStatus.TargetCapacity, 0)
	fill(&st.PendingServiceStatus.TrafficRoutedPercent, 0)
	fill(&st.ActiveServiceStatus.TargetCapacity, 100)
	fill(&st.ActiveServiceStatus.TrafficRoutedPercent, 100)
}

func (r *Reconciler) updateInPlace(ctx context.Context, p *pass, rc *rayv1.RayCluster, onlyAppend bool) error {
	rc.Spec = inPlaceSpec(rc.Spec, p.goal, onlyAppend)
	setAnnotations(rc, stampAnnotations(p.goal, r.Version))
	if err := r.client.Update(ctx, rc); err != nil {
		return fmt.Errorf("updating RayCluster %s: %w", rc.Name, err)
	}
	r.normal(p, rc, EventUpdatedCluster, "Update", "updated RayCluster %s in place: %s", rc.Name, p.plan.Reason)
	return nil
}

func (r *Reconciler) restamp(ctx context.Context, p *pass, rc *rayv1.RayCluster) error {
	if err := r.patchAnnotations(ctx, rc, stampAnnotations(p.goal, r.Version)); err != nil {
		return err
	}
	r.normal(p, rc, EventUpdatedCluster, "Update", "re-stamped RayCluster %s with the current spec hash instead of replacing it: %s", rc.Name, p.plan.Reason)
	return nil
}

// patchAnnotations merge-patches annotations onto a cluster (and the object in memory).
func (r *Reconciler) patchAnnotations(ctx context.Context, rc *rayv1.RayCluster, ann map[string]string) error {
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": ann}})
	if err := r.client.Patch(ctx, rc, client.RawPatch(types.MergePatchType, patch)); err != nil {
		return fmt.Errorf("annotating RayCluster %s: %w", rc.Name, err)
	}
	setAnnotations(rc, ann)
	return nil
}

func setAnnotations(rc *rayv1.RayCluster, ann map[string]string) {
	if rc.Annotations == nil {
		rc.Annotations = map[string]string{}
	}
	for k, v := range ann {
		rc.Annotations[k] = v
	}
}

// retire records when a cluster that stopped serving may be deleted. The time is recorded
// once, on the cluster, so a restart neither forgets the deletion nor brings it forward.
func (r *Reconciler) retire(ctx context.Context, p *pass, rc *rayv1.RayCluster) error {
	if rc.Annotations[rayv1.DeleteAfterKey] != "" {
		return nil
	}
	// Rounded up to the second the annotation can hold, so the delay is never cut short.
	at := p.now.Add(time.Duration(deletionDelaySeconds(&p.spec)) * time.Second)
	if t := at.Truncate(time.Second); !t.Equal(at) {
		at = t.Add(time.Second)
	}
	return r.patchAnnotations(ctx, rc, map[string]string{rayv1.DeleteAfterKey: at.UTC().Format(time.RFC3339)})
}

func (r *Reconciler) deleteCluster(ctx context.Context, p *pass, rc *rayv1.RayCluster, why string) error {
	if err := r.client.Delete(ctx, rc, client.PropagationPolicy(metav1.DeletePropagationBackground)); err != nil && !apierrors.IsNotFound(err) {
		r.warn(p, rc, EventFailedCluster, "Delete", "deleting RayCluster %s: %v", rc.Name, err)
		return fmt.Errorf("deleting RayCluster %s: %w", rc.Name, err)
	}
	// The per-cluster serve Service is owned by the cluster; deleting it now keeps the
	// namespace tidy where garbage collection lags (or, in envtest, does not run).
	if err := r.deleteService(ctx, rc.Namespace, rayspec.ClusterServeServiceName(rc.Name)); err != nil {
		return err
	}
	r.normal(p, rc, EventDeletedCluster, "Delete", "deleted RayCluster %s: %s", rc.Name, why)
	return nil
}

// cleanUp retires and then deletes the clusters that no longer serve. The deletion time is
// recorded only once the status that demotes a cluster is stored (the pass after promotion
// or after a rollback finished): recorded earlier, a slow or conflicting status write would
// eat into the delay that lets in-flight requests finish. A cluster raygate created but
// never recorded (a crash between create and status write) may have been reached through
// its Services, so it gets the same delay.
func (r *Reconciler) cleanUp(ctx context.Context, p *pass) error {
	for _, rc := range p.owned {
		if rc.DeletionTimestamp != nil || p.isActive(rc.Name) || p.isPending(rc.Name) {
			continue
		}
		if recordedIn(p.old, rc.Name) {
			p.decided = true // demoted by this pass: retire it in the next one
			continue
		}
		if err := r.retire(ctx, p, rc); err != nil {
			return err
		}
		at, err := time.Parse(time.RFC3339, rc.Annotations[rayv1.DeleteAfterKey])
		switch {
		case err != nil:
			r.warn(p, rc, EventFailedCluster, "Delete", "annotation %s=%q is not an RFC 3339 time; delete RayCluster %s by hand", rayv1.DeleteAfterKey, rc.Annotations[rayv1.DeleteAfterKey], rc.Name)
		case !p.now.Before(at):
			if err := r.deleteCluster(ctx, p, rc, "its deletion delay after it stopped serving has passed"); err != nil {
				return err
			}
		default:
			p.due(at)
		}
	}
	return nil
}

// recordedIn reports whether a status names the cluster as active or pending.
func recordedIn(st *rayv1.RayServiceStatuses, name string) bool {
	return name == st.ActiveServiceStatus.RayClusterName || name == st.PendingServiceStatus.RayClusterName
}

func findCondition(conds []metav1.Condition, t rayv1.RayServiceConditionType) *metav1.Condition {
	for i := range conds {
		if conds[i].Type == string(t) {
			return &conds[i]
		}
	}
	return nil
}
