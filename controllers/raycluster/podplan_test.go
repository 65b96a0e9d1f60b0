package raycluster

import (
	"fmt"
	"math"
	"runtime"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/expectations"
	"github.com/raygate/raygate/test/builders"
)

// describeGroup renders a group plan as lines, so a table states a plan at a glance.
func describeGroup(g groupPlan) []string {
	var out []string
	if g.Wait != "" {
		out = append(out, "wait: "+g.Wait)
	}
	if g.DeleteAll != nil {
		out = append(out, fmt.Sprintf("delete all %v: %s", names(g.DeleteAll.Pods), g.DeleteAll.Reason))
	}
	for _, d := range g.Deletes {
		out = append(out, fmt.Sprintf("delete %v: %s", names(d.Pods), d.Reason))
	}
	if c := g.Create; c.Pods() > 0 {
		line := fmt.Sprintf("create %d x %d", c.Replicas, c.Hosts)
		switch {
		case len(c.Indices) > 4: // long lists by their start
			line += fmt.Sprintf(" at [%d %d %d ...]", c.Indices[0], c.Indices[1], c.Indices[2])
		case c.Indices != nil:
			line += fmt.Sprintf(" at %v", c.Indices)
		}
		out = append(out, line)
	}
	if g.MultipleHeads != "" {
		out = append(out, "multiple heads: "+g.MultipleHeads)
	}
	if g.ReportSkippedRestart {
		out = append(out, "report skipped restart")
	}
	if g.ClearWorkersToDelete {
		out = append(out, "clear workersToDelete")
	}
	if g.EndsPass {
		out = append(out, "end pass")
	}
	return out
}

// describePlan renders a plan: cluster-wide steps, then "<group>: <line>" per group.
func describePlan(p podPlan) []string {
	var out []string
	if p.Wait != "" {
		out = append(out, "wait: "+p.Wait)
	}
	if p.Restamp != nil {
		out = append(out, "restamp "+p.Restamp.Name)
	}
	if p.DeleteAll != nil {
		out = append(out, fmt.Sprintf("delete all %v: %s", names(p.DeleteAll.Pods), p.DeleteAll.Reason))
	}
	for _, g := range p.Groups {
		lines := describeGroup(g)
		if len(lines) == 0 {
			lines = []string{"nothing"}
		}
		for _, l := range lines {
			out = append(out, g.Group+": "+l)
		}
	}
	return out
}

func head(name string, opts ...podOpt) corev1.Pod {
	return mkPod(name, append([]podOpt{label(rayv1.NodeTypeLabelKey, string(rayv1.HeadNode))}, opts...)...)
}

func worker(name, group string, opts ...podOpt) corev1.Pod {
	return mkPod(name, append([]podOpt{label(rayv1.NodeTypeLabelKey, string(rayv1.WorkerNode)), label(rayv1.NodeGroupLabelKey, group)}, opts...)...)
}

// inReplica puts a pod in replica name (index idx) of a multi-host group.
func inReplica(name string, idx int) podOpt {
	return func(p *corev1.Pod) {
		label(rayv1.WorkerReplicaNameLabelKey, name)(p)
		label(rayv1.WorkerReplicaIndexLabelKey, fmt.Sprint(idx))(p)
	}
}

func terminating() podOpt {
	return func(p *corev1.Pod) { p.DeletionTimestamp = &metav1.Time{Time: t0} }
}

func conditionTrue(t rayv1.RayClusterConditionType) metav1.Condition {
	return metav1.Condition{Type: string(t), Status: metav1.ConditionTrue}
}

