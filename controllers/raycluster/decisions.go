package raycluster

import (
	"cmp"
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/rayspec"
)

// Pure decisions the pod planner is built from. Each takes plain values and is table-tested.

// suspendStatus is RayClusterSuspending or RayClusterSuspended when that condition is true,
// else "".
func suspendStatus(conds []metav1.Condition) rayv1.RayClusterConditionType {
	for _, t := range []rayv1.RayClusterConditionType{rayv1.RayClusterSuspending, rayv1.RayClusterSuspended} {
		if meta.IsStatusConditionTrue(conds, string(t)) {
			return t
		}
	}
	return ""
}

// rayContainerTerminated is the terminated state of the pod's Ray container, if it is
// terminated. Container statuses are matched by name: their order is not the spec's.
func rayContainerTerminated(pod *corev1.Pod) *corev1.ContainerStateTerminated {
	if len(pod.Spec.Containers) == 0 {
		return nil
	}
	name := pod.Spec.Containers[rayv1.RayContainerIndex].Name
	for _, s := range pod.Status.ContainerStatuses {
		if s.Name == name {
			return s.State.Terminated
		}
	}
	return nil
}

// shouldDeletePod decides whether a pod is beyond repair: it reached a terminal phase, or its
// Ray container exited and the kubelet will not restart it. A pod whose Ray container
// exited under restartPolicy Always/OnFailure is left to the kubelet.
func shouldDeletePod(pod *corev1.Pod) (bool, string) {
	switch pod.Status.Phase {
	case corev1.PodFailed, corev1.PodSucceeded:
		return true, "pod " + pod.Name + " is in terminal phase " + string(pod.Status.Phase)
	}
	if t := rayContainerTerminated(pod); pod.Status.Phase == corev1.PodRunning && t != nil {
		if pod.Spec.RestartPolicy == corev1.RestartPolicyNever {
			return true, "the Ray container of pod " + pod.Name + " terminated (exit code " + strconv.Itoa(int(t.ExitCode)) + ") and restartPolicy is Never"
		}
	}
	return false, ""
}

// active drops pods that are already terminating. When none is (most passes) it returns
// pods itself, capped so an append copies, instead of copying every pod; the result is
// read only either way.
func active(pods []corev1.Pod) []corev1.Pod {
	n := 0
	for i := range pods {
		if pods[i].DeletionTimestamp.IsZero() {
			n++
		}
	}
	if n == len(pods) {
		return pods[:n:n]
	}
	out := make([]corev1.Pod, 0, n)
	for i := range pods {
		if pods[i].DeletionTimestamp.IsZero() {
			out = append(out, pods[i])
		}
	}
	return out
}

// recreateDecision implements the Recreate strategy: recreate all pods when the head pod was
// built from another spec hash. A head pod built by another operator version is re-stamped
// instead (an operator upgrade must not restart every cluster): restamp is then true.
func recreateDecision(spec *rayv1.RayClusterSpec, heads []corev1.Pod, hash, operatorVersion string) (recreate, restamp bool) {
	s := spec.UpgradeStrategy
	if s == nil || s.Type == nil || *s.Type != rayv1.RayClusterRecreate || len(heads) == 0 {
		return false, false
	}
	a := heads[0].Annotations
	if v := a[rayv1.KubeRayVersionKey]; v != "" && v != operatorVersion {
		return false, true
	}
	got := a[rayv1.HashWithoutReplicasAndWorkersToDeleteKey]
	return got != "" && got != hash, false
}

// randomDeleteAllowed: without the autoscaler raygate picks the workers to remove on
// scale-down; with it, only the autoscaler does (through workersToDelete), unless the
// operator runs with ENABLE_RANDOM_POD_DELETE=true (randomPodDelete).
func randomDeleteAllowed(autoscaling, randomPodDelete bool) bool {
	return !autoscaling || randomPodDelete
}

// workerUnit is what a worker group is managed in: one pod, or the pods of one replica of a
// multi-host group (the pods sharing a replica name).
type workerUnit struct {
	// Name is the pod's name, or the replica's name.
	Name string
	// Index is the ray.io/worker-group-replica-index, or -1.
	Index int
	Pods  []corev1.Pod
}

// workerUnits splits a group's pods into units. With atomic (multi-host replicas) the pods are
// grouped by replica name and sorted by index then name; pods without a replica name cannot
// belong to a replica and are returned apart.
func workerUnits(pods []corev1.Pod, atomic bool) (units []workerUnit, orphans []corev1.Pod) {
	if !atomic {
		units = make([]workerUnit, 0, len(pods))
		for i := range pods {
			units = append(units, workerUnit{Name: pods[i].Name, Index: replicaIndex(&pods[i]), Pods: pods[i : i+1]})
		}
		return units, nil
	}
	byName := map[string]*workerUnit{}
	for _, p := range pods {
		name := p.Labels[rayv1.WorkerReplicaNameLabelKey]
		if name == "" {
			orphans = append(orphans, p)
			continue
		}
		u := byName[name]
		if u == nil {
			u = &workerUnit{Name: name, Index: replicaIndex(&p)}
			byName[name] = u
		}
		u.Pods = append(u.Pods, p)
	}
	for _, u := range byName {
		units = append(units, *u)
	}
	slices.SortFunc(units, func(a, b workerUnit) int {
		if c := cmp.Compare(a.Index, b.Index); c != 0 {
			return c
		}
		return cmp.Compare(a.Name, b.Name)
	})
	return units, orphans
}

