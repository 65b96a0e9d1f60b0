package raycluster

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/expectations"
	"github.com/raygate/raygate/internal/raypod"
	"github.com/raygate/raygate/internal/version"
)

// applyPodPlan carries out a plan in order and stops at the first failure: whatever is left
// is planned again by the next pass, from what the cache then shows. Every create and delete
// is recorded in the expectations, so no pass acts twice on a change the cache does not show
// yet.
func (r *Reconciler) applyPodPlan(ctx context.Context, p *pass, plan podPlan) error {
	if plan.Wait != "" {
		p.log.V(1).Info("pods left as they are", "why", plan.Wait)
	}
	if plan.Restamp != nil {
		if err := r.restampHead(ctx, plan.Restamp, p.hash); err != nil {
			return err
		}
	}
	if plan.DeleteAll != nil {
		return r.deleteAtOnce(ctx, p, *plan.DeleteAll)
	}
	for _, g := range plan.Groups {
		if g.Wait != "" {
			p.log.V(1).Info("group left as it is", "group", g.Group, "why", g.Wait)
		}
		if g.MultipleHeads != "" {
			p.warn(EventMultipleHeadPods, actionSkip, "%s", g.MultipleHeads)
			return failure(rayv1.MultipleHeadPods, "%s", g.MultipleHeads)
		}
		if g.DeleteAll != nil {
			if err := r.deleteAtOnce(ctx, p, *g.DeleteAll); err != nil {
				return err
			}
		}
		for _, d := range g.Deletes {
			if err := r.deleteOneByOne(ctx, p, g.Group, d); err != nil {
				return err
			}
		}
		if g.Create.Pods() > 0 {
			if err := r.createPods(ctx, p, g); err != nil {
				return err
			}
		}
		if g.ReportSkippedRestart {
			p.normal(EventSkippedHeadPodRestart, actionSkip, "Head pod not recreated: the cluster is provisioned and annotated %s=true", rayv1.DisableProvisionedHeadRestartKey)
		}
	}
	return nil
}

// restampHead records the current operator version and spec hash on a head pod built by
// another version, so an operator upgrade does not look like a spec change.
func (r *Reconciler) restampHead(ctx context.Context, head *corev1.Pod, hash string) error {
	patch := client.MergeFrom(head.DeepCopy())
	h := head.DeepCopy()
	h.Annotations[rayv1.HashWithoutReplicasAndWorkersToDeleteKey] = hash
	h.Annotations[rayv1.KubeRayVersionKey] = version.Version
	if err := r.Patch(ctx, h, patch); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("re-stamping head pod %s with operator version %s: %w", head.Name, version.Version, err)
	}
	return nil
}

// deleteAtOnce deletes the pods of the cluster or of one worker group (d): the pods
// the pass read, all of which the cluster controls, each with its UID as precondition, so a
// pod that only carries the cluster's labels, or one made under a deleted pod's name since,
// is never deleted (a DeleteAllOf by label would delete any pod with the labels). The
// deletes run in the same capped slow-start batches as creates.
func (r *Reconciler) deleteAtOnce(ctx context.Context, p *pass, d deletion) error {
	var (
		mu      sync.Mutex
		deleted int
	)
	err := slowStartBatches(len(d.Pods), func(i int) error {
		pod := &d.Pods[i]
		err := r.Delete(ctx, pod, client.Preconditions{UID: &pod.UID})
		switch {
		case apierrors.IsNotFound(err) || apierrors.IsConflict(err):
			return nil // gone already, or replaced by a pod of the same name
		case err != nil:
			return err
		}
		r.Expectations.Expect(pod.Namespace, p.cluster.Name, podGroupKey(pod), pod.Name, expectations.Delete)
		mu.Lock()
		deleted++
		mu.Unlock()
		return nil
	})
	if err != nil {
		p.warn(EventFailedDeleteAllPods, actionDelete, "Failed to delete pods (%s; %d deleted): %v", d.Reason, deleted, err)
		return failure(rayv1.FailedDeleteAllPods, "deleting all pods: %w", err)
	}
	p.normal(EventDeletedAllPods, actionDelete, "Deleted %d pods: %s", deleted, d.Reason)
	return nil
}

