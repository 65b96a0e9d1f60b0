package rayservice

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/controllers/rayservice/plan"
	"github.com/raygate/raygate/internal/dashboard"
	"github.com/raygate/raygate/internal/owned"
	"github.com/raygate/raygate/internal/owned/ownerref"
	"github.com/raygate/raygate/internal/rayspec"
)

// executor carries out what the plan asks for: the controller's against the API server
// and the dashboard pool, tests' against a recording.
type executor interface {
	apply(actions []plan.Action) error
	submit(s plan.SubmitServeConfig) error
}

// carryOut plans the pass and carries out its effects. A pass that reaches a gated step is
// planned again with the gates' results, when the executor can evaluate them and an answer
// is there. It returns the plan whose outcome is to be recorded.
func carryOut(obs *plan.Observed, want *plan.Desired, stored *rayv1.RayServiceStatuses, now time.Time, x executor) (plan.Plan, error) {
	out := plan.Decide(obs, want, stored, now)
	if g, ok := x.(gateEvaluator); ok && out.GateAsk != nil {
		// The plan reached a gated step: plan again with the gate pool's answer. Without one
		// the plan holds the step, as it just did; the answer's arrival brings a new pass.
		if gates, drop := g.evaluateGates(*out.GateAsk); gates != nil {
			o := *obs
			o.Gates = gates
			out = plan.Decide(&o, want, stored, now)
			if drop != nil && gateFailed(out.Status) {
				drop() // a resumed upgrade is judged on a new answer
			}
		}
	}
	return out, carryOutEffects(out.Effects, x)
}

// carryOutEffects carries out a pass's effects in the order they depend on: the
// new-cluster decision (and the records of configs the dashboards accepted), then the
// serve config submissions, handed to the dashboard pool (their answers come back on a
// later pass), then everything else. It stops at the first failure.
func carryOutEffects(e plan.Effects, x executor) error {
	if err := x.apply(e.ClusterActions); err != nil {
		return err
	}
	for _, s := range e.Submits {
		if err := x.submit(s); err != nil {
			return err
		}
	}
	return x.apply(e.Actions)
}

// reconcilerExecutor carries out one pass of a Reconciler for one RayService.
type reconcilerExecutor struct {
	ctx     context.Context
	r       *Reconciler
	svc     *rayv1.RayService
	targets map[string]dashboard.Target
}

func (x reconcilerExecutor) apply(actions []plan.Action) error {
	return x.r.apply(x.ctx, x.svc, actions)
}

func (x reconcilerExecutor) submit(s plan.SubmitServeConfig) error {
	t, ok := x.targets[s.Cluster.Name]
	if !ok {
		return nil // no dashboard to call in this pass; the plan asks again
	}
	return x.r.submitServeConfig(x.ctx, x.svc, t, s)
}

// submitServeConfig hands a serve config to the dashboard pool, after keeping it in the
// cluster's record (or reading it from there, for a config no longer in the spec). Nothing
// is prepared when the pool holds the same submission already.
func (r *Reconciler) submitServeConfig(ctx context.Context, svc *rayv1.RayService, t dashboard.Target, s plan.SubmitServeConfig) error {
	id := s.ID()
	if !r.dashboards.Wants(t, id) {
		return nil
	}
	cfg := s.Config
	if cfg != nil {
		if err := r.writeRecord(ctx, r.objects(svc), s.Cluster, cfg, s.Keep); err != nil {
			return err
		}
	} else {
		loaded, missing, err := r.readRecord(ctx, r.objects(svc), s.Cluster, s.Hash)
		if err != nil {
			return err
		}
		if missing != "" {
			r.dashboards.Reject(t, id, missing)
			r.emit(svc, plan.WarningEvent(s.Cluster, plan.EventFailedServeConfig, "SubmitServeConfig", "%s", missing))
			return nil
		}
		cfg = loaded
	}
	tag := submissionTag{svc: svc.DeepCopy(), cluster: s.Cluster, reason: s.Reason, done: s.Done}
	tag.svc.Spec, tag.svc.Status = rayv1.RayServiceSpec{}, rayv1.RayServiceStatuses{}
	r.dashboards.Submit(t, dashboard.Submission{ID: id, Body: cfg.Body(s.TargetCapacity), Tag: tag})
	r.logFor(ctx, s.Cluster).Info("submitting serve config", "reason", s.Reason, "hash", s.Hash, "targetCapacity", plan.Percent(s.TargetCapacity))
	return nil
}