func TestPlanPods(t *testing.T) {
	const hash, version = "h1", "v1"
	stamped := func(p *corev1.Pod) {
		annotate(rayv1.HashWithoutReplicasAndWorkersToDeleteKey, hash)(p)
		annotate(rayv1.KubeRayVersionKey, version)(p)
	}
	cluster := func(mutate ...func(*rayv1.RayCluster)) *rayv1.RayCluster {
		rc := builders.RayCluster("demo", "ns").WorkerGroups(builders.WorkerGroup("a", 1), builders.WorkerGroup("b", 1)).Obj()
		for _, m := range mutate {
			m(rc)
		}
		return rc
	}
	suspended := func(rc *rayv1.RayCluster) { rc.Spec.Suspend = ptr.To(true) }
	status := func(conds ...metav1.Condition) func(*rayv1.RayCluster) {
		return func(rc *rayv1.RayCluster) { rc.Status.Conditions = conds }
	}
	recreate := func(rc *rayv1.RayCluster) {
		rc.Spec.UpgradeStrategy = &rayv1.RayClusterUpgradeStrategy{Type: ptr.To(rayv1.RayClusterRecreate)}
	}
	converged := []corev1.Pod{head("h", stamped), worker("a1", "a"), worker("b1", "b")}

	cases := []struct {
		name       string
		cluster    *rayv1.RayCluster
		pods       []corev1.Pod
		pending    []string
		anyPending bool
		noGate     bool // RayClusterStatusConditions off
		want       []string
	}{
		{
			name: "a new cluster: the head and every group are created in one pass", cluster: cluster(),
			want: []string{"~head: create 1 x 1", "a: create 1 x 1 at [0]", "b: create 1 x 1 at [0]"},
		},
		{
			name: "converged: nothing to do", cluster: cluster(), pods: converged,
			want: []string{"~head: nothing", "a: nothing", "b: nothing"},
		},
		{
			name: "suspending: every active pod goes in one call", cluster: cluster(suspended, status(conditionTrue(rayv1.RayClusterSuspending))),
			pods: append([]corev1.Pod{worker("gone", "a", terminating())}, converged...),
			want: []string{"delete all [h a1 b1]: the cluster is suspended"},
		},
		{
			name: "suspending while earlier deletions are not in the cache: wait", cluster: cluster(suspended, status(conditionTrue(rayv1.RayClusterSuspending))),
			pods: converged, anyPending: true,
			want: []string{"wait: earlier pod changes are not in the cache yet; the cluster is suspended"},
		},
		{
			name: "suspend requested, status not Suspending yet: nothing until it is", cluster: cluster(suspended), pods: converged,
			want: []string{"wait: the cluster is suspended, or is once the status says Suspending"},
		},
		{
			name: "suspended: nothing", cluster: cluster(status(conditionTrue(rayv1.RayClusterSuspended))),
			want: []string{"wait: the cluster is suspended, or is once the status says Suspending"},
		},
		{
			name: "without the conditions gate spec.suspend deletes at once", cluster: cluster(suspended), pods: converged, noGate: true,
			want: []string{"delete all [h a1 b1]: the cluster is suspended"},
		},
		{
			name: "Recreate with a changed spec deletes every pod", cluster: cluster(recreate),
			pods: []corev1.Pod{head("h", stamped, annotate(rayv1.HashWithoutReplicasAndWorkersToDeleteKey, "old")), worker("a1", "a")},
			want: []string{"delete all [h a1]: the spec changed and upgradeStrategy is Recreate"},
		},
		{
			name: "Recreate with a head built by another operator version: re-stamp, recreate nothing", cluster: cluster(recreate),
			pods: []corev1.Pod{head("h", stamped, annotate(rayv1.KubeRayVersionKey, "v0")), worker("a1", "a"), worker("b1", "b")},
			want: []string{"restamp h", "~head: nothing", "a: nothing", "b: nothing"},
		},
		{
			name: "an unhealthy head is deleted and ends the pass; its replacement comes next pass", cluster: cluster(),
			pods: []corev1.Pod{head("h", phase(corev1.PodFailed)), worker("a1", "a")},
			want: []string{"~head: delete [h]: pod h is in terminal phase Failed", "~head: end pass"},
		},
		{
			name: "several head pods: reported, none picked", cluster: cluster(),
			pods: []corev1.Pod{head("h1"), head("h2")},
			want: []string{"~head: multiple heads: 2 head pods found (h1, h2); delete the extra ones, raygate never picks one", "~head: end pass"},
		},
		{
			name: "a provisioned cluster annotated disable-provisioned-head-restart loses its head: reported once, not recreated",
			cluster: cluster(status(conditionTrue(rayv1.RayClusterProvisioned)), func(rc *rayv1.RayCluster) {
				rc.Annotations = map[string]string{rayv1.DisableProvisionedHeadRestartKey: "true"}
				rc.Status.Head.PodName = "h"
			}),
			pods: []corev1.Pod{worker("a1", "a")},
			want: []string{"~head: wait: the head pod is not recreated: ray.io/disable-provisioned-head-restart is set", "~head: report skipped restart", "~head: end pass"},
		},
		{
			name: "head changes not in the cache yet: the head waits, the groups go on", cluster: cluster(),
			pending: []string{expectations.HeadGroup},
			want:    []string{"~head: wait: head pod changes are not in the cache yet; the head is reconciled later", "a: create 1 x 1 at [0]", "b: create 1 x 1 at [0]"},
		},
		{
			name: "a group whose changes are not in the cache yet waits; the others go on", cluster: cluster(), pods: converged[:1],
			pending: []string{"a"},
			want:    []string{"~head: nothing", "a: wait: worker pod changes are not in the cache yet; the group is reconciled later", "b: create 1 x 1 at [0]"},
		},
		{
			name: "a group that deletes ends the pass before the next group", cluster: cluster(),
			pods: []corev1.Pod{head("h"), worker("a1", "a", phase(corev1.PodFailed))},
			want: []string{"~head: nothing", "a: delete [a1]: pod a1 is in terminal phase Failed", "a: end pass"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pending := map[string]bool{}
			for _, g := range tc.pending {
				pending[g] = true
			}
			got := describePlan(planPods(podsInput{
				Cluster: tc.cluster, Hash: hash, Pods: tc.pods, Pending: pending, AnyPending: tc.anyPending || len(tc.pending) > 0,
				Conditions: !tc.noGate, Indexing: true, OperatorVersion: version,
			}))
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("plan (-want +got):\n%s", d)
			}
		})
	}
}

