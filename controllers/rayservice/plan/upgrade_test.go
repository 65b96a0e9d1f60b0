package plan

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/defaulting"
	"github.com/raygate/raygate/internal/rayspec"
	"github.com/raygate/raygate/test/builders"
)

// mustGoal is the goal for a spec as stored (KubeRay hashes it) and defaulted.
func mustGoal(t *testing.T, spec rayv1.RayClusterSpec) goal {
	t.Helper()
	svc := &rayv1.RayService{Spec: rayv1.RayServiceSpec{RayClusterSpec: *spec.DeepCopy()}}
	defaulting.RayService(svc)
	g, err := newGoal(spec, svc.Spec.RayClusterSpec)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// stampFor is the stamp this raygate writes on a cluster made for spec.
func stampFor(t *testing.T, spec rayv1.RayClusterSpec, version string) *stamp {
	t.Helper()
	g := mustGoal(t, spec)
	return &stamp{SpecHash: g.Hash, Hash: g.KubeRayHash, NumWorkerGroups: len(g.Spec.WorkerGroupSpecs), Version: version}
}

// kubeRayStamp is the stamp KubeRay v1.5.1 writes on a cluster made for spec (stored as is).
func kubeRayStamp(t *testing.T, spec rayv1.RayClusterSpec) *stamp {
	t.Helper()
	h, err := rayspec.KubeRayHash(spec)
	if err != nil {
		t.Fatal(err)
	}
	return &stamp{Hash: h, NumWorkerGroups: len(spec.WorkerGroupSpecs), Version: "v1.5.1"}
}

// oldRaygateStamp is the stamp raygate wrote before raygate.ray.io/spec-hash existed: its
// hash of the defaulted spec under KubeRay's key.
func oldRaygateStamp(t *testing.T, spec rayv1.RayClusterSpec) *stamp {
	t.Helper()
	g := mustGoal(t, spec)
	h, err := rayspec.HashWithoutReplicas(g.Spec)
	if err != nil {
		t.Fatal(err)
	}
	return &stamp{Hash: h, NumWorkerGroups: len(spec.WorkerGroupSpecs), Version: "v0.1.0"}
}

func withTolerations(s rayv1.RayClusterSpec) rayv1.RayClusterSpec {
	out := *s.DeepCopy()
	out.HeadGroupSpec.Template.Spec.Tolerations = []corev1.Toleration{{Key: "kueue", Operator: corev1.TolerationOpExists}}
	out.WorkerGroupSpecs[0].Template.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: "example.com/gate"}}
	return out
}

func withImage(image string) rayv1.RayClusterSpec {
	s := builders.ClusterSpec()
	s.HeadGroupSpec.Template.Spec.Containers[0].Image = image
	for i := range s.WorkerGroupSpecs {
		s.WorkerGroupSpecs[i].Template.Spec.Containers[0].Image = image
	}
	return s
}

func TestHashEquality(t *testing.T) {
	base := builders.ClusterSpec()
	g := mustGoal(t, base)
	same := map[string]func(*rayv1.RayClusterSpec){
		"replicas": func(s *rayv1.RayClusterSpec) { s.WorkerGroupSpecs[0].Replicas = ptr.To[int32](7) },
		"min and max replicas": func(s *rayv1.RayClusterSpec) {
			s.WorkerGroupSpecs[0].MinReplicas, s.WorkerGroupSpecs[0].MaxReplicas = ptr.To[int32](1), ptr.To[int32](9)
		},
		"workersToDelete":         func(s *rayv1.RayClusterSpec) { s.WorkerGroupSpecs[0].ScaleStrategy.WorkersToDelete = []string{"p"} },
		"a default made explicit": func(s *rayv1.RayClusterSpec) { s.WorkerGroupSpecs[0].NumOfHosts = 1 },
		"rayStartParams nil vs {}": func(s *rayv1.RayClusterSpec) {
			s.HeadGroupSpec.RayStartParams = nil
			s.WorkerGroupSpecs[0].RayStartParams = nil
		},
	}
	for name, mutate := range same {
		s := *base.DeepCopy()
		mutate(&s)
		if got := mustGoal(t, s); got.Hash != g.Hash {
			t.Errorf("%s changed the spec hash", name)
		}
	}
	differ := map[string]func(*rayv1.RayClusterSpec){
		"image": func(s *rayv1.RayClusterSpec) {
			s.HeadGroupSpec.Template.Spec.Containers[0].Image = "rayproject/ray:2.53.0"
		},
		"env": func(s *rayv1.RayClusterSpec) {
			s.WorkerGroupSpecs[0].Template.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "A", Value: "1"}}
		},
		"added group": func(s *rayv1.RayClusterSpec) {
			s.WorkerGroupSpecs = append(s.WorkerGroupSpecs, builders.WorkerGroup("gpu", 1))
		},
		"rayVersion": func(s *rayv1.RayClusterSpec) { s.RayVersion = "2.53.0" },
	}
	for name, mutate := range differ {
		s := *base.DeepCopy()
		mutate(&s)
		if got := mustGoal(t, s); got.Hash == g.Hash {
			t.Errorf("%s did not change the spec hash", name)
		}
	}
}