// apply carries out actions in order and stops at the first failure: the status that relies
// on them is then not written, and the next pass plans again from what is.
func (r *Reconciler) apply(ctx context.Context, svc *rayv1.RayService, actions []plan.Action) error {
	log := r.logFor(ctx, nil)
	for _, a := range actions {
		log.V(1).Info("applying", "action", a.String())
		if err := r.applyOne(ctx, svc, a); err != nil {
			return err
		}
	}
	return nil
}

func (r *Reconciler) applyOne(ctx context.Context, svc *rayv1.RayService, a plan.Action) error {
	switch a := a.(type) {
	case plan.CreateCluster:
		if err := r.client.Create(ctx, a.Cluster); err != nil {
			r.emit(svc, plan.WarningEvent(nil, plan.EventFailedCluster, "Create", "creating RayCluster %s: %v", a.Cluster.Name, err))
			return fmt.Errorf("creating RayCluster %s: %w", a.Cluster.Name, err)
		}
		r.emit(svc, a.Done)
	case plan.UpdateCluster:
		if err := r.client.Update(ctx, a.Cluster); err != nil {
			return fmt.Errorf("updating RayCluster %s: %w", a.Cluster.Name, err)
		}
		r.emit(svc, a.Done)
	case plan.AnnotateCluster:
		if err := r.annotate(ctx, a.Cluster, a.Annotations, a.Remove...); err != nil {
			return err
		}
		if a.Done != nil {
			r.emit(svc, *a.Done)
		}
	case plan.DeleteCluster:
		if err := r.deleteCluster(ctx, r.objects(svc), a.Cluster); err != nil {
			r.emit(svc, plan.WarningEvent(a.Cluster, plan.EventFailedCluster, "Delete", "deleting RayCluster %s: %v", a.Cluster.Name, err))
			return err
		}
		r.emit(svc, a.Done)
	case plan.CreateObject:
		kind := plan.KindOf(a.Object)
		res, err := r.objects(svc).Create(ctx, a.Object)
		switch {
		case err != nil:
			r.emit(svc, plan.WarningEvent(nil, failedEventReason(kind), "Create"+kind, "creating %s %s: %v", kind, a.Object.GetName(), err))
			return fmt.Errorf("creating %s %s: %w", kind, a.Object.GetName(), err)
		case res.Conflict != nil:
			// The cache could not see it: the next pass reads it from the API server, and
			// the plan reports it.
			return fmt.Errorf("creating %s %s: %s", kind, a.Object.GetName(), res.Conflict)
		}
	case plan.UpdateObject:
		if r.updated.stale(a.Object) {
			return nil // decided on a version raygate updated already: it would only conflict
		}
		seen := a.Object.GetResourceVersion()
		if err := r.objects(svc).Update(ctx, a.Object); err != nil {
			kind := plan.KindOf(a.Object)
			r.emit(svc, plan.WarningEvent(nil, failedEventReason(kind), "Update"+kind, "updating %s %s: %v", kind, a.Object.GetName(), err))
			return fmt.Errorf("updating %s %s: %w", kind, a.Object.GetName(), err)
		}
		r.updated.remember(a.Object, seen)
	case plan.DeleteObject:
		if err := r.objects(svc).Delete(ctx, a.Object); err != nil {
			kind := plan.KindOf(a.Object)
			r.emit(svc, plan.WarningEvent(nil, failedEventReason(kind), "Delete"+kind, "deleting %s %s: %v", kind, a.Object.GetName(), err))
			return fmt.Errorf("deleting %s %s: %w", kind, a.Object.GetName(), err)
		}
	case plan.LabelPod:
		// The UID makes the patch fail on any other pod of that name.
		patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"uid": a.Pod.UID, "labels": map[string]string{rayv1.ServeLabelKey: a.Value}}})
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: a.Pod.Namespace, Name: a.Pod.Name}}
		if err := r.client.Patch(ctx, pod, client.RawPatch(types.MergePatchType, patch)); err != nil {
			if apierrors.IsNotFound(err) {
				return nil
			}
			r.emit(svc, plan.WarningEvent(nil, plan.EventFailedHeadPodServeLabel, "Label", "setting %s=%s on head pod %s: %v", rayv1.ServeLabelKey, a.Value, a.Pod.Name, err))
			return fmt.Errorf("labelling head pod %s: %w", a.Pod.Name, err)
		}
		if a.Done != nil {
			r.emit(svc, *a.Done)
		}
	case plan.AnnotateService:
		if err := r.annotateService(ctx, a); err != nil {
			return err
		}
	default:
		return fmt.Errorf("unknown action %T", a)
	}
	return nil
}

func failedEventReason(kind string) string {
	if kind == "Service" {
		return plan.EventFailedService
	}
	return plan.EventFailedGateway
}

