package validation

import (
	"math"
	"runtime"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/test/builders"
)

// group sets a worker group's counts; nil leaves one as defaulting sets it.
func group(name string, replicas, minReplicas, maxReplicas *int32, numOfHosts int32) rayv1.WorkerGroupSpec {
	g := builders.WorkerGroup(name, 0)
	g.Replicas, g.MinReplicas, g.MaxReplicas, g.NumOfHosts = replicas, minReplicas, maxReplicas, numOfHosts
	return g
}

func withGroups(groups ...rayv1.WorkerGroupSpec) func(*rayv1.RayCluster) {
	return func(rc *rayv1.RayCluster) { rc.Spec.WorkerGroupSpecs = groups }
}

var small = Limits{MaxPodsPerGroup: 100, MaxPodsPerCluster: 150}

func TestPodBounds(t *testing.T) {
	i := ptr.To[int32]
	cases := map[string]struct {
		limits   Limits
		mutate   func(*rayv1.RayCluster)
		want     field.ErrorList
		warnings []string
	}{
		"at the group bound": {limits: small, mutate: withGroups(group("g", i(25), i(0), i(25), 4))},
		"replicas × numOfHosts over the group bound": {
			limits: small, mutate: withGroups(group("g", i(26), i(0), nil, 4)),
			want: field.ErrorList{field.Invalid(p("spec.workerGroupSpecs[0].replicas"), nil, "")},
		},
		"minReplicas × numOfHosts over the group bound (replicas 0 means minReplicas)": {
			limits: small, mutate: withGroups(group("g", i(0), i(101), nil, 1)),
			want: field.ErrorList{field.Invalid(p("spec.workerGroupSpecs[0].minReplicas"), nil, "")},
		},
		"the cluster bound counts the head and every group": {
			limits: small, mutate: withGroups(group("a", i(100), i(0), i(100), 1), group("b", i(0), i(49), i(100), 1)),
		},
		"one pod over the cluster bound": {
			limits: small, mutate: withGroups(group("a", i(100), i(0), i(100), 1), group("b", i(0), i(50), i(100), 1)),
			want: field.ErrorList{{Type: field.ErrorTypeTooMany, Field: "spec.workerGroupSpecs"}},
		},
		"int32 extremes saturate instead of overflowing": {
			mutate: withGroups(group("a", i(math.MaxInt32), i(math.MaxInt32), i(math.MaxInt32), math.MaxInt32),
				group("b", i(math.MaxInt32), i(0), i(math.MaxInt32), math.MaxInt32)),
			want: field.ErrorList{
				field.Invalid(p("spec.workerGroupSpecs[0].replicas"), nil, ""),
				field.Invalid(p("spec.workerGroupSpecs[0].minReplicas"), nil, ""),
				field.Invalid(p("spec.workerGroupSpecs[1].replicas"), nil, ""),
				{Type: field.ErrorTypeTooMany, Field: "spec.workerGroupSpecs"},
			},
		},
		"negative counts are other rules' errors, never pods": {
			mutate: withGroups(group("a", i(-5), i(-1), i(10), -3)),
			want: field.ErrorList{
				field.Invalid(p("spec.workerGroupSpecs[0].minReplicas"), nil, ""),
				field.Invalid(p("spec.workerGroupSpecs[0].numOfHosts"), nil, ""),
				field.Invalid(p("spec.workerGroupSpecs[0].replicas"), nil, ""),
			},
		},
		"a TPU v6e-256 group of 64 hosts per replica fits the defaults 78 times": {
			mutate: withGroups(group("tpu", i(78), i(0), i(78), 64)),
		},
		"maxReplicas over the bound is legal, with a warning": {
			limits: small, mutate: withGroups(group("g", i(1), i(0), i(1000), 2)),
			warnings: []string{"spec.workerGroupSpecs[0].maxReplicas: 1000 replicas would be 2000 pods, over the limit of 100 pods per worker group " +
				"(the manager's --max-pods-per-group): the autoscaler cannot scale this group past 50 replicas"},
		},
		"the unbounded default maxReplicas does not warn": {limits: small, mutate: withGroups(group("g", i(1), i(0), i(math.MaxInt32), 2))},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			errs, warnings := Validator{Gates: gateOff, Limits: tc.limits}.RayCluster(cluster(tc.mutate))
			diffErrors(t, tc.want, errs)
			diffWarnings(t, tc.warnings, warnings)
		})
	}
}

func TestPodBoundMessages(t *testing.T) {
	rc := cluster(withGroups(group("tpu", ptr.To[int32](30), ptr.To[int32](0), ptr.To[int32](30), 4)))
	errs, _ := Validator{Limits: small}.RayCluster(rc)
	want := []string{
		"spec.workerGroupSpecs[0].replicas: Invalid value: 30: with numOfHosts 4 this is 120 pods; a worker group may have at most 100 pods (the manager's --max-pods-per-group)",
		"spec.workerGroupSpecs: Too many: the cluster would have 151 pods (the head plus max(replicas, minReplicas) × numOfHosts of each worker group); " +
			"a cluster may have at most 150 pods (the manager's --max-pods-per-cluster)",
	}
	if len(errs) != 1 || errs[0].Error() != want[0] {
		t.Errorf("got %v\nwant %s", errs, want[0])
	}
	rc.Spec.WorkerGroupSpecs[0].NumOfHosts = 5
	rc.Spec.WorkerGroupSpecs[0].Replicas = ptr.To[int32](20)
	rc.Spec.WorkerGroupSpecs = append(rc.Spec.WorkerGroupSpecs, group("more", ptr.To[int32](50), ptr.To[int32](0), ptr.To[int32](50), 1))
	errs, _ = Validator{Limits: small}.RayCluster(rc)
	if len(errs) != 1 || errs[0].Error() != want[1] {
		t.Errorf("got %v\nwant %s", errs, want[1])
	}
}