func TestMatchGoal(t *testing.T) {
	base := builders.ClusterSpec()
	appended := builders.ClusterSpec()
	appended.WorkerGroupSpecs = append(appended.WorkerGroupSpecs, builders.WorkerGroup("gpu", 2))
	appendedAndChanged := *appended.DeepCopy()
	appendedAndChanged.WorkerGroupSpecs[0].Template.Spec.Containers[0].Image = "rayproject/ray:2.53.0"
	removed := builders.ClusterSpec()
	removed.WorkerGroupSpecs = nil

	// What raygate's webhook stores into a RayService KubeRay made: rayStartParams {}.
	kubeRayStored := builders.ClusterSpec()
	kubeRayStored.HeadGroupSpec.RayStartParams = nil
	kubeRayDefaulted := *kubeRayStored.DeepCopy()
	kubeRayDefaulted.HeadGroupSpec.RayStartParams = map[string]string{}

	cases := []struct {
		name    string
		cluster *stamp
		goal    rayv1.RayClusterSpec
		want    match
	}{
		{"same", stampFor(t, base, "v1"), base, matchSame},
		{"image changed", stampFor(t, base, "v1"), withImage("rayproject/ray:2.53.0"), matchChanged},
		{"a group appended", stampFor(t, base, "v1"), appended, matchAppendedGroups},
		{"a group appended and an old one changed", stampFor(t, base, "v1"), appendedAndChanged, matchChanged},
		{"a group removed", stampFor(t, base, "v1"), removed, matchChanged},
		{"same hash, other raygate version", stampFor(t, base, "v0"), base, matchSame},
		{"spec changed, other raygate version", stampFor(t, base, "v0"), withImage("x"), matchChanged},
		{"only tolerations and scheduling gates changed", stampFor(t, base, "v1"), withTolerations(base), matchRestamp},
		{"KubeRay's stamp, same spec", kubeRayStamp(t, base), base, matchRestamp},
		{"KubeRay's stamp, raygate's defaults stored since", kubeRayStamp(t, kubeRayStored), kubeRayDefaulted, matchRestamp},
		{"KubeRay's stamp, image changed", kubeRayStamp(t, base), withImage("x"), matchChanged},
		{"KubeRay's stamp, a group appended", kubeRayStamp(t, base), appended, matchAppendedGroups},
		{"KubeRay's stamp, tolerations changed (KubeRay's hash covers them)", kubeRayStamp(t, base), withTolerations(base), matchChanged},
		{"older raygate's stamp, same spec", oldRaygateStamp(t, base), base, matchRestamp},
		{"older raygate's stamp, image changed", oldRaygateStamp(t, base), withImage("x"), matchChanged},
		{"older raygate's stamp, a group appended", oldRaygateStamp(t, base), appended, matchAppendedGroups},
		{"never stamped", &stamp{}, base, matchChanged},
	}
	for _, tc := range cases {
		if got := matchGoal(*tc.cluster, mustGoal(t, tc.goal)); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestDecideClusters(t *testing.T) {
	v1 := builders.ClusterSpec()
	v2 := withImage("rayproject/ray:2.53.0")
	v3 := withImage("rayproject/ray:2.54.0")
	v1plus := builders.ClusterSpec()
	v1plus.WorkerGroupSpecs = append(v1plus.WorkerGroupSpecs, builders.WorkerGroup("gpu", 1))
	s := func(spec rayv1.RayClusterSpec) *stamp { return stampFor(t, spec, "v1") }
	kuberay, older := kubeRayStamp(t, v1), oldRaygateStamp(t, v1)

	nc, inc, none := rayv1.NewCluster, rayv1.NewClusterWithIncrementalUpgrade, rayv1.None
	cases := []struct {
		name            string
		strategy        rayv1.RayServiceUpgradeType
		active, pending *stamp
		goal            rayv1.RayClusterSpec
		noGatewayAPI    bool
		want            clusterChange
	}{
		{"first cluster", nc, nil, nil, v1, false, actCreatePending},
		{"first cluster, incremental", inc, nil, nil, v1, false, actCreatePending},
		{"first cluster, incremental without Gateway API", inc, nil, nil, v1, true, actCreatePending},
		{"converged", nc, s(v1), nil, v1, false, actNone},
		{"spec changed: NewCluster", nc, s(v1), nil, v2, false, actCreatePending},
		{"spec changed: incremental", inc, s(v1), nil, v2, false, actCreatePending},
		{"spec changed: incremental without Gateway API", inc, s(v1), nil, v2, true, actBlockedNoGwAPI},
		{"spec changed: None (not applied, as in KubeRay)", none, s(v1), nil, v2, false, actNotApplied},
		{"only a worker group appended: None", none, s(v1), nil, v1plus, false, actAppendActive},
		{"only a worker group appended", nc, s(v1), nil, v1plus, false, actAppendActive},
		{"only a worker group appended, incremental", inc, s(v1), nil, v1plus, false, actAppendActive},
		{"active stamped by KubeRay, spec unchanged", nc, kuberay, nil, v1, false, actRestampActive},
		{"active stamped by KubeRay, spec unchanged, incremental", inc, kuberay, nil, v1, false, actRestampActive},
		{"active stamped by KubeRay, spec changed", nc, kuberay, nil, v2, false, actCreatePending},
		{"active stamped by an older raygate, spec unchanged", nc, older, nil, v1, false, actRestampActive},
		{"active stamped by an older raygate, spec unchanged, None", none, older, nil, v1, false, actRestampActive},
		{"active stamped by an older raygate, spec changed", nc, older, nil, v2, false, actCreatePending},
		{"only tolerations changed: NewCluster", nc, s(v1), nil, withTolerations(v1), false, actRestampActive},
		{"only tolerations changed: incremental", inc, s(v1), nil, withTolerations(v1), false, actRestampActive},
		{"only tolerations changed: None", none, s(v1), nil, withTolerations(v1), false, actRestampActive},
		{"older raygate's active, upgrade to v2 in flight, back to v1", nc, older, s(v2), v1, false, actDropPending},
		{"upgrade in flight", nc, s(v1), s(v2), v2, false, actNone},
		{"worker group appended to the pending spec", nc, s(v1), s(v2), withGroup(v2), false, actAppendPending},
		{"pending stamped by an older raygate", nc, s(v1), oldRaygateStamp(t, v2), v2, false, actRestampPending},
		{"pending stamped by an older raygate, a third spec", nc, s(v1), oldRaygateStamp(t, v2), v3, false, actReplacePending},
		{"NewCluster: back to the active spec", nc, s(v1), s(v2), v1, false, actDropPending},
		{"NewCluster: a third spec", nc, s(v1), s(v2), v3, false, actReplacePending},
		{"incremental: back to the active spec", inc, s(v1), s(v2), v1, false, actRollback},
		{"incremental: a third spec", inc, s(v1), s(v2), v3, false, actRollback},
		{"first cluster not serving yet, spec changed", nc, nil, s(v1), v2, false, actReplacePending},
		{"first cluster not serving yet, spec changed, incremental", inc, nil, s(v1), v2, false, actReplacePending},
		{"None with a pending first cluster", none, nil, s(v1), v2, false, actNotApplied},
	}
	for _, tc := range cases {
		got := decideClusters(clusterInputs{Strategy: tc.strategy, Active: tc.active, Pending: tc.pending, Goal: mustGoal(t, tc.goal), GatewayAPI: !tc.noGatewayAPI})
		if got.Change != tc.want {
			t.Errorf("%s: %s (%s), want %s", tc.name, got.Change, got.Reason, tc.want)
		}
		if got.Reason == "" {
			t.Errorf("%s: no reason", tc.name)
		}
	}
}

func withGroup(s rayv1.RayClusterSpec) rayv1.RayClusterSpec {
	out := *s.DeepCopy()
	out.WorkerGroupSpecs = append(out.WorkerGroupSpecs, builders.WorkerGroup("gpu", 1))
	return out
}

func TestPendingClusterSpec(t *testing.T) {
	spec := builders.ClusterSpec()
	spec.WorkerGroupSpecs[0].Replicas = ptr.To[int32](5)
	spec.WorkerGroupSpecs[0].MinReplicas = ptr.To[int32](1)
	spec.UpgradeStrategy = &rayv1.RayClusterUpgradeStrategy{Type: ptr.To(rayv1.RayClusterRecreate)}
	g := mustGoal(t, spec)

	blueGreen := pendingClusterSpec(g, false)
	if ptr.Deref(blueGreen.WorkerGroupSpecs[0].Replicas, -1) != 5 || blueGreen.UpgradeStrategy != nil {
		t.Errorf("NewCluster pending: replicas %v, upgradeStrategy %v; want 5 and none", blueGreen.WorkerGroupSpecs[0].Replicas, blueGreen.UpgradeStrategy)
	}
	inc := pendingClusterSpec(g, true)
	if inc.WorkerGroupSpecs[0].Replicas != nil || ptr.Deref(inc.WorkerGroupSpecs[0].MinReplicas, -1) != 1 {
		t.Errorf("incremental pending: replicas %v (want unset: starts at minReplicas 1)", inc.WorkerGroupSpecs[0].Replicas)
	}
	if g.Spec.WorkerGroupSpecs[0].Replicas == nil {
		t.Error("pendingClusterSpec modified the goal")
	}
}

func TestAppendedGroupsSpec(t *testing.T) {
	appendOnly := builders.ClusterSpec()
	appendOnly.WorkerGroupSpecs = append(appendOnly.WorkerGroupSpecs, builders.WorkerGroup("gpu", 3))
	cur := builders.ClusterSpec()
	cur.WorkerGroupSpecs[0].Replicas = ptr.To[int32](9) // set by the autoscaler
	cur.WorkerGroupSpecs[0].ScaleStrategy.WorkersToDelete = []string{"w-1"}
	got := appendedGroupsSpec(cur, mustGoal(t, appendOnly))
	if len(got.WorkerGroupSpecs) != 2 || ptr.Deref(got.WorkerGroupSpecs[0].Replicas, -1) != 9 || len(got.WorkerGroupSpecs[0].ScaleStrategy.WorkersToDelete) != 1 ||
		got.WorkerGroupSpecs[1].GroupName != "gpu" || ptr.Deref(got.WorkerGroupSpecs[1].Replicas, -1) != 3 {
		t.Errorf("append-only update: %+v", got.WorkerGroupSpecs)
	}
	if again := appendedGroupsSpec(got, mustGoal(t, appendOnly)); len(again.WorkerGroupSpecs) != 2 {
		t.Errorf("appending twice: %d groups", len(again.WorkerGroupSpecs))
	}
}

// Taking over a RayService whose active cluster KubeRay made: the cluster is re-stamped, the
// serve config is recorded on it (KubeRay keeps no record there; here the dashboard pool
// still knows it was accepted, a fresh operator submits the unchanged config once), and
// nothing is created, updated or deleted; then a pass changes nothing.
func TestPlanAdoptsKubeRayCluster(t *testing.T) {
	for _, svc := range []*rayv1.RayService{builders.RayService("svc", "ns").Obj(), incrementalService(20, 5, 10)} {
		w := newWorld(svc)
		settle(t, w)
		name := w.svc.Status.ActiveServiceStatus.RayClusterName
		rc := w.clusters[name].rc
		h, err := rayspec.KubeRayHash(w.svc.Spec.RayClusterSpec)
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range []string{rayv1.SpecHashKey, rayv1.ServeConfigHashKey, rayv1.ServeConfigTargetCapacityKey} {
			delete(rc.Annotations, k)
		}
		rc.Annotations[rayv1.HashWithoutReplicasAndWorkersToDeleteKey] = h
		rc.Annotations[rayv1.KubeRayVersionKey] = "v1.5.1"

		p, err := w.reconcile()
		if err != nil {
			t.Fatal(err)
		}
		if n := len(actionsOf[CreateCluster](p.out)) + len(actionsOf[UpdateCluster](p.out)) + len(actionsOf[DeleteCluster](p.out)); n != 0 {
			t.Fatalf("%s: %d cluster changes on adoption: %v", strategyOf(&svc.Spec), n, p.out.ClusterActions)
		}
		var stamps []AnnotateCluster
		for _, a := range actionsOf[AnnotateCluster](p.out) {
			if _, ok := a.Annotations[rayv1.SpecHashKey]; ok {
				stamps = append(stamps, a)
			}
		}
		if len(stamps) != 1 || stamps[0].Annotations[rayv1.SpecHashKey] != w.desired().Goal.Hash || stamps[0].Annotations[rayv1.HashWithoutReplicasAndWorkersToDeleteKey] != h {
			t.Fatalf("%s: re-stamp %+v", strategyOf(&svc.Spec), stamps)
		}
		settle(t, w)
		if got := w.svc.Status.ActiveServiceStatus.RayClusterName; got != name || len(w.clusters) != 1 {
			t.Fatalf("%s: active %s, %d clusters; want %s alone", strategyOf(&svc.Spec), got, len(w.clusters), name)
		}
		if rc := w.clusters[name].rc; rc.Annotations[rayv1.ServeConfigHashKey] != w.desired().Serve.hash {
			t.Errorf("%s: the serve config was not recorded after the one submission", strategyOf(&svc.Spec))
		}
		p, _ = w.reconcile()
		if n := len(p.out.ClusterActions) + len(p.out.Submits) + len(p.out.Actions); n != 0 {
			t.Errorf("%s: after adoption a pass asks for %d things", strategyOf(&svc.Spec), n)
		}
	}
}