func TestPlanWorkerGroup(t *testing.T) {
	group := func(replicas int32, mutate ...func(*rayv1.WorkerGroupSpec)) *rayv1.WorkerGroupSpec {
		g := builders.WorkerGroup("g", replicas)
		g.MinReplicas, g.MaxReplicas = ptr.To[int32](0), ptr.To[int32](math.MaxInt32)
		for _, m := range mutate {
			m(&g)
		}
		return &g
	}
	hosts := func(n int32) func(*rayv1.WorkerGroupSpec) {
		return func(g *rayv1.WorkerGroupSpec) { g.NumOfHosts = n }
	}
	toDelete := func(names ...string) func(*rayv1.WorkerGroupSpec) {
		return func(g *rayv1.WorkerGroupSpec) { g.ScaleStrategy.WorkersToDelete = names }
	}
	w := func(name string, opts ...podOpt) corev1.Pod { return worker(name, "g", opts...) }
	idx := func(i int) podOpt { return label(rayv1.WorkerReplicaIndexLabelKey, fmt.Sprint(i)) }

	cases := []struct {
		name       string
		spec       *rayv1.WorkerGroupSpec
		pods       []corev1.Pod
		pending    bool
		anyPending bool
		noIndexing bool
		autoscaler bool // the Ray autoscaler picks the workers to remove
		want       []string
	}{
		{name: "changes not in the cache yet: wait", spec: group(3), pending: true,
			want: []string{"wait: worker pod changes are not in the cache yet; the group is reconciled later"}},
		{name: "suspended group: its pods go in one call", spec: group(2, func(g *rayv1.WorkerGroupSpec) { g.Suspend = ptr.To(true) }),
			pods: []corev1.Pod{w("p1"), w("p2")},
			want: []string{"delete all [p1 p2]: worker group g is suspended"}},
		{name: "suspended group while other deletions are not in the cache: wait", spec: group(2, func(g *rayv1.WorkerGroupSpec) { g.Suspend = ptr.To(true) }),
			pods: []corev1.Pod{w("p1")}, anyPending: true,
			want: []string{"wait: earlier pod changes are not in the cache yet; worker group g is suspended"}},
		{name: "converged", spec: group(2), pods: []corev1.Pod{w("p1", idx(0)), w("p2", idx(1))}},

		// Scale up and down.
		{name: "scale up from zero", spec: group(3), noIndexing: true, want: []string{"create 3 x 1"}},
		{name: "scale up with indexing fills the smallest free indices", spec: group(4), pods: []corev1.Pod{w("p0", idx(0)), w("p2", idx(2))},
			want: []string{"create 2 x 1 at [1 3]"}},
		{name: "replicas clamped to maxReplicas", spec: group(9, func(g *rayv1.WorkerGroupSpec) { g.MaxReplicas = ptr.To[int32](2) }), noIndexing: true,
			want: []string{"create 2 x 1"}},
		{name: "scale down: not running first, then not ready, then the youngest", spec: group(1), noIndexing: true,
			pods: []corev1.Pod{w("old", created(100)), w("young", created(300)), w("pending", phase(corev1.PodPending))},
			want: []string{"delete [pending young]: scaling down"}},
		{name: "scale down with the autoscaler on: it picks the workers, raygate waits", spec: group(1), autoscaler: true,
			pods: []corev1.Pod{w("p1"), w("p2")}},

		// Unhealthy pods and workersToDelete.
		{name: "unhealthy pods are deleted together, replaced next pass", spec: group(3),
			pods: []corev1.Pod{w("ok", idx(0)), w("failed", idx(1), phase(corev1.PodFailed)), w("exited", idx(2), restart(corev1.RestartPolicyNever), rayExited(137))},
			want: []string{"delete [failed exited]: pod failed is in terminal phase Failed; the Ray container of pod exited terminated (exit code 137) and restartPolicy is Never", "end pass"}},
		{name: "a pod whose Ray container exited under restartPolicy Always is left to the kubelet", spec: group(1),
			pods: []corev1.Pod{w("p", idx(0), restart(corev1.RestartPolicyAlways), rayExited(1))}},
		{name: "workersToDelete: the named pods go even with the autoscaler on, and the list is cleared", spec: group(1, toDelete("p1", "gone")), autoscaler: true,
			pods: []corev1.Pod{w("p1", idx(0)), w("p2", idx(1))},
			want: []string{"delete [p1]: listed in workersToDelete", "clear workersToDelete"}},
		{name: "workersToDelete then scale back up to replicas", spec: group(2, toDelete("p1")),
			pods: []corev1.Pod{w("p1", idx(0)), w("p2", idx(1))},
			want: []string{"delete [p1]: listed in workersToDelete", "create 1 x 1 at [0]", "clear workersToDelete"}},

		// Hostile counts: nothing is allocated in proportion to them.
		{name: "replicas 2147483647: one pass creates at most the per-pass cap", spec: group(math.MaxInt32), noIndexing: true,
			want: []string{fmt.Sprintf("create %d x 1", maxCreatesPerPass)}},

		// Multi-host groups, managed in whole replicas.
		{name: "multi-host scale up: whole replicas with new indices", spec: group(2, hosts(4)),
			pods: []corev1.Pod{w("r1-0", inReplica("r1", 1)), w("r1-1", inReplica("r1", 1)), w("r1-2", inReplica("r1", 1)), w("r1-3", inReplica("r1", 1))},
			want: []string{"create 1 x 4 at [0]"}},
		{name: "multi-host replicas 2147483647: the cap counts pods", spec: group(math.MaxInt32, hosts(4)),
			want: []string{fmt.Sprintf("create %d x 4 at [0 1 2 ...]", maxCreatesPerPass/4)}},
		{name: "multi-host replicas wider than the cap: one whole replica per pass", spec: group(3, hosts(maxCreatesPerPass*2)),
			want: []string{fmt.Sprintf("create 1 x %d at [0]", maxCreatesPerPass*2)}},
		{name: "multi-host without RayMultiHostIndexing: pods one by one, replicas × hosts", spec: group(2, hosts(2)), noIndexing: true,
			pods: []corev1.Pod{w("p1")},
			want: []string{"create 3 x 1"}},
		{name: "multi-host pods from before RayMultiHostIndexing are kept and managed one by one", spec: group(2, hosts(2)),
			pods: []corev1.Pod{w("p1"), w("p2"), w("p3")},
			want: []string{"create 1 x 1"}},
		{name: "multi-host pods from before RayMultiHostIndexing: scale-down one by one", spec: group(1, hosts(2)),
			pods: []corev1.Pod{w("p1"), w("p2"), w("p3")},
			want: []string{"delete [p1]: scaling down"}},
		{name: "a pod outside any replica is deleted", spec: group(1, hosts(2)),
			pods: []corev1.Pod{w("a", inReplica("r0", 0)), w("b", inReplica("r0", 0)), w("stray")},
			want: []string{"delete [stray]: not part of a multi-host replica", "end pass"}},
		{name: "an incomplete replica is deleted whole; each replica in its own event", spec: group(3, hosts(2)),
			pods: []corev1.Pod{w("a", inReplica("r0", 0)), w("b", inReplica("r0", 0)), w("c", inReplica("r1", 1)), w("d", inReplica("r2", 2))},
			want: []string{"delete [c]: replica r1 has 1 of 2 hosts", "delete [d]: replica r2 has 1 of 2 hosts", "end pass"}},
		{name: "a replica with a pod beyond repair is deleted whole", spec: group(2, hosts(2)),
			pods: []corev1.Pod{w("a", inReplica("r0", 0)), w("b", inReplica("r0", 0), phase(corev1.PodFailed)), w("c", inReplica("r1", 1)), w("d", inReplica("r1", 1))},
			want: []string{"delete [a b]: replica r0: pod b is in terminal phase Failed", "end pass"}},
		{name: "workersToDelete removes the replica of the named pod", spec: group(1, hosts(2), toDelete("c")), autoscaler: true,
			pods: []corev1.Pod{w("a", inReplica("r0", 0)), w("b", inReplica("r0", 0)), w("c", inReplica("r1", 1)), w("d", inReplica("r1", 1))},
			want: []string{"delete [c d]: replica r1 has a pod listed in workersToDelete", "clear workersToDelete"}},
		{name: "multi-host scale down: the highest indices first, one event per replica", spec: group(1, hosts(2)),
			pods: []corev1.Pod{w("a", inReplica("r0", 0)), w("b", inReplica("r0", 0)), w("c", inReplica("r1", 1)), w("d", inReplica("r1", 1)), w("e", inReplica("r2", 2)), w("f", inReplica("r2", 2))},
			want: []string{"delete [e f]: scaling down replica r2", "delete [c d]: scaling down replica r1"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := planWorkerGroup(groupInput{Spec: tc.spec, Pods: tc.pods, Pending: tc.pending, AnyPending: tc.anyPending,
				Indexing: !tc.noIndexing, RandomDelete: !tc.autoscaler})
			if d := cmp.Diff(tc.want, describeGroup(p)); d != "" {
				t.Errorf("plan (-want +got):\n%s", d)
			}
			if c := p.Create; c.Indices != nil && len(c.Indices) != c.Replicas {
				t.Errorf("%d indices for %d replicas", len(c.Indices), c.Replicas)
			}
			if n := p.Create.Pods(); n > maxCreatesPerPass && p.Create.Replicas > 1 {
				t.Errorf("%d pods created in one pass, above the cap of %d", n, maxCreatesPerPass)
			}
		})
	}
}