// annotate merge-patches annotations onto a cluster, removing those in remove. The UID
// makes the patch fail on any other cluster of that name.
func (r *Reconciler) annotate(ctx context.Context, rc *rayv1.RayCluster, ann map[string]string, remove ...string) error {
	values := make(map[string]any, len(ann)+len(remove))
	for k, v := range ann {
		values[k] = v
	}
	for _, k := range remove {
		values[k] = nil
	}
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"uid": rc.UID, "annotations": values}})
	if r.annotated.repeat(rc, patch) {
		return nil // sent already; the cache has not caught up with it yet
	}
	target := &rayv1.RayCluster{ObjectMeta: metav1.ObjectMeta{Namespace: rc.Namespace, Name: rc.Name}}
	if err := r.client.Patch(ctx, target, client.RawPatch(types.MergePatchType, patch)); err != nil {
		return fmt.Errorf("annotating RayCluster %s: %w", rc.Name, err)
	}
	r.annotated.remember(rc, patch)
	return nil
}

// annotationMemo remembers, per cluster, the last annotation patch sent and the
// resourceVersion the cluster had in the pass that decided it. A pass that still sees that
// version, because the cache has not caught up with the patch, would decide the same patch
// again: it is not sent twice. A cache of API facts: losing it costs one repeated patch.
type annotationMemo struct {
	mu   sync.Mutex
	sent map[types.UID]sentPatch
}

type sentPatch struct {
	seenVersion string
	patch       string
}

// memoBound bounds the clusters remembered; past it the memo starts afresh.
const memoBound = 4096

// repeat: this patch was sent for the cluster as the pass sees it.
func (m *annotationMemo) repeat(rc *rayv1.RayCluster, patch []byte) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.sent[rc.UID]
	return ok && s.seenVersion == rc.ResourceVersion && s.patch == string(patch)
}

func (m *annotationMemo) remember(rc *rayv1.RayCluster, patch []byte) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.sent == nil || len(m.sent) >= memoBound {
		m.sent = map[types.UID]sentPatch{}
	}
	m.sent[rc.UID] = sentPatch{seenVersion: rc.ResourceVersion, patch: string(patch)}
}

// updateMemo remembers, per object, the resourceVersion an update of raygate's was decided
// on. A pass whose cache still shows that version (the update's own watch event has not
// arrived) would decide on what the update replaced, and its update could only conflict:
// the Service updates of a promotion, decided again one pass later, made a 409 and a Warning
// event. The watch event of the update brings the next pass. A cache of API facts: losing
// it costs one conflict.
type updateMemo struct {
	mu   sync.Mutex
	from map[types.UID]string
}

// stale: obj was read at a version raygate has updated since.
func (m *updateMemo) stale(obj client.Object) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	v, ok := m.from[obj.GetUID()]
	return ok && v == obj.GetResourceVersion()
}

// remember notes that obj, read at version seen, was updated (obj holds the answer). An
// update the API server found unchanged keeps the version: nothing to remember then.
func (m *updateMemo) remember(obj client.Object, seen string) {
	if obj.GetUID() == "" || seen == "" || obj.GetResourceVersion() == seen {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.from == nil || len(m.from) >= memoBound {
		m.from = map[types.UID]string{}
	}
	m.from[obj.GetUID()] = seen
}

// deleteCluster deletes a cluster, and its per-cluster serve Service if the cluster controls
// it, each with a UID precondition: an object of that name made since it was read is never
// deleted. The cluster owns that Service; deleting it now keeps the namespace tidy where
// garbage collection lags (or, in envtest, does not run).
func (r *Reconciler) deleteCluster(ctx context.Context, objects owned.Client, rc *rayv1.RayCluster) error {
	target := &rayv1.RayCluster{ObjectMeta: metav1.ObjectMeta{Namespace: rc.Namespace, Name: rc.Name, UID: rc.UID}}
	if err := objects.Delete(ctx, target, client.PropagationPolicy(metav1.DeletePropagationBackground)); err != nil {
		return fmt.Errorf("deleting RayCluster %s: %w", rc.Name, err)
	}
	serve := &corev1.Service{}
	found, err := objects.Get(ctx, types.NamespacedName{Namespace: rc.Namespace, Name: rayspec.ClusterServeServiceName(rc.Name)}, serve)
	if err != nil || !found || !ownerref.ControlledBy(serve, rc) {
		return err
	}
	if err := objects.Delete(ctx, serve); err != nil {
		return fmt.Errorf("deleting Service %s: %w", serve.Name, err)
	}
	return nil
}
