package validation

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
)

func TestUpgradeActionAdmission(t *testing.T) {
	upgrading := func(s *rayv1.RayService) {
		s.Status.ActiveServiceStatus.RayClusterName = "svc-aaaaa"
		s.Status.PendingServiceStatus.RayClusterName = "svc-bbbbb"
	}
	firstCluster := func(s *rayv1.RayService) { s.Status.PendingServiceStatus.RayClusterName = "svc-aaaaa" }
	rollingBack := func(s *rayv1.RayService) {
		upgrading(s)
		s.Status.Conditions = []metav1.Condition{{Type: string(rayv1.RollbackInProgress), Status: metav1.ConditionTrue, Reason: "DesiredClusterSpecChanged"}}
	}
	action := upgradeActionPath
	target := upgradeTargetPath
	cases := []struct {
		name           string
		status         func(*rayv1.RayService)
		act, tgt       string
		old            map[string]string // nil: create
		want           field.ErrorList
		wantDetailPart string
	}{
		{name: "pause the upgrade in flight", status: upgrading, act: "pause", tgt: "svc-bbbbb", old: map[string]string{}},
		{name: "promote the upgrade in flight", status: upgrading, act: "promote", tgt: "svc-bbbbb", old: map[string]string{}},
		{name: "abort the upgrade in flight", status: upgrading, act: "abort", tgt: "svc-bbbbb", old: map[string]string{}},
		{name: "promote while rolling back", status: rollingBack, act: "promote", tgt: "svc-bbbbb", old: map[string]string{},
			want: field.ErrorList{field.Invalid(action, nil, "")}, wantDetailPart: "is rolling back (the spec is the active RayCluster's again), so there is nothing to promote"},
		{name: "pause and abort while rolling back", status: rollingBack, act: "abort", tgt: "svc-bbbbb", old: map[string]string{}},
		{name: "resume without target", status: upgrading, act: "resume", old: map[string]string{}},
		{name: "resume with no upgrade (lifts an abort)", act: "resume", old: map[string]string{}},
		{name: "unknown action", status: upgrading, act: "rollback", tgt: "svc-bbbbb", old: map[string]string{},
			want: field.ErrorList{field.NotSupported[string](action, nil, nil)}, wantDetailPart: `supported values: "pause", "resume", "abort", "promote"`},
		{name: "promote when no upgrade runs", act: "promote", tgt: "svc-bbbbb", old: map[string]string{},
			want: field.ErrorList{field.Invalid(action, nil, "")}, wantDetailPart: "no upgrade is running: the RayService has no pending RayCluster to promote"},
		{name: "abort while the first cluster initializes", status: firstCluster, act: "abort", tgt: "svc-aaaaa", old: map[string]string{},
			want: field.ErrorList{field.Invalid(action, nil, "")}, wantDetailPart: "no upgrade is running"},
		{name: "pause without target", status: upgrading, act: "pause", old: map[string]string{},
			want: field.ErrorList{field.Required(target, "")}, wantDetailPart: "(now svc-bbbbb)"},
		{name: "promote another cluster", status: upgrading, act: "promote", tgt: "svc-ccccc", old: map[string]string{},
			want: field.ErrorList{field.Invalid(target, nil, "")}, wantDetailPart: "RayCluster svc-ccccc is not the pending cluster of this RayService (the upgrade in flight is to svc-bbbbb)"},
		{name: "target without action", status: upgrading, tgt: "svc-bbbbb", old: map[string]string{},
			want: field.ErrorList{field.Required(action, "")}},
		{name: "create with promote", act: "promote", tgt: "x",
			want: field.ErrorList{field.Invalid(action, nil, "")}},
		{name: "unchanged stale promote never blocks other updates", act: "promote", tgt: "svc-bbbbb",
			old: map[string]string{rayv1.UpgradeActionKey: "promote", rayv1.UpgradeTargetKey: "svc-bbbbb"}},
		{name: "changing only the target is checked", status: upgrading, act: "promote", tgt: "svc-zzzzz",
			old:  map[string]string{rayv1.UpgradeActionKey: "promote", rayv1.UpgradeTargetKey: "svc-bbbbb"},
			want: field.ErrorList{field.Invalid(target, nil, "")}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			svc := service(func(s *rayv1.RayService) {
				s.Annotations = map[string]string{}
				if tc.act != "" {
					s.Annotations[rayv1.UpgradeActionKey] = tc.act
				}
				if tc.tgt != "" {
					s.Annotations[rayv1.UpgradeTargetKey] = tc.tgt
				}
				if tc.status != nil {
					tc.status(s)
				}
			})
			var errs field.ErrorList
			if tc.old == nil {
				errs, _ = RayService(svc, gateOff)
			} else {
				old := svc.DeepCopy()
				old.Annotations = tc.old
				errs, _ = RayServiceUpdate(old, svc, gateOff)
			}
			diffErrors(t, tc.want, errs)
			if tc.wantDetailPart != "" && (len(errs) == 0 || !strings.Contains(errs[0].Error(), tc.wantDetailPart)) {
				t.Errorf("error %v does not say %q", errs, tc.wantDetailPart)
			}
			// The controller never refuses a stored action: one that does not apply is inert.
			diffErrors(t, nil, Validator{Gates: gateOff}.StoredRayService(svc))
		})
	}
}
