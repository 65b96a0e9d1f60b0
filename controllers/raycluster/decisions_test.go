package raycluster

import (
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
)

type podOpt func(*corev1.Pod)

func mkPod(name string, opts ...podOpt) corev1.Pod {
	p := corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{}, CreationTimestamp: metav1.NewTime(time.Unix(1000, 0))},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "ray"}, {Name: "sidecar"}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}},
			ContainerStatuses: []corev1.ContainerStatus{
				{Name: "sidecar", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}},
				{Name: "ray", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}},
	}
	for _, o := range opts {
		o(&p)
	}
	return p
}

func phase(ph corev1.PodPhase) podOpt { return func(p *corev1.Pod) { p.Status.Phase = ph } }
func notReady() podOpt {
	return func(p *corev1.Pod) { p.Status.Conditions[0].Status = corev1.ConditionFalse }
}
func restart(r corev1.RestartPolicy) podOpt { return func(p *corev1.Pod) { p.Spec.RestartPolicy = r } }
func rayExited(code int32) podOpt {
	return func(p *corev1.Pod) {
		p.Status.ContainerStatuses[1].State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code}}
	}
}
func sidecarExited() podOpt {
	return func(p *corev1.Pod) {
		p.Status.ContainerStatuses[0].State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1}}
	}
}
func created(sec int64) podOpt {
	return func(p *corev1.Pod) { p.CreationTimestamp = metav1.NewTime(time.Unix(sec, 0)) }
}
func label(k, v string) podOpt { return func(p *corev1.Pod) { p.Labels[k] = v } }
func annotate(k, v string) podOpt {
	return func(p *corev1.Pod) {
		if p.Annotations == nil {
			p.Annotations = map[string]string{}
		}
		p.Annotations[k] = v
	}
}

func TestShouldDeletePod(t *testing.T) {
	cases := []struct {
		name string
		pod  corev1.Pod
		want bool
	}{
		{"healthy", mkPod("p"), false},
		{"failed", mkPod("p", phase(corev1.PodFailed)), true},
		{"succeeded", mkPod("p", phase(corev1.PodSucceeded)), true},
		{"pending", mkPod("p", phase(corev1.PodPending)), false},
		{"ray exited, restartPolicy Never", mkPod("p", restart(corev1.RestartPolicyNever), rayExited(1)), true},
		{"ray exited, restartPolicy Always: the kubelet restarts it", mkPod("p", restart(corev1.RestartPolicyAlways), rayExited(1)), false},
		{"ray exited, restartPolicy OnFailure", mkPod("p", restart(corev1.RestartPolicyOnFailure), rayExited(0)), false},
		{"sidecar exited, restartPolicy Never", mkPod("p", restart(corev1.RestartPolicyNever), sidecarExited()), false},
		{"no container statuses yet", func() corev1.Pod {
			p := mkPod("p", restart(corev1.RestartPolicyNever))
			p.Status.ContainerStatuses = nil
			return p
		}(), false},
		{"no containers (bad input) does not panic", corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodRunning}}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, reason := shouldDeletePod(&tc.pod)
			if got != tc.want {
				t.Errorf("shouldDeletePod = %v (%s), want %v", got, reason, tc.want)
			}
			if got && reason == "" {
				t.Error("a deletion needs a reason for the event")
			}
		})
	}
}

