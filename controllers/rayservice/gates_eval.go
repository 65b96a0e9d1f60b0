package rayservice

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	raygatev1alpha1 "github.com/raygate/raygate/apis/raygate/v1alpha1"
	"github.com/raygate/raygate/controllers/rayservice/plan"
	"github.com/raygate/raygate/internal/promgate"
	"github.com/raygate/raygate/internal/validation"
)

// The RayService controller reads UpgradePolicies directly from the API server (no watch:
// only passes at a gated step read one) and patches a RayService's upgrade-action
// annotations when a gate fails.
// +kubebuilder:rbac:groups=raygate.ray.io,resources=upgradepolicies,verbs=get
// +kubebuilder:rbac:groups=ray.io,resources=rayservices,verbs=patch

// gateEvaluator is an executor that can evaluate gates (the reconciler's; test worlds
// without Prometheus leave it out). A nil observation: the answer is not there yet, the
// step holds, and the pool puts the RayService back in the queue when it comes. drop
// (nil: nothing to drop) discards the answer the observation holds, once it made a gate
// fail.
type gateEvaluator interface {
	evaluateGates(ask plan.GateAsk) (gates *plan.GateObservation, drop func())
}

// gateFailed: the pass's UpgradeGates condition says a gate failed.
func gateFailed(st rayv1.RayServiceStatuses) bool {
	c := meta.FindStatusCondition(st.Conditions, raygatev1alpha1.UpgradeGatesCondition)
	return c != nil && c.Reason == raygatev1alpha1.GateFailed
}

// annotateService merge-patches the annotations; the UID makes it fail on another
// RayService of that name.
func (r *Reconciler) annotateService(ctx context.Context, a plan.AnnotateService) error {
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"uid": a.Service.UID, "annotations": a.Annotations}})
	target := &rayv1.RayService{ObjectMeta: metav1.ObjectMeta{Namespace: a.Service.Namespace, Name: a.Service.Name}}
	if err := r.client.Patch(ctx, target, client.RawPatch(types.MergePatchType, patch)); err != nil {
		return fmt.Errorf("annotating RayService %s: %w", a.Service.Name, err)
	}
	return nil
}

func (x reconcilerExecutor) evaluateGates(ask plan.GateAsk) (*plan.GateObservation, func()) {
	return x.r.evaluateGates(x.ctx, x.svc, ask)
}

// evaluateGates reads the policy and takes the gate pool's answer to its queries
// (gates_pool.go): nil when there is none fit to decide yet. Every failure to read or run
// them is reported as Unavailable (or as a result without data), so the plan waits.
func (r *Reconciler) evaluateGates(ctx context.Context, svc *rayv1.RayService, ask plan.GateAsk) (*plan.GateObservation, func()) {
	g := &plan.GateObservation{Policy: ask.Policy}
	pol := &raygatev1alpha1.UpgradePolicy{}
	err := r.apiReader.Get(ctx, types.NamespacedName{Namespace: svc.Namespace, Name: ask.Policy}, pol)
	switch {
	case meta.IsNoMatchError(err):
		g.Unavailable = "the UpgradePolicy CRD (raygate.ray.io/v1alpha1) is not installed; the upgrade waits until it is and the policy " + ask.Policy + " exists"
		return g, nil
	case apierrors.IsNotFound(err):
		g.Unavailable = fmt.Sprintf("UpgradePolicy %s/%s (named by %s) does not exist; the upgrade waits until it does or the annotation is removed", svc.Namespace, ask.Policy, raygatev1alpha1.UpgradePolicyAnnotation)
		return g, nil
	case err != nil:
		g.Unavailable = "reading UpgradePolicy " + ask.Policy + ": " + promgate.Sanitize(err.Error())
		return g, nil
	}
	if errs := validation.UpgradePolicy(nil, pol); len(errs) > 0 {
		g.Unavailable = fmt.Sprintf("UpgradePolicy %s is invalid (it was stored without the webhook): %s", ask.Policy, promgate.Sanitize(errs.ToAggregate().Error()))
		return g, nil
	}
	g.Gates, g.OnFailure = pol.Spec.Gates, pol.Spec.OnFailureOrDefault()
	g.Settle = time.Duration(pol.Spec.SettleOrDefault()) * time.Second
	if r.gatePool == nil {
		g.Unavailable = "no Prometheus is configured for metric gates: the operator's admin sets --prometheus-url; the upgrade waits"
		return g, nil
	}
	key := client.ObjectKeyFromObject(svc)
	answer, pending, ok := r.gatePool.Answer(promgate.Ask{
		Owner: key, Gates: pol.Spec.Gates, Timeout: time.Duration(pol.Spec.QueryTimeoutOrDefault()) * time.Second,
		Vars:      promgate.Vars{Namespace: svc.Namespace, RayService: svc.Name, Pending: ask.Pending, Active: ask.Active},
		NotBefore: gatesNotBefore(svc, ask),
	})
	if !ok {
		r.logFor(ctx, nil).V(1).Info("upgrade gates not answered yet", "rayservice", key, "policy", ask.Policy, "evaluation", pending)
		return nil, nil
	}
	for _, res := range answer.Results {
		g.Results = append(g.Results, plan.GateResult{Gate: res.Gate, Query: res.Query, Values: res.Values, Err: res.Err})
	}
	r.logFor(ctx, nil).V(1).Info("upgrade gates answered", "rayservice", key, "policy", ask.Policy, "results", len(g.Results), "evaluatedAt", answer.At)
	return g, func() { r.gatePool.Drop(key, answer.At) }
}
