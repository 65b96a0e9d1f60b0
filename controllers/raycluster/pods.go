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
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/expectations"
	"github.com/raygate/raygate/internal/features"
	"github.com/raygate/raygate/internal/rayspec"
	"github.com/raygate/raygate/internal/version"
)

// reconcilePods brings the pods to the desired shape, in the seed's order of precedence:
// suspend, Recreate, head pod, then each worker group. A step that deleted pods ends the
// pass: the next pass (triggered by the deletions) starts from what the cache then shows.
func (r *Reconciler) reconcilePods(ctx context.Context, p *pass) error {
	rc := p.cluster
	gate := r.Gates.Enabled(features.RayClusterStatusConditions)
	suspend := ptr.Deref(rc.Spec.Suspend, false)
	state := suspendStatus(rc.Status.Conditions)
	all := active(p.pods)
	if state == rayv1.RayClusterSuspending || (!gate && suspend) {
		return r.deleteAll(ctx, p, all, "the cluster is suspended", nil)
	}
	if gate && (state == rayv1.RayClusterSuspended || suspend) {
		return nil // suspended, or about to be once the status says Suspending
	}

	_, heads := splitByNodeType(all)
	recreate, restamp := recreateDecision(&rc.Spec, heads, p.hash, version.Version)
	if restamp {
		if err := r.restampHead(ctx, &heads[0], p.hash); err != nil {
			return err
		}
	}
	if recreate {
		return r.deleteAll(ctx, p, all, "the spec changed and upgradeStrategy is Recreate", nil)
	}

	done, err := r.reconcileHead(ctx, p, heads)
	if err != nil || done {
		return err
	}
	for i := range rc.Spec.WorkerGroupSpecs {
		done, err := r.reconcileWorkerGroup(ctx, p, i)
		if err != nil || done {
			return err
		}
	}
	return nil
}

// groupPods are the active pods of one worker group.
func groupPods(pods []corev1.Pod, group string) []corev1.Pod {
	var out []corev1.Pod
	for _, pod := range pods {
		if pod.Labels[rayv1.NodeTypeLabelKey] == string(rayv1.WorkerNode) && pod.Labels[rayv1.NodeGroupLabelKey] == group && pod.DeletionTimestamp.IsZero() {
			out = append(out, pod)
		}
	}
	return out
}

// deleteAll deletes the given active pods of the cluster in one DeleteAllOf call (group nil:
// every pod; else the group's pods).
func (r *Reconciler) deleteAll(ctx context.Context, p *pass, pods []corev1.Pod, why string, group *string) error {
	if len(pods) == 0 {
		return nil
	}
	if ok, err := r.Expectations.IsClusterSatisfied(ctx, r.Client, p.cluster.Namespace, p.cluster.Name); err != nil || !ok {
		return err // the last deletions are not visible yet; never delete twice
	}
	sel := client.MatchingLabels{rayv1.ClusterLabelKey: p.cluster.Name}
	if group != nil {
		sel[rayv1.NodeGroupLabelKey] = *group
		sel[rayv1.NodeTypeLabelKey] = string(rayv1.WorkerNode)
	}
	if err := r.DeleteAllOf(ctx, &corev1.Pod{}, client.InNamespace(p.cluster.Namespace), sel); err != nil {
		r.warn(p, EventFailedDeleteAllPods, actionDelete, "Failed to delete pods (%s): %v", why, err)
		return failure(rayv1.FailedDeleteAllPods, "deleting all pods: %w", err)
	}
	for _, pod := range pods {
		r.Expectations.Expect(pod.Namespace, p.cluster.Name, podGroupKey(&pod), pod.Name, expectations.Delete)
	}
	r.normal(p, EventDeletedAllPods, actionDelete, "Deleted %d pods: %s", len(pods), why)
	return nil
}