func TestRecreateDecision(t *testing.T) {
	recreate := &rayv1.RayClusterSpec{UpgradeStrategy: &rayv1.RayClusterUpgradeStrategy{Type: ptr.To(rayv1.RayClusterRecreate)}}
	none := &rayv1.RayClusterSpec{UpgradeStrategy: &rayv1.RayClusterUpgradeStrategy{Type: ptr.To(rayv1.RayClusterUpgradeNone)}}
	head := func(hash, version string) []corev1.Pod {
		p := mkPod("h")
		if hash != "" {
			annotate(rayv1.HashWithoutReplicasAndWorkersToDeleteKey, hash)(&p)
		}
		if version != "" {
			annotate(rayv1.KubeRayVersionKey, version)(&p)
		}
		return []corev1.Pod{p}
	}
	cases := []struct {
		name                  string
		spec                  *rayv1.RayClusterSpec
		heads                 []corev1.Pod
		wantRecreate, restamp bool
	}{
		{name: "no strategy", spec: &rayv1.RayClusterSpec{}, heads: head("old", "v1")},
		{name: "strategy None", spec: none, heads: head("old", "v1")},
		{name: "no head pod", spec: recreate},
		{name: "same hash", spec: recreate, heads: head("new", "v1")},
		{name: "hash changed", spec: recreate, heads: head("old", "v1"), wantRecreate: true},
		{name: "head without hash (built elsewhere) is kept", spec: recreate, heads: head("", "v1")},
		{name: "built by another operator version: re-stamp, never recreate", spec: recreate, heads: head("old", "v0"), restamp: true},
		{name: "no version annotation: compare hashes", spec: recreate, heads: head("old", ""), wantRecreate: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r, s := recreateDecision(tc.spec, tc.heads, "new", "v1")
			if r != tc.wantRecreate || s != tc.restamp {
				t.Errorf("recreate, restamp = %v, %v; want %v, %v", r, s, tc.wantRecreate, tc.restamp)
			}
		})
	}
}

func TestRandomDeleteAllowed(t *testing.T) {
	cases := []struct {
		autoscaling, randomPodDelete bool
		want                         bool
	}{
		{false, false, true}, {false, true, true}, {true, false, false}, {true, true, true},
	}
	for _, tc := range cases {
		if got := randomDeleteAllowed(tc.autoscaling, tc.randomPodDelete); got != tc.want {
			t.Errorf("randomDeleteAllowed(%v, %v) = %v, want %v", tc.autoscaling, tc.randomPodDelete, got, tc.want)
		}
	}
}

func TestUnitsToRemoveSingleHost(t *testing.T) {
	pods := []corev1.Pod{
		mkPod("old-ready", created(100)),
		mkPod("young-ready", created(300)),
		mkPod("not-ready", notReady(), created(50)),
		mkPod("pending", phase(corev1.PodPending), created(10)),
	}
	cases := []struct {
		n    int
		want []string
	}{
		{0, nil},
		{1, []string{"pending"}},
		{2, []string{"pending", "not-ready"}},
		{3, []string{"pending", "not-ready", "young-ready"}},
		{9, []string{"pending", "not-ready", "young-ready", "old-ready"}},
	}
	for _, tc := range cases {
		units, _ := workerUnits(pods, false)
		if got := unitNames(unitsToRemove(units, tc.n, false)); !cmp.Equal(got, tc.want) {
			t.Errorf("unitsToRemove(%d) = %v, want %v", tc.n, got, tc.want)
		}
	}
}

func unitNames(us []workerUnit) []string {
	var out []string
	for _, u := range us {
		out = append(out, u.Name)
	}
	return out
}

func names(ps []corev1.Pod) []string {
	var out []string
	for _, p := range ps {
		out = append(out, p.Name)
	}
	return out
}

func TestFreeIndices(t *testing.T) {
	got := freeIndices(map[int]bool{0: true, 2: true, -1: true}, 3)
	if !cmp.Equal(got, []int{1, 3, 4}) {
		t.Errorf("freeIndices = %v, want [1 3 4]", got)
	}
}

func TestWorkerUnitsOfMultiHostGroups(t *testing.T) {
	rep := func(name string, idx string) podOpt {
		return func(p *corev1.Pod) {
			label(rayv1.WorkerReplicaNameLabelKey, name)(p)
			label(rayv1.WorkerReplicaIndexLabelKey, idx)(p)
		}
	}
	pods := []corev1.Pod{mkPod("b0", rep("b", "1")), mkPod("a0", rep("a", "0")), mkPod("b1", rep("b", "1")), mkPod("lost")}
	replicas, orphans := workerUnits(pods, true)
	if len(replicas) != 2 || replicas[0].Name != "a" || replicas[1].Name != "b" || len(replicas[1].Pods) != 2 || replicas[1].Index != 1 {
		t.Errorf("replicas = %+v", replicas)
	}
	if !cmp.Equal(names(orphans), []string{"lost"}) {
		t.Errorf("orphans = %v", names(orphans))
	}
	ready := workerUnit{Name: "r2", Index: 2, Pods: []corev1.Pod{mkPod("x")}}
	high := workerUnit{Name: "r5", Index: 5, Pods: []corev1.Pod{mkPod("y")}}
	broken := workerUnit{Name: "r0", Index: 0, Pods: []corev1.Pod{mkPod("z"), mkPod("w", notReady())}}
	got := unitsToRemove([]workerUnit{ready, high, broken}, 2, true)
	if len(got) != 2 || got[0].Name != "r0" || got[1].Name != "r5" {
		t.Errorf("unitsToRemove = %+v, want the not-ready replica, then the highest index", got)
	}
}