func TestPodBoundsOnUpdate(t *testing.T) {
	i := ptr.To[int32]
	over := group("g", i(200), i(0), i(300), 1) // stored before the bound was lowered to 100
	cases := map[string]struct {
		old, new rayv1.WorkerGroupSpec
		want     field.ErrorList
	}{
		"unchanged over the bound (a relabel)": {old: over, new: over},
		"scaled down, still over the bound":    {old: over, new: group("g", i(150), i(0), i(300), 1)},
		"scaled up while over the bound": {
			old: over, new: group("g", i(201), i(0), i(300), 1),
			want: field.ErrorList{
				field.Invalid(p("spec.workerGroupSpecs[0].replicas"), nil, ""),
				{Type: field.ErrorTypeTooMany, Field: "spec.workerGroupSpecs"},
			},
		},
		"crossing the bound from below": {
			old: group("g", i(100), i(0), i(300), 1), new: group("g", i(101), i(0), i(300), 1),
			want: field.ErrorList{field.Invalid(p("spec.workerGroupSpecs[0].replicas"), nil, "")},
		},
		"more hosts per replica is more pods": {
			old: over, new: group("g", i(200), i(0), i(300), 2),
			want: field.ErrorList{
				field.Invalid(p("spec.workerGroupSpecs[0].replicas"), nil, ""),
				{Type: field.ErrorTypeTooMany, Field: "spec.workerGroupSpecs"},
			},
		},
		"a renamed group is a new group": {
			old: over, new: group("renamed", i(200), i(0), i(300), 1),
			want: field.ErrorList{field.Invalid(p("spec.workerGroupSpecs[0].replicas"), nil, "")},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			errs, _ := Validator{Limits: Limits{MaxPodsPerGroup: 100, MaxPodsPerCluster: 201}}.RayClusterUpdate(
				cluster(withGroups(tc.old)), cluster(withGroups(tc.new)))
			diffErrors(t, tc.want, errs)
		})
	}
}

func TestUpgradeSurgeWarning(t *testing.T) {
	limits := Limits{MaxPodsPerGroup: 100, MaxPodsPerCluster: 100}
	sized := func(replicas int32) func(*rayv1.RayService) {
		return func(s *rayv1.RayService) {
			g := &s.Spec.RayClusterSpec.WorkerGroupSpecs[0]
			g.Replicas, g.MaxReplicas = ptr.To(replicas), ptr.To(replicas)
		}
	}
	_, warnings := Validator{Limits: limits}.RayService(service(sized(49)))
	diffWarnings(t, nil, warnings)
	_, warnings = Validator{Limits: limits}.RayService(service(sized(50)))
	diffWarnings(t, []string{"spec.upgradeStrategy.type: NewCluster runs the old and the new cluster side by side during an upgrade, up to 102 pods, " +
		"more than the 100 pods allowed per cluster (the manager's --max-pods-per-cluster); make sure the namespace's quota and the nodes can hold both"}, warnings)
	_, warnings = Validator{Limits: limits}.RayService(service(func(s *rayv1.RayService) {
		sized(50)(s)
		s.Spec.UpgradeStrategy = &rayv1.RayServiceUpgradeStrategy{Type: ptr.To(rayv1.None)}
	}))
	diffWarnings(t, nil, warnings)
}

// TestValidationDoesNotAllocatePerPod: what validation allocates does not depend on the
// counts an object asks for.
func TestValidationDoesNotAllocatePerPod(t *testing.T) {
	allocs := func(replicas, numOfHosts int32) float64 {
		svc := service(func(s *rayv1.RayService) {
			g := &s.Spec.RayClusterSpec.WorkerGroupSpecs[0]
			g.Replicas, g.MinReplicas, g.MaxReplicas, g.NumOfHosts = ptr.To(replicas), ptr.To(replicas), ptr.To(replicas), numOfHosts
		})
		return testing.AllocsPerRun(20, func() { _, _ = RayService(svc, gateOn) })
	}
	// Both are over every bound, so both get the same errors.
	big, huge := allocs(10000, 10), allocs(math.MaxInt32, math.MaxInt32)
	if huge > big {
		t.Errorf("validating 2147483647 × 2147483647 pods allocates %.0f times, 10000 × 10 pods %.0f", huge, big)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for range 10 {
		_ = Validator{}.StoredRayService(service(func(s *rayv1.RayService) {
			s.Spec.RayClusterSpec.WorkerGroupSpecs[0].Replicas = ptr.To[int32](math.MaxInt32)
		}))
	}
	runtime.ReadMemStats(&after)
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 4<<20 {
		t.Errorf("10 validations of 2147483647 replicas allocated %d bytes", grew)
	}
}
