package defaulting

import (
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/utils/ptr"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/rayspec"
	"github.com/raygate/raygate/test/builders"
)

// bare is a worker group with nothing defaulted.
func bare(name string) rayv1.WorkerGroupSpec {
	g := builders.WorkerGroup(name, 0)
	g.Replicas, g.MinReplicas, g.MaxReplicas, g.NumOfHosts, g.RayStartParams = nil, nil, nil, 0, nil
	return g
}

func TestRayClusterSpec(t *testing.T) {
	cases := map[string]struct {
		in   func(*rayv1.RayClusterSpec)
		want func(*rayv1.RayClusterSpec)
	}{
		"fills every unset field": {
			in: func(s *rayv1.RayClusterSpec) {
				s.HeadGroupSpec.RayStartParams = nil
				s.WorkerGroupSpecs = []rayv1.WorkerGroupSpec{bare("a")}
			},
			want: func(s *rayv1.RayClusterSpec) {
				s.HeadGroupSpec.RayStartParams = map[string]string{}
				g := bare("a")
				g.NumOfHosts, g.MinReplicas, g.MaxReplicas, g.Replicas, g.RayStartParams = 1, ptr.To[int32](0), ptr.To[int32](math.MaxInt32), ptr.To[int32](0), map[string]string{}
				s.WorkerGroupSpecs = []rayv1.WorkerGroupSpec{g}
			},
		},
		"replicas follow minReplicas": {
			in: func(s *rayv1.RayClusterSpec) {
				g := bare("a")
				g.MinReplicas = ptr.To[int32](3)
				s.WorkerGroupSpecs = []rayv1.WorkerGroupSpec{g}
			},
			want: func(s *rayv1.RayClusterSpec) {
				g := bare("a")
				g.NumOfHosts, g.MinReplicas, g.MaxReplicas, g.Replicas, g.RayStartParams = 1, ptr.To[int32](3), ptr.To[int32](math.MaxInt32), ptr.To[int32](3), map[string]string{}
				s.WorkerGroupSpecs = []rayv1.WorkerGroupSpec{g}
			},
		},
		"a negative minReplicas is not copied into replicas": {
			in: func(s *rayv1.RayClusterSpec) {
				g := bare("a")
				g.MinReplicas = ptr.To[int32](-1)
				s.WorkerGroupSpecs = []rayv1.WorkerGroupSpec{g}
			},
			want: func(s *rayv1.RayClusterSpec) {
				g := bare("a")
				g.NumOfHosts, g.MinReplicas, g.MaxReplicas, g.Replicas, g.RayStartParams = 1, ptr.To[int32](-1), ptr.To[int32](math.MaxInt32), ptr.To[int32](0), map[string]string{}
				s.WorkerGroupSpecs = []rayv1.WorkerGroupSpec{g}
			},
		},
		"keeps what is set": {
			in: func(s *rayv1.RayClusterSpec) {
				g := builders.WorkerGroup("a", 4)
				g.NumOfHosts, g.RayStartParams = 2, map[string]string{"num-cpus": "1"}
				s.WorkerGroupSpecs = []rayv1.WorkerGroupSpec{g}
				s.HeadGroupSpec.RayStartParams = map[string]string{"dashboard-host": "0.0.0.0"}
			},
			want: func(s *rayv1.RayClusterSpec) {
				g := builders.WorkerGroup("a", 4)
				g.NumOfHosts, g.RayStartParams = 2, map[string]string{"num-cpus": "1"}
				s.WorkerGroupSpecs = []rayv1.WorkerGroupSpec{g}
				s.HeadGroupSpec.RayStartParams = map[string]string{"dashboard-host": "0.0.0.0"}
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, want := builders.ClusterSpec(), builders.ClusterSpec()
			tc.in(&got)
			tc.want(&want)
			RayClusterSpec(&got)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			again := got.DeepCopy()
			RayClusterSpec(again)
			if diff := cmp.Diff(got, *again); diff != "" {
				t.Errorf("not idempotent (-once +twice):\n%s", diff)
			}
		})
	}
	RayClusterSpec(nil)
	RayCluster(nil)
}

