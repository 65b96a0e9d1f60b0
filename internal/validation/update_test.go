package validation

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/features"
)

func TestRayServiceUpdate(t *testing.T) {
	upgrading := func(s *rayv1.RayService) { s.Status.PendingServiceStatus.RayClusterName = "svc-abcde" }
	upgradingByCondition := func(s *rayv1.RayService) {
		s.Status.Conditions = []metav1.Condition{{Type: string(rayv1.UpgradeInProgress), Status: metav1.ConditionTrue}}
	}
	cases := map[string]struct {
		old, new *rayv1.RayService
		gates    features.Gates
		want     field.ErrorList
	}{
		// spec.managedBy.
		"managedBy: unset to raygate's value is no change": {
			old: service(nil),
			new: service(func(s *rayv1.RayService) { s.Spec.ManagedBy = ptr.To(kubeRayManager) }),
		},
		"managedBy: handing a service to MultiKueue is rejected": {
			old:  service(nil),
			new:  service(func(s *rayv1.RayService) { s.Spec.ManagedBy = ptr.To(MultiKueueManager) }),
			want: field.ErrorList{field.Invalid(p("spec.managedBy"), nil, "")},
		},
		"managedBy: taking a service back from MultiKueue is rejected": {
			old:  service(func(s *rayv1.RayService) { s.Spec.ManagedBy = ptr.To(MultiKueueManager) }),
			new:  service(nil),
			want: field.ErrorList{field.Invalid(p("spec.managedBy"), nil, "")},
		},
		"managedBy: other changes of a MultiKueue service pass": {
			old: service(func(s *rayv1.RayService) { s.Spec.ManagedBy = ptr.To(MultiKueueManager) }),
			new: service(func(s *rayv1.RayService) {
				s.Spec.ManagedBy = ptr.To(MultiKueueManager)
				s.Spec.ServeConfigV2 = strings.Replace(s.Spec.ServeConfigV2, "num_replicas", "num_replicas", 1)
				s.Labels = map[string]string{"team": "ml"}
			}),
		},
		// Ratcheting of the incremental-upgrade gate.
		"gate turned off: unrelated change passes": {
			old: incremental(nil), gates: gateOff,
			new: incremental(func(s *rayv1.RayService) {
				s.Spec.RayClusterSpec.HeadGroupSpec.Template.Spec.Containers[0].Image = "rayproject/ray:2.53.0"
			}),
		},
		"gate turned off: a label change passes": {
			old: incremental(nil), gates: gateOff,
			new: incremental(func(s *rayv1.RayService) { s.Labels = map[string]string{"team": "ml"} }),
		},
		"gate turned off: old stored before maxSurgePercent was defaulted": {
			old:   incremental(func(s *rayv1.RayService) { opts(s).MaxSurgePercent = ptr.To[int32](100) }),
			new:   incremental(func(s *rayv1.RayService) { opts(s).MaxSurgePercent = nil }),
			gates: gateOff,
		},
		"gate turned off: changing the gated options is rejected": {
			old: incremental(nil), gates: gateOff,
			new:  incremental(func(s *rayv1.RayService) { opts(s).StepSizePercent = ptr.To[int32](20) }),
			want: field.ErrorList{field.Forbidden(p("spec.upgradeStrategy.type"), "")},
		},
		"gate turned off: leaving the gated strategy passes": {
			old: incremental(nil), gates: gateOff,
			new: incremental(func(s *rayv1.RayService) {
				s.Spec.UpgradeStrategy = &rayv1.RayServiceUpgradeStrategy{Type: ptr.To(rayv1.NewCluster)}
			}),
		},
		"gate off: switching to the gated strategy is rejected": {
			old: service(nil), gates: gateOff,
			new:  incremental(nil),
			want: field.ErrorList{field.Forbidden(p("spec.upgradeStrategy.type"), "")},
		},
		"ratcheting keeps other rules": {
			old: incremental(nil), gates: gateOff,
			new:  incremental(func(s *rayv1.RayService) { s.Spec.RayClusterDeletionDelaySeconds = ptr.To[int32](-5) }),
			want: field.ErrorList{field.Invalid(p("spec.rayClusterDeletionDelaySeconds"), nil, "")},
		},

		// No strategy or Gateway change during an upgrade.
		"strategy change during an upgrade": {
			old: incremental(upgrading), gates: gateOn,
			new:  incremental(func(s *rayv1.RayService) { s.Spec.UpgradeStrategy.Type = ptr.To(rayv1.NewCluster) }),
			want: field.ErrorList{field.Forbidden(p("spec.upgradeStrategy.type"), "")},
		},
		"GatewayClass change during an upgrade": {
			old: incremental(upgradingByCondition), gates: gateOn,
			new:  incremental(func(s *rayv1.RayService) { opts(s).GatewayClassName = "envoy" }),
			want: field.ErrorList{field.Forbidden(p("spec.upgradeStrategy.clusterUpgradeOptions.gatewayClassName"), "")},
		},
		"pacing change during an upgrade is fine": {
			old: incremental(upgrading), gates: gateOn,
			new: incremental(func(s *rayv1.RayService) { opts(s).StepSizePercent = ptr.To[int32](5) }),
		},
		"strategy change without an upgrade": {
			old: incremental(nil), gates: gateOn,
			new: service(nil),
		},
		"unset type equals the NewCluster default": {
			old: service(func(s *rayv1.RayService) { upgrading(s) }),
			new: service(func(s *rayv1.RayService) {
				s.Spec.UpgradeStrategy = &rayv1.RayServiceUpgradeStrategy{Type: ptr.To(rayv1.NewCluster)}
			}),
		},

		// Deletion.
		"an object being deleted always passes": {
			old: service(func(s *rayv1.RayService) {
				s.Spec.RayClusterSpec.AuthOptions = &rayv1.AuthOptions{}
				s.Finalizers = []string{"x"}
			}),
			new: service(func(s *rayv1.RayService) {
				s.Spec.RayClusterSpec.AuthOptions = &rayv1.AuthOptions{}
				s.DeletionTimestamp = &metav1.Time{}
			}),
		},
		"create rules apply when old is nil": {
			new:  service(func(s *rayv1.RayService) { s.Spec.RayClusterDeletionDelaySeconds = ptr.To[int32](-1) }),
			want: field.ErrorList{field.Invalid(p("spec.rayClusterDeletionDelaySeconds"), nil, "")},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			gates := tc.gates
			if gates == nil {
				gates = gateOff
			}
			errs, _ := RayServiceUpdate(tc.old, tc.new, gates)
			diffErrors(t, tc.want, errs)
		})
	}
}