// podGroupKey is the expectations group of a pod.
func podGroupKey(pod *corev1.Pod) string {
	if pod.Labels[rayv1.NodeTypeLabelKey] == string(rayv1.HeadNode) {
		return expectations.HeadGroup
	}
	return pod.Labels[rayv1.NodeGroupLabelKey]
}

// deleteOneByOne deletes the pods of a deletion, each only if it is still the pod that was
// read (same UID), and reports those it deleted in one event.
func (r *Reconciler) deleteOneByOne(ctx context.Context, p *pass, group string, d deletion) error {
	var deleted []string
	defer func() {
		switch {
		case len(deleted) == 0:
		case group == expectations.HeadGroup:
			p.normal(EventDeletedHeadPod, actionDelete, "Deleted head pod %s: %s", deleted[0], d.Reason)
		default:
			p.normal(EventDeletedWorkerPod, actionDelete, "Deleted %d worker pods of group %s (%s): %s", len(deleted), group, d.Reason, strings.Join(deleted, ", "))
		}
	}()
	for i := range d.Pods {
		pod := &d.Pods[i]
		err := r.Delete(ctx, pod, client.Preconditions{UID: &pod.UID})
		switch {
		case apierrors.IsNotFound(err) || apierrors.IsConflict(err):
			continue // gone already, or replaced by a pod of the same name
		case err != nil && group == expectations.HeadGroup:
			p.warn(EventFailedDeleteHeadPod, actionDelete, "Failed to delete head pod %s: %v", pod.Name, err)
			return failure(rayv1.FailedDeleteHeadPod, "deleting head pod %s: %w", pod.Name, err)
		case err != nil:
			p.warn(EventFailedDeleteWorkerPod, actionDelete, "Failed to delete worker pod %s: %v", pod.Name, err)
			return failure(rayv1.FailedDeleteWorkerPod, "deleting worker pod %s: %w", pod.Name, err)
		}
		r.Expectations.Expect(pod.Namespace, p.cluster.Name, group, pod.Name, expectations.Delete)
		deleted = append(deleted, pod.Name)
	}
	return nil
}

// createPods creates the head pod or a worker group's pods and reports them in one event.
// The creates run concurrently in slow-start batches (1, 2, 4, … 64) as the ReplicaSet
// controller's do: a pass does not wait one API round trip per pod, and a create that keeps
// failing (quota, admission) stops after a small batch instead of being tried for every pod.
// A refusal is shown in the ReplicaFailure condition and a Warning event with the refusing
// admission's own text, and returned, so the next try waits for the rate limiter's backoff.
func (r *Reconciler) createPods(ctx context.Context, p *pass, g groupPlan) error {
	group, c := g.Group, g.Create
	build := podBuilder(p, g, r.Pods)
	var (
		mu      sync.Mutex
		created []string
	)
	err := slowStartBatches(c.Pods(), func(i int) error {
		pod := build(i)
		if r.BatchScheduler != nil {
			r.BatchScheduler.DecoratePod(p.cluster, pod)
		}
		if err := r.Create(ctx, pod); err != nil {
			return err
		}
		r.Expectations.Expect(pod.Namespace, p.cluster.Name, group, pod.Name, expectations.Create)
		mu.Lock()
		created = append(created, pod.Name)
		mu.Unlock()
		return nil
	})
	slices.Sort(created)
	generateName := build(0).GenerateName
	switch {
	case group == expectations.HeadGroup && err != nil:
		f := refused(rayv1.FailedCreateHeadPod, "creating head pod", err, generateName)
		p.warn(EventFailedCreateHeadPod, actionCreate, "Failed to create head pod: %s", refusalText(err, generateName))
		return f
	case group == expectations.HeadGroup:
		p.normal(EventCreatedHeadPod, actionCreate, "Created head pod %s", created[0])
		return nil
	}
	if len(created) > 0 {
		p.normal(EventCreatedWorkerPod, actionCreate, "Created %d worker pods of group %s: %s", len(created), group, strings.Join(created, ", "))
	}
	if err != nil {
		p.warn(EventFailedCreateWorkerPod, actionCreate, "Failed to create a worker pod of group %s: %s", group, refusalText(err, generateName))
		return refused(rayv1.FailedCreateWorkerPod, "creating a worker pod of group "+group, err, generateName)
	}
	return nil
}

