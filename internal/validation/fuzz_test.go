package validation

import (
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	corev1 "k8s.io/api/core/v1"
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

// strictPolicy and fuzzNamespace add the admin policy, a restricted namespace and a quota.
var strictPolicy = Policy{AllowedGatewayClasses: []string{"istio"}, AllowedServiceTypes: DefaultAllowedServiceTypes, AllowedImageRegistries: []string{"docker.io"}}

func fuzzNamespace() *Namespace {
	return &Namespace{Name: "ns", LabelsKnown: true, Labels: map[string]string{"pod-security.kubernetes.io/enforce": "restricted",
		"pod-security.kubernetes.io/warn": "baseline", "pod-security.kubernetes.io/audit": "restricted", "pod-security.kubernetes.io/audit-version": "v1.20"},
		Quotas: []corev1.ResourceQuota{quota("q", rl("requests.cpu", "1", "limits.memory", "1Gi", "pods", "3", "requests.nvidia.com/gpu", "1"), rl("pods", "1"))}}
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
		tight := Validator{Gates: gates, Limits: Limits{MaxPodsPerGroup: 1, MaxPodsPerCluster: 2}}
		errs, _ = tight.RayServiceUpdate(&old, &svc)
		_ = append(errs, tight.StoredRayService(&svc)...).ToAggregate()
		if name, ok := GatewayClassToCheck(&svc); ok {
			_ = GatewayClassWarnings(name, GatewayClassNotFound)
		}
		strict := Validator{Gates: gates, Policy: strictPolicy}
		errs, _ = strict.AdmitRayService(fuzzNamespace(), &old, &svc)
		_ = errs.ToAggregate()

		defaulted := svc.DeepCopy()
		defaulting.RayService(defaulted)
		errs, _ = RayService(defaulted, gates)
		assertNotBlamedForDefaults(t, &svc, defaulted, errs)
		// An update that changes nothing is never refused (ratcheting), however invalid.
		if errs, _ := RayServiceUpdate(defaulted, defaulted.DeepCopy(), gates); len(errs) > 0 && !UpgradeInProgress(defaulted) {
			t.Fatalf("an update that changes nothing was refused: %v", errs)
		}
		if errs, _ := strict.AdmitRayService(fuzzNamespace(), defaulted, defaulted.DeepCopy()); len(errs) > 0 && !UpgradeInProgress(defaulted) {
			t.Fatalf("an update that changes nothing was refused in a restricted namespace: %v", errs)
		}
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
		tight := Validator{Gates: gates, Limits: Limits{MaxPodsPerGroup: 1, MaxPodsPerCluster: 2}}
		errs, _ = tight.RayClusterUpdate(&old, &rc)
		_ = append(errs, tight.StoredRayCluster(&rc)...).ToAggregate()
		strict := Validator{Gates: gates, Policy: strictPolicy}
		errs, _ = strict.AdmitRayCluster(fuzzNamespace(), &old, &rc)
		_ = errs.ToAggregate()

		defaulted := rc.DeepCopy()
		defaulting.RayCluster(defaulted)
		errs, _ = RayCluster(defaulted, gates)
		assertNotBlamedForDefaults(t, &rc, defaulted, errs)
		if errs, _ := RayClusterUpdate(defaulted, defaulted.DeepCopy(), gates); len(errs) > 0 {
			t.Fatalf("an update that changes nothing was refused: %v", errs)
		}
		if errs, _ := strict.AdmitRayCluster(fuzzNamespace(), defaulted, defaulted.DeepCopy()); len(errs) > 0 {
			t.Fatalf("an update that changes nothing was refused in a restricted namespace: %v", errs)
		}
	})
}

// FuzzServeConfig checks that validateServeConfig, which reads the node tree, says what the
// controllers' parser (sigs.k8s.io/yaml) and the same rules on its result say: the same
// errors at the same paths for every document within the bounds, except documents only
// go-yaml v3's stricter grammar refuses.
// nonSpecificTag matches YAML's "!" tag, which go-yaml v3's node tree does not record.
var nonSpecificTag = regexp.MustCompile(`!([\s,\]}]|$)`)

func FuzzServeConfig(f *testing.F) {
	for _, s := range []string{
		"applications:\n  - name: a\n    import_path: m:app\n    route_prefix: /a\n",
		"applications:\n  - {name: a}\n  - {name: a, route_prefix: a}\n",
		"{{{", "applications: [1, null, {name: {}}]", "a: &x [*x]",
		"applications:\n  - &a {name: yes, import_path: 0x1F, route_prefix: ~}\n  - <<: *a\n    name: b\n",
		"applications:\n  - {name: !!str 1, import_path: !!int '7', route_prefix: !!null ''}\n",
		"x: &a [1, 2]\ny: [*a, *a, *a]\napplications: []\n", "? [a]\n: 1\n", "null: 1\n", "a: {<<: 1}\n", "{}:",
	} {
		f.Add(s)
	}
	root := field.NewPath("spec", "serveConfigV2")
	f.Fuzz(func(t *testing.T, config string) {
		got := validateServeConfig(config, root)
		for _, e := range got {
			if !strings.HasPrefix(e.Field, "spec.serveConfigV2") {
				t.Fatalf("error outside serveConfigV2: %v", e)
			}
			if e.Field == root.String() && strings.Contains(e.Detail, "aliases are expanded") {
				return // a bound the reference does not have
			}
		}
		if nonSpecificTag.MatchString(config) {
			return // a known difference, see resolveScalar
		}
		want := referenceServeConfig(config, root)
		if len(got) == 1 && strings.HasPrefix(got[0].Detail, "must be valid YAML") && len(want) == 0 {
			// go-yaml v3's grammar is stricter in places (e.g. text after the document's
			// first node, which v2 ignores): refusing such a document is safe; accepting one
			// v2 refuses would not be. Every other refusal must be v2's too.
			if strings.Contains(got[0].Detail, "a mapping key must be") {
				// A key that is a mapping or a list cannot be JSON; v2 misreads some of
				// them ("{}:" as an empty document), so refusing them is the safe reading.
				return
			}
			if _, err := parseServeYAML(config); err == nil {
				t.Fatalf("config %q: refused (%v) although both parsers read it", config, got)
			}
			return
		}
		if diff := cmp.Diff(want, got, ignoreDetail, cmpopts.EquateEmpty()); diff != "" {
			t.Fatalf("config %q: errors differ from sigs.k8s.io/yaml's reading (-want +got):\n%s\ngot: %v\nwant: %v", config, diff, got, want)
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