func TestRayService(t *testing.T) {
	cases := map[string]struct {
		in, want *rayv1.RayServiceUpgradeStrategy
	}{
		"no strategy": {
			want: &rayv1.RayServiceUpgradeStrategy{Type: ptr.To(rayv1.NewCluster)},
		},
		"strategy without type": {
			in:   &rayv1.RayServiceUpgradeStrategy{},
			want: &rayv1.RayServiceUpgradeStrategy{Type: ptr.To(rayv1.NewCluster)},
		},
		"incremental gets maxSurgePercent": {
			in: &rayv1.RayServiceUpgradeStrategy{Type: ptr.To(rayv1.NewClusterWithIncrementalUpgrade),
				ClusterUpgradeOptions: &rayv1.ClusterUpgradeOptions{StepSizePercent: ptr.To[int32](10)}},
			want: &rayv1.RayServiceUpgradeStrategy{Type: ptr.To(rayv1.NewClusterWithIncrementalUpgrade),
				ClusterUpgradeOptions: &rayv1.ClusterUpgradeOptions{StepSizePercent: ptr.To[int32](10), MaxSurgePercent: ptr.To[int32](100)}},
		},
		"incremental without options stays without (validation requires them)": {
			in:   &rayv1.RayServiceUpgradeStrategy{Type: ptr.To(rayv1.NewClusterWithIncrementalUpgrade)},
			want: &rayv1.RayServiceUpgradeStrategy{Type: ptr.To(rayv1.NewClusterWithIncrementalUpgrade)},
		},
		"options of another strategy are left alone": {
			in:   &rayv1.RayServiceUpgradeStrategy{Type: ptr.To(rayv1.None), ClusterUpgradeOptions: &rayv1.ClusterUpgradeOptions{}},
			want: &rayv1.RayServiceUpgradeStrategy{Type: ptr.To(rayv1.None), ClusterUpgradeOptions: &rayv1.ClusterUpgradeOptions{}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			svc := builders.RayService("svc", "ns").Obj()
			svc.Spec.UpgradeStrategy = tc.in
			RayService(svc)
			if diff := cmp.Diff(tc.want, svc.Spec.UpgradeStrategy); diff != "" {
				t.Errorf("upgradeStrategy (-want +got):\n%s", diff)
			}
			if got := ptr.Deref(svc.Spec.RayClusterDeletionDelaySeconds, -1); got != 60 {
				t.Errorf("rayClusterDeletionDelaySeconds = %d, want 60", got)
			}
			if svc.Spec.RayClusterSpec.WorkerGroupSpecs[0].NumOfHosts != 1 {
				t.Error("rayClusterConfig was not defaulted")
			}
		})
	}
	RayService(nil)
}

// Defaulting must never change the spec hash of a running cluster: a field left unset and
// the same field given its default explicitly hash the same once defaulted, and defaulting
// a stored (already defaulted) object changes nothing.
func TestHashIsStableUnderDefaulting(t *testing.T) {
	hash := func(s rayv1.RayClusterSpec) string {
		t.Helper()
		h, err := rayspec.HashWithoutReplicas(s)
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	implicit := builders.ClusterSpec()
	implicit.HeadGroupSpec.RayStartParams = nil
	implicit.WorkerGroupSpecs = []rayv1.WorkerGroupSpec{bare("a")}

	explicit := builders.ClusterSpec()
	g := bare("a")
	g.NumOfHosts, g.MinReplicas, g.MaxReplicas, g.Replicas, g.RayStartParams = 1, ptr.To[int32](0), ptr.To[int32](math.MaxInt32), ptr.To[int32](0), map[string]string{}
	explicit.WorkerGroupSpecs = []rayv1.WorkerGroupSpec{g}

	RayClusterSpec(&implicit)
	RayClusterSpec(&explicit)
	if hash(implicit) != hash(explicit) {
		t.Fatal("unset and explicit defaults hash differently after defaulting")
	}
	stored := explicit.DeepCopy()
	before := hash(*stored)
	RayClusterSpec(stored)
	if hash(*stored) != before {
		t.Fatal("defaulting a stored spec changed its hash")
	}
}

// TestDefaultingDoesNotAllocatePerReplica: defaulting allocates the same for any counts.
func TestDefaultingDoesNotAllocatePerReplica(t *testing.T) {
	allocs := func(count int32) float64 {
		rc := builders.RayCluster("rc", "ns").Obj()
		g := &rc.Spec.WorkerGroupSpecs[0]
		g.Replicas, g.MaxReplicas, g.NumOfHosts = nil, nil, 0
		g.MinReplicas = ptr.To(count)
		return testing.AllocsPerRun(20, func() {
			c := rc.DeepCopy()
			RayCluster(c)
		})
	}
	if one, huge := allocs(1), allocs(math.MaxInt32); huge != one {
		t.Errorf("defaulting minReplicas 2147483647 allocates %.0f times, 1: %.0f", huge, one)
	}
}
