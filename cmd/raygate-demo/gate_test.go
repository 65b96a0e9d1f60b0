package main

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	raygatev1alpha1 "github.com/raygate/raygate/apis/raygate/v1alpha1"
	"github.com/raygate/raygate/internal/validation"
)

// The policy --gate applies is one admission accepts.
func TestGatePolicyIsValid(t *testing.T) {
	var p raygatev1alpha1.UpgradePolicy
	if err := yaml.UnmarshalStrict([]byte(gatePolicy("default")), &p); err != nil {
		t.Fatal(err)
	}
	if errs := validation.UpgradePolicy(nil, &p); len(errs) > 0 {
		t.Errorf("the demo's UpgradePolicy is invalid: %v", errs.ToAggregate())
	}
	if p.Name != gatePolicyName || p.Namespace != "default" || len(p.Spec.Gates) != 1 {
		t.Errorf("unexpected policy %+v", p)
	}
}

func TestGateWatch(t *testing.T) {
	svc := func(status metav1.ConditionStatus, reason, msg string) *rayv1.RayService {
		s := &rayv1.RayService{}
		if reason != "" {
			s.Status.Conditions = []metav1.Condition{{Type: raygatev1alpha1.UpgradeGatesCondition, Status: status, Reason: reason, Message: msg}}
		}
		return s
	}
	var off *gateWatch
	if off.observe(svc(metav1.ConditionTrue, raygatev1alpha1.GatesPassed, "x")) != "" || off.verdict() != nil {
		t.Error("without --gate the watch says nothing")
	}
	g := &gateWatch{}
	if g.verdict() == nil {
		t.Error("no condition seen: the verdict must fail")
	}
	if n := g.observe(svc("", "", "")); n != "" {
		t.Errorf("no condition: %q", n)
	}
	if n := g.observe(svc(metav1.ConditionUnknown, raygatev1alpha1.GatesEvaluating, "evaluating")); n != "UpgradeGates Unknown GatesEvaluating: evaluating" {
		t.Errorf("evaluating: %q", n)
	}
	if g.verdict() == nil {
		t.Error("never passed: the verdict must fail")
	}
	if n := g.observe(svc(metav1.ConditionTrue, raygatev1alpha1.GatesPassed, "error-ratio 0 <= 0.01")); n == "" {
		t.Error("the pass was not reported")
	}
	if n := g.observe(svc(metav1.ConditionTrue, raygatev1alpha1.GatesPassed, "error-ratio 0 <= 0.01")); n != "" {
		t.Errorf("an unchanged condition was reported again: %q", n)
	}
	if err := g.verdict(); err != nil {
		t.Error(err)
	}
}
