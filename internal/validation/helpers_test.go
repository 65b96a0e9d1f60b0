package validation

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"k8s.io/apimachinery/pkg/util/validation/field"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/defaulting"
	"github.com/raygate/raygate/internal/features"
	"github.com/raygate/raygate/test/builders"
)

// ignoreDetail compares errors by type and path only, as kueue's webhook tests do; tests
// that are about the wording check Detail explicitly.
var ignoreDetail = cmpopts.IgnoreFields(field.Error{}, "BadValue", "Detail")

func diffErrors(t *testing.T, want, got field.ErrorList) {
	t.Helper()
	if diff := cmp.Diff(want, got, ignoreDetail, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("errors (-want +got):\n%s\ngot: %v", diff, got.ToAggregate())
	}
}

func diffWarnings(t *testing.T, want, got []string) {
	t.Helper()
	if diff := cmp.Diff(want, got, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("warnings (-want +got):\n%s", diff)
	}
}

var (
	gateOn  = features.Static{features.RayServiceIncrementalUpgrade: true}
	gateOff = features.Static{features.RayServiceIncrementalUpgrade: false}
)

// service is a valid, defaulted RayService after mutate.
func service(mutate func(*rayv1.RayService)) *rayv1.RayService {
	svc := builders.RayService("svc", "ns").Obj()
	if mutate != nil {
		mutate(svc)
	}
	defaulting.RayService(svc)
	return svc
}

// incremental is a valid incremental RayService (gate on) after mutate.
func incremental(mutate func(*rayv1.RayService)) *rayv1.RayService {
	return service(func(s *rayv1.RayService) {
		*s = *builders.RayService("svc", "ns").Incremental(40, 10, 30, "istio").Obj()
		if mutate != nil {
			mutate(s)
		}
	})
}

// cluster is a valid, defaulted RayCluster after mutate.
func cluster(mutate func(*rayv1.RayCluster)) *rayv1.RayCluster {
	rc := builders.RayCluster("rc", "ns").Obj()
	if mutate != nil {
		mutate(rc)
	}
	defaulting.RayCluster(rc)
	return rc
}

func p(s string) *field.Path {
	// Paths in expectations are written as users read them; field.NewPath with one segment
	// prints the same string.
	return field.NewPath(s)
}