// Planning a hostile replica count allocates in proportion to the pods that exist and the
// per-pass cap, never to the count.
func TestPlanWorkerGroupAllocatesNothingForMissingPods(t *testing.T) {
	for _, hosts := range []int32{1, 4, math.MaxInt32} {
		g := builders.WorkerGroup("g", math.MaxInt32)
		g.MaxReplicas, g.NumOfHosts = ptr.To[int32](math.MaxInt32), hosts
		in := groupInput{Spec: &g, Indexing: true, RandomDelete: true}
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		p := planWorkerGroup(in)
		runtime.ReadMemStats(&after)
		if b := after.TotalAlloc - before.TotalAlloc; b > 64<<10 {
			t.Errorf("numOfHosts %d: planning %d replicas allocated %d bytes; want a few KiB", hosts, math.MaxInt32, b)
		}
		if p.Create.Replicas > maxCreatesPerPass {
			t.Errorf("numOfHosts %d: %d replicas planned in one pass", hosts, p.Create.Replicas)
		}
	}
}

// The workersToDelete cleared after the pass are those of the groups whose plan handled
// them, in spec order.
func TestHandledWorkersToDelete(t *testing.T) {
	p := podPlan{Groups: []groupPlan{
		{Group: expectations.HeadGroup},
		{Group: "a", ClearWorkersToDelete: true},
		{Group: "b"},
		{Group: "c", ClearWorkersToDelete: true},
	}}
	if got := p.handledWorkersToDelete(); !slices.Equal(got, []string{"a", "c"}) {
		t.Errorf("handled %v, want [a c]", got)
	}
	if got := (podPlan{}).handledWorkersToDelete(); got != nil {
		t.Errorf("a plan without groups handled %v", got)
	}
}
