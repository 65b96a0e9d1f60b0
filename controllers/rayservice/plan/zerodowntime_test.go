package plan

import (
	"testing"

	"k8s.io/utils/ptr"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/features"
	"github.com/raygate/raygate/internal/validation"
	"github.com/raygate/raygate/test/builders"
)

func TestZeroDowntimeOffPlansTheNoneStrategy(t *testing.T) {
	unset := builders.RayService("svc", "ns").Obj()
	unset.Spec.UpgradeStrategy = nil
	newCluster := builders.RayService("svc", "ns").Strategy(rayv1.NewCluster).Obj()
	for _, tc := range []struct {
		name         string
		svc          *rayv1.RayService
		zeroDowntime bool
		want         rayv1.RayServiceUpgradeType
	}{
		{"no type, zero downtime on", unset, true, rayv1.NewCluster},
		{"no type, ENABLE_ZERO_DOWNTIME=false", unset, false, rayv1.None},
		{"the spec's type takes precedence", newCluster, false, rayv1.NewCluster},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := tc.svc.DeepCopy()
			want := Admit(WithUpgradeDefault(tc.svc, tc.zeroDowntime), features.Static{}, validation.Limits{}, "v1")
			if want.Invalid != "" || want.Strategy != tc.want {
				t.Errorf("strategy %s (%s), want %s", want.Strategy, want.Invalid, tc.want)
			}
			if tc.svc.Spec.UpgradeStrategy != nil && !ptr.Equal(tc.svc.Spec.UpgradeStrategy.Type, before.Spec.UpgradeStrategy.Type) {
				t.Error("the RayService itself was changed")
			}
		})
	}
}

// With zero-downtime upgrades off, a cluster spec change updates the cluster in place: no
// second cluster is created.
func TestPlanWithZeroDowntimeOffCreatesNoSecondCluster(t *testing.T) {
	svc := builders.RayService("svc", "ns").Obj()
	svc.Spec.UpgradeStrategy = nil
	w := newWorld(WithUpgradeDefault(svc, false))
	settle(t, w)
	w.updateSpec(func(s *rayv1.RayService) {
		s.Spec.RayClusterSpec.HeadGroupSpec.Template.Spec.Containers[0].Image = "rayproject/ray:2.53.0"
	})
	p, err := w.reconcile()
	if err != nil {
		t.Fatal(err)
	}
	if c := actionsOf[CreateCluster](p.out); len(c) != 0 || p.out.Status.PendingServiceStatus.RayClusterName != "" {
		t.Errorf("a new cluster with ENABLE_ZERO_DOWNTIME=false: %v", c)
	}
}