// podGroupKey is the expectations group of a pod.
func podGroupKey(pod *corev1.Pod) string {
	if pod.Labels[rayv1.NodeTypeLabelKey] == string(rayv1.HeadNode) {
		return expectations.HeadGroup
	}
	return pod.Labels[rayv1.NodeGroupLabelKey]
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

// reconcileHead keeps exactly one healthy head pod. done ends the pass.
func (r *Reconciler) reconcileHead(ctx context.Context, p *pass, heads []corev1.Pod) (done bool, err error) {
	rc := p.cluster
	ok, err := r.Expectations.IsSatisfied(ctx, r.Client, rc.Namespace, rc.Name, expectations.HeadGroup)
	if err != nil {
		return true, err
	}
	if !ok {
		p.log.V(1).Info("head pod changes not in cache yet; head reconciled later")
		return false, nil
	}
	switch len(heads) {
	case 1:
		del, why := shouldDeletePod(&heads[0])
		if !del {
			return false, nil
		}
		ok, err := r.deletePod(ctx, p, &heads[0], expectations.HeadGroup)
		if err != nil {
			r.warn(p, EventFailedDeleteHeadPod, actionDelete, "Failed to delete head pod %s: %v", heads[0].Name, err)
			return true, failure(rayv1.FailedDeleteHeadPod, "deleting head pod %s: %w", heads[0].Name, err)
		}
		if ok {
			r.normal(p, EventDeletedHeadPod, actionDelete, "Deleted head pod %s: %s", heads[0].Name, why)
		}
		return true, nil
	case 0:
		if skipHeadRestart(rc) {
			if rc.Status.Head.PodName != "" { // report once, when the head pod disappears
				r.normal(p, EventSkippedHeadPodRestart, actionSkip, "Head pod not recreated: the cluster is provisioned and annotated %s=true", rayv1.DisableProvisionedHeadRestartKey)
			}
			return true, nil
		}
		pod := BuildHeadPod(rc, p.hash)
		if err := r.Create(ctx, pod); err != nil {
			r.warn(p, EventFailedCreateHeadPod, actionCreate, "Failed to create head pod: %v", err)
			return true, failure(rayv1.FailedCreateHeadPod, "creating head pod: %w", err)
		}
		r.Expectations.Expect(rc.Namespace, rc.Name, expectations.HeadGroup, pod.Name, expectations.Create)
		r.normal(p, EventCreatedHeadPod, actionCreate, "Created head pod %s", pod.Name)
		return false, nil
	default:
		names := make([]string, len(heads))
		for i := range heads {
			names[i] = heads[i].Name
		}
		msg := fmt.Sprintf("%d head pods found (%s); delete the extra ones, raygate never picks one", len(heads), strings.Join(names, ", "))
		r.warn(p, EventMultipleHeadPods, actionSkip, "%s", msg)
		return true, failure(rayv1.MultipleHeadPods, "%s", msg)
	}
}

// deletePod deletes one pod and records the expectation; a pod already gone is not an error
// (deleted is then false). The caller reports the deletion.
func (r *Reconciler) deletePod(ctx context.Context, p *pass, pod *corev1.Pod, group string) (deleted bool, err error) {
	err = r.Delete(ctx, pod, client.Preconditions{UID: &pod.UID})
	switch {
	case apierrors.IsNotFound(err) || apierrors.IsConflict(err):
		return false, nil // gone already, or replaced by a pod of the same name
	case err != nil:
		return false, err
	}
	r.Expectations.Expect(pod.Namespace, p.cluster.Name, group, pod.Name, expectations.Delete)
	return true, nil
}

// createWorkers creates worker pods of a group, one per entry of idx (entries are nil unless
// RayMultiHostIndexing is on), and reports them in one event. The creates run concurrently in
// slow-start batches (1, 2, 4, …) as the ReplicaSet controller's do: a pass does not wait one
// API round trip per pod, and a create that keeps failing (quota, admission) stops after a
// small batch instead of being tried for every pod.
func (r *Reconciler) createWorkers(ctx context.Context, p *pass, g *rayv1.WorkerGroupSpec, idx []*ReplicaIndex) error {
	var (
		mu      sync.Mutex
		created []string
	)
	err := slowStartBatches(len(idx), func(i int) error {
		pod := BuildWorkerPod(p.cluster, g, idx[i])
		if err := r.Create(ctx, pod); err != nil {
			return err
		}
		r.Expectations.Expect(pod.Namespace, p.cluster.Name, g.GroupName, pod.Name, expectations.Create)
		mu.Lock()
		created = append(created, pod.Name)
		mu.Unlock()
		return nil
	})
	if len(created) > 0 {
		slices.Sort(created)
		r.normal(p, EventCreatedWorkerPod, actionCreate, "Created %d worker pods of group %s: %s", len(created), g.GroupName, strings.Join(created, ", "))
	}
	if err != nil {
		r.warn(p, EventFailedCreateWorkerPod, actionCreate, "Failed to create a worker pod of group %s: %v", g.GroupName, err)
		return failure(rayv1.FailedCreateWorkerPod, "creating a worker pod of group %s: %w", g.GroupName, err)
	}
	return nil
}

// slowStartBatches calls fn(0..n-1) in concurrent batches of 1, 2, 4, … and stops after the
// first batch with a failure, returning that batch's first error.
func slowStartBatches(n int, fn func(i int) error) error {
	for start, size := 0, 1; start < n; start, size = start+size, size*2 {
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

// deleteWorkers deletes worker pods of a group and reports them in one event.
func (r *Reconciler) deleteWorkers(ctx context.Context, p *pass, g *rayv1.WorkerGroupSpec, pods []corev1.Pod, why string) error {
	var deleted []string
	defer func() {
		if len(deleted) > 0 {
			r.normal(p, EventDeletedWorkerPod, actionDelete, "Deleted %d worker pods of group %s (%s): %s", len(deleted), g.GroupName, why, strings.Join(deleted, ", "))
		}
	}()
	for i := range pods {
		ok, err := r.deletePod(ctx, p, &pods[i], g.GroupName)
		if err != nil {
			r.warn(p, EventFailedDeleteWorkerPod, actionDelete, "Failed to delete worker pod %s: %v", pods[i].Name, err)
			return failure(rayv1.FailedDeleteWorkerPod, "deleting worker pod %s: %w", pods[i].Name, err)
		}
		if ok {
			deleted = append(deleted, pods[i].Name)
		}
	}
	return nil
}

// reconcileWorkerGroup keeps one group at its desired size. done ends the pass.
func (r *Reconciler) reconcileWorkerGroup(ctx context.Context, p *pass, i int) (done bool, err error) {
	rc := p.cluster
	g := &rc.Spec.WorkerGroupSpecs[i]
	ok, err := r.Expectations.IsSatisfied(ctx, r.Client, rc.Namespace, rc.Name, g.GroupName)
	if err != nil {
		return true, err
	}
	if !ok {
		p.log.V(1).Info("worker pod changes not in cache yet; group reconciled later", "group", g.GroupName)
		return false, nil
	}
	pods := groupPods(p.pods, g.GroupName)
	if ptr.Deref(g.Suspend, false) {
		return false, r.deleteAll(ctx, p, pods, "worker group "+g.GroupName+" is suspended", &g.GroupName)
	}
	indexing := r.Gates.Enabled(features.RayMultiHostIndexing)
	if indexing && rayspec.NumOfHosts(*g) > 1 {
		return r.reconcileMultiHostGroup(ctx, p, i, pods)
	}

	var unhealthy []corev1.Pod
	var whys []string
	for _, pod := range pods {
		if del, why := shouldDeletePod(&pod); del {
			unhealthy, whys = append(unhealthy, pod), append(whys, why)
		}
	}
	if len(unhealthy) > 0 {
		// Replacements are created once the deletions are visible in the cache.
		return true, r.deleteWorkers(ctx, p, g, unhealthy, strings.Join(whys, "; "))
	}

	removed := map[string]bool{}
	if names := g.ScaleStrategy.WorkersToDelete; len(names) > 0 {
		var named []corev1.Pod
		for _, pod := range pods {
			if contains(names, pod.Name) {
				named = append(named, pod)
				removed[pod.Name] = true
			}
		}
		if err := r.deleteWorkers(ctx, p, g, named, "listed in workersToDelete"); err != nil {
			return true, err
		}
		p.clearWorkersToDelete = append(p.clearWorkersToDelete, g.GroupName)
	}
	var running []corev1.Pod
	for _, pod := range pods {
		if !removed[pod.Name] {
			running = append(running, pod)
		}
	}

	diff := int(rayspec.WorkerGroupDesiredPods(*g)) - len(running)
	switch {
	case diff > 0:
		idx := make([]*ReplicaIndex, diff)
		if indexing {
			used := map[int]bool{}
			for i := range running {
				used[replicaIndex(&running[i])] = true
			}
			for n, free := range freeIndices(used, diff) {
				idx[n] = &ReplicaIndex{Index: free}
			}
		}
		if err := r.createWorkers(ctx, p, g, idx); err != nil {
			return true, err
		}
	case diff < 0:
		if !randomDeleteAllowed(rayspec.AutoscalingEnabled(&rc.Spec), r.RandomPodDelete) {
			return false, nil // the autoscaler chooses which workers go, through workersToDelete
		}
		if err := r.deleteWorkers(ctx, p, g, podsToRemove(running, -diff), "scaling down"); err != nil {
			return true, err
		}
	}
	return false, nil
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// reconcileMultiHostGroup manages a multi-host group (RayMultiHostIndexing) in whole
// replicas: a replica missing a pod, or with an unhealthy pod, is deleted entirely, and
// workersToDelete removes the replica of each named pod.
func (r *Reconciler) reconcileMultiHostGroup(ctx context.Context, p *pass, i int, pods []corev1.Pod) (done bool, err error) {
	rc := p.cluster
	g := &rc.Spec.WorkerGroupSpecs[i]
	hosts := int(rayspec.NumOfHosts(*g))
	replicas, orphans := groupReplicas(pods)
	if len(orphans) > 0 {
		return true, r.deleteWorkers(ctx, p, g, orphans, "not part of a multi-host replica")
	}
	deleted := false
	for _, rep := range replicas {
		if len(rep.Pods) != hosts {
			if err := r.deleteWorkers(ctx, p, g, rep.Pods, fmt.Sprintf("replica %s has %d of %d hosts", rep.Name, len(rep.Pods), hosts)); err != nil {
				return true, err
			}
			deleted = true
		}
	}
	if deleted {
		return true, nil
	}
	for _, rep := range replicas {
		for k := range rep.Pods {
			if del, why := shouldDeletePod(&rep.Pods[k]); del {
				if err := r.deleteWorkers(ctx, p, g, rep.Pods, "replica "+rep.Name+": "+why); err != nil {
					return true, err
				}
				deleted = true
				break
			}
		}
	}
	if deleted {
		return true, nil
	}

	var kept []multiHostReplica
	if names := g.ScaleStrategy.WorkersToDelete; len(names) > 0 {
		for _, rep := range replicas {
			named := false
			for k := range rep.Pods {
				named = named || contains(names, rep.Pods[k].Name)
			}
			if !named {
				kept = append(kept, rep)
				continue
			}
			if err := r.deleteWorkers(ctx, p, g, rep.Pods, "replica "+rep.Name+" has a pod listed in workersToDelete"); err != nil {
				return true, err
			}
		}
		p.clearWorkersToDelete = append(p.clearWorkersToDelete, g.GroupName)
	} else {
		kept = replicas
	}

	diff := int(rayspec.WorkerGroupDesiredReplicas(*g)) - len(kept)
	switch {
	case diff > 0:
		used := map[int]bool{}
		for _, rep := range kept {
			used[rep.Index] = true
		}
		var idx []*ReplicaIndex
		for _, index := range freeIndices(used, diff) {
			name := g.GroupName + "-" + utilrand.String(5)
			for host := 0; host < hosts; host++ {
				idx = append(idx, &ReplicaIndex{Index: index, Name: name, Host: host, MultiHost: true})
			}
		}
		if err := r.createWorkers(ctx, p, g, idx); err != nil {
			return true, err
		}
	case diff < 0:
		if !randomDeleteAllowed(rayspec.AutoscalingEnabled(&rc.Spec), r.RandomPodDelete) {
			return false, nil
		}
		for _, rep := range replicasToRemove(kept, -diff) {
			if err := r.deleteWorkers(ctx, p, g, rep.Pods, "scaling down replica "+rep.Name); err != nil {
				return true, err
			}
		}
	}
	return false, nil
}
