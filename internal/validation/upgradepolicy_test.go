package validation

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	raygatev1alpha1 "github.com/raygate/raygate/apis/raygate/v1alpha1"
)

func policy(gates ...raygatev1alpha1.Gate) *raygatev1alpha1.UpgradePolicy {
	return &raygatev1alpha1.UpgradePolicy{ObjectMeta: metav1.ObjectMeta{Name: "pol", Namespace: "ns"}, Spec: raygatev1alpha1.UpgradePolicySpec{Gates: gates}}
}

func TestUpgradePolicy(t *testing.T) {
	good := raygatev1alpha1.Gate{Name: "errors", Query: `sum(rate(errors{namespace="{{namespace}}",pod=~"{{pending}}-.*"}[1m]))`, Max: "0.05"}
	cases := []struct {
		name string
		p    *raygatev1alpha1.UpgradePolicy
		want []string // field paths of the errors, in order
	}{
		{name: "valid", p: policy(good)},
		{name: "no gates", p: policy(), want: []string{"spec.gates"}},
		{name: "unknown placeholder", p: policy(raygatev1alpha1.Gate{Name: "x", Query: `up{job="{{secret}}"}`, Max: "1"}), want: []string{"spec.gates[0].query"}},
		{name: "unbalanced query", p: policy(raygatev1alpha1.Gate{Name: "x", Query: `sum(rate(x[1m])`, Max: "1"}), want: []string{"spec.gates[0].query"}},
		{name: "no bounds", p: policy(raygatev1alpha1.Gate{Name: "x", Query: "up"}), want: []string{"spec.gates[0].max"}},
		{name: "bad numbers and min above max", p: policy(raygatev1alpha1.Gate{Name: "x", Query: "up", Max: "NaN", Min: "lots"}), want: []string{"spec.gates[0].min", "spec.gates[0].max"}},
		{name: "min above max", p: policy(raygatev1alpha1.Gate{Name: "x", Query: "up", Max: "1", Min: "2"}), want: []string{"spec.gates[0].min"}},
		{name: "duplicate and bad names", p: policy(good, good, raygatev1alpha1.Gate{Name: "Bad_Name", Query: "up", Max: "1"}), want: []string{"spec.gates[1].name", "spec.gates[2].name"}},
		{name: "bounds", p: func() *raygatev1alpha1.UpgradePolicy {
			p := policy(good)
			p.Spec.SettleSeconds, p.Spec.QueryTimeoutSeconds, p.Spec.OnFailure = ptr.To[int32](7200), ptr.To[int32](60), "Explode"
			return p
		}(), want: []string{"spec.settleSeconds", "spec.queryTimeoutSeconds", "spec.onFailure"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, e := range UpgradePolicy(nil, tc.p) {
				got = append(got, e.Field)
			}
			if strings.Join(got, ",") != strings.Join(tc.want, ",") {
				t.Errorf("errors at %v, want %v: %v", got, tc.want, UpgradePolicy(nil, tc.p))
			}
		})
	}
}

func TestUpgradePolicyRatchets(t *testing.T) {
	stored := policy(raygatev1alpha1.Gate{Name: "old", Query: `up{x="{{legacy}}"}`, Max: "1"})
	updated := stored.DeepCopy()
	updated.Labels = map[string]string{"team": "a"}
	updated.Spec.Gates = append(updated.Spec.Gates, raygatev1alpha1.Gate{Name: "new", Query: "up", Max: "1"})
	if errs := UpgradePolicy(stored, updated); len(errs) > 0 {
		t.Errorf("an unchanged invalid gate blocks an update: %v", errs)
	}
	updated.Spec.Gates[0].Max = "2"
	if errs := UpgradePolicy(stored, updated); len(errs) != 1 || errs[0].Field != "spec.gates[0].query" {
		t.Errorf("a changed invalid gate is not checked: %v", errs)
	}
}

func TestUpgradePolicyAnnotation(t *testing.T) {
	svc := &rayv1.RayService{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{raygatev1alpha1.UpgradePolicyAnnotation: "Not A Name"}}}
	errs, warnings := UpgradePolicyAnnotation(nil, svc)
	if len(errs) == 0 || errs[0].Field != "metadata.annotations[raygate.ray.io/upgrade-policy]" {
		t.Errorf("errors %v", errs)
	}
	if len(warnings) != 1 || !strings.Contains(warnings[0], "NewCluster upgrade switches all traffic at once") {
		t.Errorf("warnings %v", warnings)
	}
	if errs, _ := UpgradePolicyAnnotation(svc.DeepCopy(), svc); len(errs) > 0 {
		t.Errorf("an unchanged annotation is checked again: %v", errs)
	}
	svc.Annotations[raygatev1alpha1.UpgradePolicyAnnotation] = "canary-gates"
	svc.Spec.UpgradeStrategy = &rayv1.RayServiceUpgradeStrategy{Type: ptr.To(rayv1.NewClusterWithIncrementalUpgrade)}
	if errs, warnings := UpgradePolicyAnnotation(nil, svc); len(errs)+len(warnings) > 0 {
		t.Errorf("valid: %v %v", errs, warnings)
	}
}
