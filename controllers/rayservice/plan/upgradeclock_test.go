package plan

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
)

func TestExpectedUpgrade(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	incr := rayv1.NewClusterWithIncrementalUpgrade
	slow := pacing{MaxSurge: 20, Step: 10, Interval: 5 * time.Minute}
	fast := pacing{MaxSurge: 100, Step: 50, Interval: 10 * time.Second}
	cases := []struct {
		name string
		in   upgradeProgress
		want time.Duration
	}{
		{"NewCluster has no pacing: the slack alone", upgradeProgress{Strategy: rayv1.NewCluster, Pacing: slow, Start: t0}, 0},
		{"None has no pacing", upgradeProgress{Strategy: rayv1.None, Pacing: slow, Start: t0}, 0},
		{"no start time: nothing expected", upgradeProgress{Strategy: incr, Pacing: slow}, 0},
		{"slow pacing, nothing moved yet: 10 steps of 5 minutes", upgradeProgress{Strategy: incr, Pacing: slow, Start: t0}, 50 * time.Minute},
		{"fast pacing, nothing moved yet: 2 steps of 10s", upgradeProgress{Strategy: incr, Pacing: fast, Start: t0}, 20 * time.Second},
		{"a step that does not divide 100 rounds up", upgradeProgress{Strategy: incr, Pacing: pacing{Step: 30, Interval: time.Minute}, Start: t0}, 4 * time.Minute},
		{"half way, last step 20 min in: 20 min + 5 steps", upgradeProgress{Strategy: incr, Pacing: slow, Start: t0, PendingTraffic: 50, Moves: []time.Time{at(1200)}}, 20*time.Minute + 25*time.Minute},
		{"all traffic moved: only the time taken so far", upgradeProgress{Strategy: incr, Pacing: slow, Start: t0, PendingTraffic: 100, Moves: []time.Time{at(3000)}}, 50 * time.Minute},
		{"resumed after a 2h pause: measured from the resume", upgradeProgress{Strategy: incr, Pacing: slow, Start: t0, PendingTraffic: 40, Moves: []time.Time{at(900), at(900 + 7200)}}, 135*time.Minute + 30*time.Minute},
		{"going back from 30%: 3 steps back", upgradeProgress{Strategy: incr, Pacing: slow, Start: t0, PendingTraffic: 30, Back: true, Moves: []time.Time{at(600)}}, 10*time.Minute + 15*time.Minute},
		{"moves before the start (an earlier upgrade's) are ignored", upgradeProgress{Strategy: incr, Pacing: fast, Start: t0, Moves: []time.Time{at(-600), {}}}, 20 * time.Second},
		{"a zero step cannot divide by zero", upgradeProgress{Strategy: incr, Pacing: pacing{Interval: time.Minute}, Start: t0}, time.Minute},
		{"a traffic value out of range is clamped", upgradeProgress{Strategy: incr, Pacing: fast, Start: t0, PendingTraffic: 250}, 0},
	}
	for _, tc := range cases {
		if got := expectedUpgrade(tc.in); got != tc.want {
			t.Errorf("%s: got %s, want %s", tc.name, got, tc.want)
		}
	}
}

func TestUpgradeClockOfReadsTheStatus(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	cond := func(typ rayv1.RayServiceConditionType, status metav1.ConditionStatus, reason string, at time.Time) metav1.Condition {
		return metav1.Condition{Type: string(typ), Status: status, Reason: reason, LastTransitionTime: metav1.NewTime(at)}
	}
	svc := func(conds ...metav1.Condition) *rayv1.RayService {
		s := &rayv1.RayService{}
		s.Spec.UpgradeStrategy = &rayv1.RayServiceUpgradeStrategy{
			Type:                  ptr.To(rayv1.NewClusterWithIncrementalUpgrade),
			ClusterUpgradeOptions: &rayv1.ClusterUpgradeOptions{StepSizePercent: ptr.To[int32](20), IntervalSeconds: ptr.To[int32](60), MaxSurgePercent: ptr.To[int32](20)},
		}
		s.Status.Conditions = conds
		s.Status.ActiveServiceStatus = rayv1.RayServiceStatus{RayClusterName: "a", TrafficRoutedPercent: ptr.To[int32](60)}
		s.Status.PendingServiceStatus = rayv1.RayServiceStatus{RayClusterName: "b", TrafficRoutedPercent: ptr.To[int32](40), TargetCapacity: ptr.To[int32](40),
			LastTrafficMigratedTime: ptr.To(metav1.NewTime(t0.Add(3 * time.Minute)))}
		return s
	}
	upgrading := cond(rayv1.UpgradeInProgress, metav1.ConditionTrue, "BothActivePendingClustersExist", t0)
	cases := []struct {
		name string
		svc  *rayv1.RayService
		ok   bool
		want time.Duration
	}{
		{"no upgrade in progress", svc(cond(rayv1.UpgradeInProgress, metav1.ConditionFalse, "NoPendingCluster", t0)), false, 0},
		{"40% moved 3 min in: 3 min + 3 steps of 1 min", svc(upgrading), true, 6 * time.Minute},
		{"paused 10 min in: measured from the pause", svc(upgrading, cond(rayv1.UpgradeAction, metav1.ConditionTrue, ReasonUpgradePaused, t0.Add(10*time.Minute))), true, 13 * time.Minute},
		{"aborting at 40%: 2 steps back", svc(upgrading, cond(rayv1.UpgradeAction, metav1.ConditionTrue, ReasonUpgradeAborting, t0.Add(5*time.Minute))), true, 7 * time.Minute},
		{"rolling back at 40%: 2 steps back", svc(upgrading, cond(rayv1.RollbackInProgress, metav1.ConditionTrue, "DesiredClusterSpecChanged", t0)), true, 5 * time.Minute},
	}
	for _, tc := range cases {
		c, ok := UpgradeClockOf(tc.svc)
		if ok != tc.ok || c.Expected != tc.want {
			t.Errorf("%s: got %v %s, want %v %s", tc.name, ok, c.Expected, tc.ok, tc.want)
		}
		if ok && !c.Start.Equal(t0) {
			t.Errorf("%s: start %s, want %s", tc.name, c.Start, t0)
		}
	}
}