func TestSkipHeadRestartAndManagedBy(t *testing.T) {
	provisioned := []metav1.Condition{{Type: string(rayv1.RayClusterProvisioned), Status: metav1.ConditionTrue}}
	cases := []struct {
		name  string
		conds []metav1.Condition
		ann   string
		want  bool
	}{
		{"provisioned and annotated", provisioned, "true", true},
		{"annotated, never provisioned", nil, "true", false},
		{"provisioned, not annotated", provisioned, "", false},
		{"provisioned, annotated false", provisioned, "false", false},
	}
	for _, tc := range cases {
		rc := &rayv1.RayCluster{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{rayv1.DisableProvisionedHeadRestartKey: tc.ann}},
			Status: rayv1.RayClusterStatus{Conditions: tc.conds}}
		if got := skipHeadRestart(rc); got != tc.want {
			t.Errorf("%s: skipHeadRestart = %v, want %v", tc.name, got, tc.want)
		}
	}
	for v, want := range map[string]bool{"": false, KubeRayManagerName: false, "kueue.x-k8s.io/multikueue": true} {
		rc := &rayv1.RayCluster{}
		if v != "" {
			rc.Spec.ManagedBy = ptr.To(v)
		}
		if got := managedByOther(rc); got != want {
			t.Errorf("managedBy %q: managedByOther = %v, want %v", v, got, want)
		}
	}
}

func TestSuspendStatus(t *testing.T) {
	c := func(t rayv1.RayClusterConditionType, s metav1.ConditionStatus) metav1.Condition {
		return metav1.Condition{Type: string(t), Status: s}
	}
	cases := []struct {
		conds []metav1.Condition
		want  rayv1.RayClusterConditionType
	}{
		{nil, ""},
		{[]metav1.Condition{c(rayv1.RayClusterSuspending, metav1.ConditionFalse), c(rayv1.RayClusterSuspended, metav1.ConditionFalse)}, ""},
		{[]metav1.Condition{c(rayv1.RayClusterSuspending, metav1.ConditionTrue)}, rayv1.RayClusterSuspending},
		{[]metav1.Condition{c(rayv1.RayClusterSuspended, metav1.ConditionTrue), c(rayv1.RayClusterSuspending, metav1.ConditionFalse)}, rayv1.RayClusterSuspended},
	}
	for i, tc := range cases {
		if got := suspendStatus(tc.conds); got != tc.want {
			t.Errorf("case %d: suspendStatus = %q, want %q", i, got, tc.want)
		}
	}
}

func TestActiveDropsTerminatingPods(t *testing.T) {
	deleting := func(p *corev1.Pod) { p.DeletionTimestamp = &metav1.Time{Time: time.Unix(2000, 0)} }
	for _, tc := range []struct {
		name string
		pods []corev1.Pod
		want []string
	}{
		{"none", nil, nil},
		{"none terminating", []corev1.Pod{mkPod("a"), mkPod("b")}, []string{"a", "b"}},
		{"one terminating", []corev1.Pod{mkPod("a"), mkPod("b", deleting), mkPod("c")}, []string{"a", "c"}},
		{"all terminating", []corev1.Pod{mkPod("a", deleting)}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := active(tc.pods)
			var names []string
			for i := range got {
				names = append(names, got[i].Name)
			}
			if !slices.Equal(names, tc.want) {
				t.Errorf("active = %v, want %v", names, tc.want)
			}
			if cap(got) != len(got) {
				t.Errorf("cap %d > len %d: an append would write into the caller's pods", cap(got), len(got))
			}
		})
	}
}