// incomplete are the units without exactly hosts pods.
func incomplete(units []workerUnit, hosts int) []workerUnit {
	var out []workerUnit
	for _, u := range units {
		if len(u.Pods) != hosts {
			out = append(out, u)
		}
	}
	return out
}

// unhealthy are the units with a pod beyond repair, with why by unit name (the first such
// pod's reason).
func unhealthy(units []workerUnit) ([]workerUnit, map[string]string) {
	var out []workerUnit
	whys := map[string]string{}
	for _, u := range units {
		for k := range u.Pods {
			if del, why := shouldDeletePod(&u.Pods[k]); del {
				out = append(out, u)
				whys[u.Name] = why
				break
			}
		}
	}
	return out, whys
}

// splitNamed splits units into those with no pod in names and those with one.
func splitNamed(units []workerUnit, names []string) (kept, named []workerUnit) {
	listed := make(map[string]bool, len(names))
	for _, n := range names {
		listed[n] = true
	}
	for _, u := range units {
		if slices.ContainsFunc(u.Pods, func(p corev1.Pod) bool { return listed[p.Name] }) {
			named = append(named, u)
		} else {
			kept = append(kept, u)
		}
	}
	return kept, named
}

// unitsToRemove picks n units to remove on scale-down, the cheapest loss first. Pods go as a
// ReplicaSet's do: not running, then not ready, then the youngest. Multi-host replicas go
// not wholly ready first, then the highest indices, so indices stay dense.
func unitsToRemove(units []workerUnit, n int, atomic bool) []workerUnit {
	if n <= 0 {
		return nil
	}
	sorted := slices.Clone(units)
	if atomic {
		ready := func(u workerUnit) int {
			if slices.ContainsFunc(u.Pods, func(p corev1.Pod) bool { return !rayspec.RunningAndReady(&p) }) {
				return 0
			}
			return 1
		}
		slices.SortStableFunc(sorted, func(a, b workerUnit) int {
			if c := cmp.Compare(ready(a), ready(b)); c != 0 {
				return c
			}
			return cmp.Compare(b.Index, a.Index)
		})
	} else {
		rank := func(p *corev1.Pod) int {
			switch {
			case p.Status.Phase != corev1.PodRunning:
				return 0
			case !rayspec.RunningAndReady(p):
				return 1
			}
			return 2
		}
		slices.SortStableFunc(sorted, func(a, b workerUnit) int {
			pa, pb := &a.Pods[0], &b.Pods[0]
			if c := cmp.Compare(rank(pa), rank(pb)); c != 0 {
				return c
			}
			if c := pb.CreationTimestamp.Compare(pa.CreationTimestamp.Time); c != 0 {
				return c
			}
			return cmp.Compare(pa.Name, pb.Name)
		})
	}
	return sorted[:min(n, len(sorted))]
}

// freeIndices returns the n smallest replica indices not in use, for new replicas.
func freeIndices(used map[int]bool, n int) []int {
	out := make([]int, 0, n)
	for i := 0; len(out) < n; i++ {
		if !used[i] {
			out = append(out, i)
		}
	}
	return out
}

// replicaIndex is a pod's ray.io/worker-group-replica-index label, or -1.
func replicaIndex(p *corev1.Pod) int {
	i, err := strconv.Atoi(p.Labels[rayv1.WorkerReplicaIndexLabelKey])
	if err != nil || i < 0 {
		return -1
	}
	return i
}

// headPods are the pods labelled as the head (one, normally). Only they are copied: a pass
// asks twice, and copying every pod (a Pod is over a kilobyte) was a large share of what a
// pass allocated (docs/benchmarks.md).
func headPods(pods []corev1.Pod) []corev1.Pod {
	var heads []corev1.Pod
	for i := range pods {
		if rayv1.RayNodeType(pods[i].Labels[rayv1.NodeTypeLabelKey]) == rayv1.HeadNode {
			heads = append(heads, pods[i])
		}
	}
	return heads
}

// groupPods are the active pods of one worker group.
func groupPods(pods []corev1.Pod, group string) []corev1.Pod {
	in := func(pod *corev1.Pod) bool {
		return pod.Labels[rayv1.NodeTypeLabelKey] == string(rayv1.WorkerNode) && pod.Labels[rayv1.NodeGroupLabelKey] == group && pod.DeletionTimestamp.IsZero()
	}
	n := 0 // sized first: a Pod is over a kilobyte, and append's regrowth copies it
	for i := range pods {
		if in(&pods[i]) {
			n++
		}
	}
	if n == 0 {
		return nil
	}
	out := make([]corev1.Pod, 0, n)
	for i := range pods {
		if in(&pods[i]) {
			out = append(out, pods[i])
		}
	}
	return out
}

// skipHeadRestart: a provisioned cluster annotated ray.io/disable-provisioned-head-restart
// does not get a new head pod (a RayJob's submitted job cannot survive one).
func skipHeadRestart(rc *rayv1.RayCluster) bool {
	return meta.IsStatusConditionTrue(rc.Status.Conditions, string(rayv1.RayClusterProvisioned)) &&
		rc.Annotations[rayv1.DisableProvisionedHeadRestartKey] == "true"
}

// managedByOther reports whether spec.managedBy hands the cluster to another controller.
func managedByOther(rc *rayv1.RayCluster) bool {
	m := ptr.Deref(rc.Spec.ManagedBy, "")
	return m != "" && m != KubeRayManagerName
}
