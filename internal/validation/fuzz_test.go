package validation

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/defaulting"
	"github.com/raygate/raygate/internal/features"
	"github.com/raygate/raygate/internal/validation/fuzzer"
)

// The fuzzers check that validation never panics on any object, and that it never blames a
// value that defaulting filled in: validate(Default(x)) has no error at (or below) a path
// where Default(x) differs from x. Seeds in testdata/fuzz run as plain tests.

func randomGates(data []byte) features.Gates {
	on := len(data) > 0 && data[len(data)-1]&1 == 1
	return features.Static{features.RayServiceIncrementalUpgrade: on}
}

func FuzzValidateRayService(f *testing.F) {
	f.Add([]byte("seed"))
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15})
	f.Fuzz(func(t *testing.T, data []byte) {
		var old, svc rayv1.RayService
		fill := fuzzer.New(data)
		fill.Fill(&svc)
		fill.Fill(&old)
		gates := randomGates(data)

		errs, _ := RayService(&svc, gates)
		_ = errs.ToAggregate()
		errs, _ = RayServiceUpdate(&old, &svc, gates)
		_ = errs.ToAggregate()
		if name, ok := GatewayClassToCheck(&svc); ok {
			_ = GatewayClassWarnings(name, GatewayClassNotFound)
		}

		defaulted := svc.DeepCopy()
		defaulting.RayService(defaulted)
		errs, _ = RayService(defaulted, gates)
		assertNotBlamedForDefaults(t, &svc, defaulted, errs)
	})
}

func FuzzValidateRayCluster(f *testing.F) {
	f.Add([]byte("seed"))
	f.Add([]byte{255, 254, 253, 252, 251, 250, 249, 248, 247, 246, 245, 244})
	f.Fuzz(func(t *testing.T, data []byte) {
		var old, rc rayv1.RayCluster
		fill := fuzzer.New(data)
		fill.Fill(&rc)
		fill.Fill(&old)
		gates := randomGates(data)

		errs, _ := RayCluster(&rc, gates)
		_ = errs.ToAggregate()
		errs, _ = RayClusterUpdate(&old, &rc, gates)
		_ = errs.ToAggregate()

		defaulted := rc.DeepCopy()
		defaulting.RayCluster(defaulted)
		errs, _ = RayCluster(defaulted, gates)
		assertNotBlamedForDefaults(t, &rc, defaulted, errs)
	})
}

func FuzzServeConfig(f *testing.F) {
	for _, s := range []string{
		"applications:\n  - name: a\n    import_path: m:app\n    route_prefix: /a\n",
		"applications:\n  - {name: a}\n  - {name: a, route_prefix: a}\n",
		"{{{", "applications: [1, null, {name: {}}]", "a: &x [*x]",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, config string) {
		errs := validateServeConfig(config, field.NewPath("spec", "serveConfigV2"))
		for _, e := range errs {
			if !strings.HasPrefix(e.Field, "spec.serveConfigV2") {
				t.Fatalf("error outside serveConfigV2: %v", e)
			}
		}
	})
}

func assertNotBlamedForDefaults(t *testing.T, before, after any, errs field.ErrorList) {
	t.Helper()
	changed, err := fuzzer.ChangedPaths(before, after)
	if err != nil {
		t.Fatalf("marshalling: %v", err)
	}
	for _, e := range errs {
		for _, c := range changed {
			if e.Field == c || strings.HasPrefix(e.Field, c+".") || strings.HasPrefix(e.Field, c+"[") {
				t.Fatalf("validation blames %s, which defaulting set (changed: %v): %v", e.Field, changed, e)
			}
		}
	}
}
