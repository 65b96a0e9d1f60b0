package validation

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
)

func TestInitializingTimeout(t *testing.T) {
	cases := []struct {
		value       *string // nil: no annotation
		want        time.Duration
		ok, valid   bool
		description string
	}{
		{nil, 0, false, true, "absent: no timeout"},
		{ptr.To(""), 0, false, true, "empty: no timeout, as KubeRay"},
		{ptr.To("30m"), 30 * time.Minute, true, true, "Go duration"},
		{ptr.To("1h30m"), 90 * time.Minute, true, true, "compound Go duration"},
		{ptr.To("1800"), 30 * time.Minute, true, true, "whole seconds"},
		{ptr.To("0"), 0, true, false, "zero (a duration without unit): not positive"},
		{ptr.To("0s"), 0, true, false, "zero duration"},
		{ptr.To("-5m"), 0, true, false, "negative duration"},
		{ptr.To("-10"), 0, true, false, "negative seconds"},
		{ptr.To("1.5"), 0, true, false, "fractional seconds without a unit"},
		{ptr.To("soon"), 0, true, false, "not a duration"},
		{ptr.To("99999999999999999"), 0, true, false, "more seconds than a duration holds"},
	}
	for _, tc := range cases {
		t.Run(tc.description, func(t *testing.T) {
			a := map[string]string{}
			if tc.value != nil {
				a[InitializingTimeoutAnnotation] = *tc.value
			}
			got, ok, valid := InitializingTimeout(a)
			if got != tc.want || ok != tc.ok || valid != tc.valid {
				t.Errorf("InitializingTimeout(%v) = %v, %v, %v; want %v, %v, %v", a, got, ok, valid, tc.want, tc.ok, tc.valid)
			}
		})
	}
}

func TestRayServiceInitializingTimeoutAnnotation(t *testing.T) {
	path := field.NewPath("metadata", "annotations").Key(InitializingTimeoutAnnotation)
	for value, want := range map[string]field.ErrorList{
		"10m":   nil,
		"600":   nil,
		"0":     {field.Invalid(path, nil, "")},
		"never": {field.Invalid(path, nil, "")},
	} {
		svc := service(func(s *rayv1.RayService) { s.Annotations = map[string]string{InitializingTimeoutAnnotation: value} })
		errs, _ := RayService(svc, gateOff)
		diffErrors(t, want, errs)
		// The controller refuses what admission refuses: a RayService stored while the
		// webhook was off is not run with a timeout it cannot read.
		diffErrors(t, want, Validator{Gates: gateOff}.StoredRayService(svc))
	}
	errs, _ := RayService(service(func(s *rayv1.RayService) {
		s.Annotations = map[string]string{InitializingTimeoutAnnotation: "never"}
	}), gateOff)
	const msg = `metadata.annotations[ray.io/initializing-timeout]: Invalid value: "never": ` + errInitializingTimeout
	if len(errs) != 1 || errs[0].Error() != msg {
		t.Errorf("got %v, want %s", errs, msg)
	}
}