// podBuilder returns the i-th pod of a group's creation: pod i is host i%Hosts of new
// replica i/Hosts. Each new multi-host replica gets a random name, as KubeRay's do.
func podBuilder(p *pass, g groupPlan, s raypod.Settings) func(i int) *corev1.Pod {
	if g.Spec == nil {
		return func(int) *corev1.Pod { return raypod.HeadPod(p.cluster, p.hash, s) }
	}
	c := g.Create
	var names []string
	if c.Hosts > 1 {
		names = make([]string, c.Replicas)
		for i := range names {
			names[i] = g.Group + "-" + utilrand.String(5)
		}
	}
	return func(i int) *corev1.Pod {
		var idx *raypod.ReplicaIndex
		if c.Indices != nil {
			replica := i / c.Hosts
			idx = &raypod.ReplicaIndex{Index: c.Indices[replica]}
			if c.Hosts > 1 {
				idx.Name, idx.Host, idx.MultiHost = names[replica], i%c.Hosts, true
			}
		}
		return raypod.WorkerPod(p.cluster, g.Spec, idx, s)
	}
}

// maxCreatesInFlight caps a slow-start batch. Each create in flight holds a built pod and
// its encoding (bounded by admission's pod template size limit), and every reconcile worker
// may run a batch: the cap bounds that memory at workers × 64 pods whatever a group asks
// for. 64 concurrent creates already keep a pass from waiting one round trip per pod (a
// pass's maxCreatesPerPass creates take 13 batches, not 500 round trips); more only queue
// in the API server's priority and fairness, or behind the client's rate limiter, while
// holding their pods.
const maxCreatesInFlight = 64

// slowStartBatches calls fn(0..n-1) in concurrent batches of 1, 2, 4, … up to
// maxCreatesInFlight and stops after the first batch with a failure, returning that
// batch's first error.
func slowStartBatches(n int, fn func(i int) error) error {
	for start, size := 0, 1; start < n; start, size = start+size, min(size*2, maxCreatesInFlight) {
		size = min(size, n-start)
		errs := make([]error, size)
		var wg sync.WaitGroup
		for j := range size {
			wg.Go(func() { errs[j] = fn(start + j) })
		}
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				return err
			}
		}
	}
	return nil
}

// clearHandledWorkersToDelete removes the workersToDelete of the groups whose pods the pass
// deleted from the spec. The update carries the resourceVersion read, so a concurrent
// autoscaler write is never overwritten.
func (r *Reconciler) clearHandledWorkersToDelete(ctx context.Context, p *pass, groups []string) error {
	if len(groups) == 0 {
		return nil
	}
	obj := p.object.DeepCopy()
	for i := range obj.Spec.WorkerGroupSpecs {
		if slices.Contains(groups, obj.Spec.WorkerGroupSpecs[i].GroupName) {
			obj.Spec.WorkerGroupSpecs[i].ScaleStrategy.WorkersToDelete = nil
		}
	}
	if err := r.Update(ctx, obj); err != nil {
		p.warn(EventFailedClearWorkersToDel, actionUpdate, "Failed to clear workersToDelete: %v", err)
		return fmt.Errorf("clearing workersToDelete: %w", err)
	}
	// Keep the status write on the new resourceVersion.
	status := p.object.Status
	*p.object = *obj
	p.object.Status = status
	return nil
}
