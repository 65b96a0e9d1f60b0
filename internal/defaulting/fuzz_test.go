package defaulting_test

import (
	"encoding/json"
	"reflect"
	"testing"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/defaulting"
	"github.com/raygate/raygate/internal/rayspec"
	"github.com/raygate/raygate/internal/validation/fuzzer"
)

// The fuzzers check, for any object: Default(Default(x)) == Default(x); and the spec hash of
// Default(x) survives storage (JSON round trip) and a second defaulting, as happens when the
// webhook defaults an object and a controller later defaults what it reads back. Seeds in
// testdata/fuzz run as plain tests.

func FuzzDefaultRayCluster(f *testing.F) {
	f.Add([]byte("seed"))
	f.Add([]byte{0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2})
	f.Fuzz(func(t *testing.T, data []byte) {
		var rc rayv1.RayCluster
		fuzzer.New(data).Fill(&rc)
		once := rc.DeepCopy()
		defaulting.RayCluster(once)
		twice := once.DeepCopy()
		defaulting.RayCluster(twice)
		if !reflect.DeepEqual(once, twice) {
			t.Fatalf("not idempotent:\nonce:  %+v\ntwice: %+v", once.Spec, twice.Spec)
		}
		assertHashSurvivesStorage(t, &once.Spec)
	})
}

func FuzzDefaultRayService(f *testing.F) {
	f.Add([]byte("seed"))
	f.Add([]byte{9, 8, 7, 6, 5, 4, 3, 2, 1, 0, 1, 2})
	f.Fuzz(func(t *testing.T, data []byte) {
		var svc rayv1.RayService
		fuzzer.New(data).Fill(&svc)
		once := svc.DeepCopy()
		defaulting.RayService(once)
		twice := once.DeepCopy()
		defaulting.RayService(twice)
		if !reflect.DeepEqual(once, twice) {
			t.Fatalf("not idempotent:\nonce:  %+v\ntwice: %+v", once.Spec, twice.Spec)
		}
		assertHashSurvivesStorage(t, &once.Spec.RayClusterSpec)
	})
}

func assertHashSurvivesStorage(t *testing.T, defaulted *rayv1.RayClusterSpec) {
	t.Helper()
	before, err := rayspec.HashWithoutReplicas(*defaulted)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := json.Marshal(defaulted)
	if err != nil {
		t.Fatal(err)
	}
	var stored rayv1.RayClusterSpec
	if err := json.Unmarshal(raw, &stored); err != nil {
		t.Fatal(err)
	}
	defaulting.RayClusterSpec(&stored)
	after, err := rayspec.HashWithoutReplicas(stored)
	if err != nil {
		t.Fatal(err)
	}
	if before != after {
		t.Fatalf("hash changed through storage and defaulting: %s -> %s\n%s", before, after, raw)
	}
}
