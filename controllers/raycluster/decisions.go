package raycluster

import (
	"cmp"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
)

// Pure decisions of the pod reconciliation. Each takes plain values and is table-tested.

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

// active drops pods that are already terminating.
func active(pods []corev1.Pod) []corev1.Pod {
	out := make([]corev1.Pod, 0, len(pods))
	for _, p := range pods {
		if p.DeletionTimestamp.IsZero() {
			out = append(out, p)
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
// operator runs with ENABLE_RANDOM_POD_DELETE=true.
func randomDeleteAllowed(autoscaling bool, env string) bool {
	return !autoscaling || strings.EqualFold(env, "true")
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// podsToRemove picks n pods to remove on scale-down, cheapest loss first: not running, then
// not ready, then the youngest (like a ReplicaSet).
func podsToRemove(pods []corev1.Pod, n int) []corev1.Pod {
	if n <= 0 {
		return nil
	}
	sorted := slices.Clone(pods)
	rank := func(p *corev1.Pod) int {
		switch {
		case p.Status.Phase != corev1.PodRunning:
			return 0
		case !podReady(p):
			return 1
		}
		return 2
	}
	slices.SortStableFunc(sorted, func(a, b corev1.Pod) int {
		if c := cmp.Compare(rank(&a), rank(&b)); c != 0 {
			return c
		}
		if c := b.CreationTimestamp.Compare(a.CreationTimestamp.Time); c != 0 {
			return c
		}
		return cmp.Compare(a.Name, b.Name)
	})
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

// multiHostReplica is one replica of a multi-host group: the pods sharing a replica name.
type multiHostReplica struct {
	Name  string
	Index int
	Pods  []corev1.Pod
}

// groupReplicas groups a multi-host group's pods by replica name, sorted by index then name.
// Pods without a replica name cannot belong to an atomic replica and are returned apart.
func groupReplicas(pods []corev1.Pod) (replicas []multiHostReplica, orphans []corev1.Pod) {
	byName := map[string]*multiHostReplica{}
	for _, p := range pods {
		name := p.Labels[rayv1.WorkerReplicaNameLabelKey]
		if name == "" {
			orphans = append(orphans, p)
			continue
		}
		r := byName[name]
		if r == nil {
			r = &multiHostReplica{Name: name, Index: replicaIndex(&p)}
			byName[name] = r
		}
		r.Pods = append(r.Pods, p)
	}
	for _, r := range byName {
		replicas = append(replicas, *r)
	}
	slices.SortFunc(replicas, func(a, b multiHostReplica) int {
		if c := cmp.Compare(a.Index, b.Index); c != 0 {
			return c
		}
		return cmp.Compare(a.Name, b.Name)
	})
	return replicas, orphans
}

// replicasToRemove picks n replicas to remove on scale-down: those not fully ready first,
// then the highest indices, so indices stay dense.
func replicasToRemove(replicas []multiHostReplica, n int) []multiHostReplica {
	if n <= 0 {
		return nil
	}
	sorted := slices.Clone(replicas)
	ready := func(r multiHostReplica) int {
		for i := range r.Pods {
			if r.Pods[i].Status.Phase != corev1.PodRunning || !podReady(&r.Pods[i]) {
				return 0
			}
		}
		return 1
	}
	slices.SortStableFunc(sorted, func(a, b multiHostReplica) int {
		if c := cmp.Compare(ready(a), ready(b)); c != 0 {
			return c
		}
		return cmp.Compare(b.Index, a.Index)
	})
	return sorted[:min(n, len(sorted))]
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