func TestUpgradeInProgressErrorExplains(t *testing.T) {
	old := incremental(func(s *rayv1.RayService) { s.Status.PendingServiceStatus.RayClusterName = "svc-abcde" })
	errs, _ := RayServiceUpdate(old, service(nil), gateOn)
	if len(errs) != 1 {
		t.Fatalf("got %v", errs)
	}
	for _, want := range []string{`RayCluster "svc-abcde"`, "wait until it finishes", "roll back by reverting spec.rayClusterConfig"} {
		if !strings.Contains(errs[0].Detail, want) {
			t.Errorf("detail %q does not contain %q", errs[0].Detail, want)
		}
	}
}

func TestRayClusterUpdate(t *testing.T) {
	invalid := func(rc *rayv1.RayCluster) { rc.Spec.TLSOptions = &rayv1.TLSOptions{} }
	old := cluster(invalid)
	if errs, _ := RayClusterUpdate(old, cluster(func(rc *rayv1.RayCluster) { invalid(rc); rc.Labels = map[string]string{"team": "ml"} }), gateOff); len(errs) != 0 {
		t.Errorf("relabelling a stored invalid object must pass (ratcheting), got %v", errs)
	}
	changed := cluster(func(rc *rayv1.RayCluster) { rc.Spec.TLSOptions = &rayv1.TLSOptions{Enabled: ptr.To(true)} })
	if errs, _ := RayClusterUpdate(old, changed, gateOff); len(errs) != 1 {
		t.Errorf("changing the invalid field must be rejected, got %v", errs)
	}
	deleting := cluster(func(rc *rayv1.RayCluster) { invalid(rc); rc.DeletionTimestamp = &metav1.Time{} })
	if errs, warnings := RayClusterUpdate(old, deleting, gateOff); errs != nil || warnings != nil {
		t.Errorf("an object being deleted must pass, got %v %v", errs, warnings)
	}
}
