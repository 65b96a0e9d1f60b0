package defaulting

import (
	"testing"

	"k8s.io/utils/ptr"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
)

func TestUpgradeTypeOf(t *testing.T) {
	incremental := rayv1.NewClusterWithIncrementalUpgrade
	for _, tc := range []struct {
		name         string
		strategy     *rayv1.RayServiceUpgradeStrategy
		zeroDowntime bool
		want         rayv1.RayServiceUpgradeType
	}{
		{"nothing set: zero downtime", nil, true, rayv1.NewCluster},
		{"zero downtime off: no new cluster", nil, false, rayv1.None},
		{"strategy without a type: the setting decides", &rayv1.RayServiceUpgradeStrategy{}, false, rayv1.None},
		{"the spec's NewCluster wins over zero downtime off", &rayv1.RayServiceUpgradeStrategy{Type: ptr.To(rayv1.NewCluster)}, false, rayv1.NewCluster},
		{"the spec's incremental wins over zero downtime off", &rayv1.RayServiceUpgradeStrategy{Type: &incremental}, false, incremental},
		{"the spec's None wins over zero downtime on", &rayv1.RayServiceUpgradeStrategy{Type: ptr.To(rayv1.None)}, true, rayv1.None},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := &rayv1.RayServiceSpec{UpgradeStrategy: tc.strategy}
			if got := UpgradeTypeOf(spec, tc.zeroDowntime); got != tc.want {
				t.Errorf("got %s, want %s", got, tc.want)
			}
		})
	}
}

func TestRayServiceWithZeroDowntimeOffLeavesTheTypeUnset(t *testing.T) {
	for _, strategy := range []*rayv1.RayServiceUpgradeStrategy{nil, {}} {
		svc := &rayv1.RayService{Spec: rayv1.RayServiceSpec{UpgradeStrategy: strategy.DeepCopy()}}
		RayServiceWith(svc, false)
		if s := svc.Spec.UpgradeStrategy; (strategy == nil) != (s == nil) || (s != nil && s.Type != nil) {
			t.Errorf("%+v: upgradeStrategy %+v, want as given", strategy, s)
		}
		if svc.Spec.RayClusterDeletionDelaySeconds == nil {
			t.Error("the rest is not defaulted")
		}
		RayServiceWith(svc, true)
		if got := UpgradeTypeOf(&svc.Spec, true); svc.Spec.UpgradeStrategy == nil || got != rayv1.NewCluster {
			t.Errorf("zero downtime on: type %v", got)
		}
	}
	svc := &rayv1.RayService{Spec: rayv1.RayServiceSpec{UpgradeStrategy: &rayv1.RayServiceUpgradeStrategy{Type: ptr.To(rayv1.NewCluster)}}}
	RayServiceWith(svc, false)
	if got := *svc.Spec.UpgradeStrategy.Type; got != rayv1.NewCluster {
		t.Errorf("a type the user set was changed to %s", got)
	}
}
