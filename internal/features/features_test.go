package features

import (
	"strings"
	"testing"

	"github.com/spf13/pflag"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
)

func TestDefaults(t *testing.T) {
	want := map[string]bool{
		string(RayClusterStatusConditions):       true,
		string(RayServiceIncrementalUpgrade):     true,
		string(RayMultiHostIndexing):             true,
		string(RayClusterHistoryServer):          false,
		string(GCSFaultToleranceEmbeddedStorage): false,
		string(RayClusterMTLS):                   false,
		string(RayJobDeletionPolicy):             true,
		string(SidecarSubmitterRestart):          false,
		string(RayCronJob):                       false,
	}
	for name, on := range want {
		if got := utilfeature.DefaultFeatureGate.Enabled(Feature(name)); got != on {
			t.Errorf("%s default = %v, want %v", name, got, on)
		}
	}
}

func TestFlagParsing(t *testing.T) {
	cases := []struct {
		flag    string
		wantErr string
		want    map[string]bool
	}{
		{flag: "RayServiceIncrementalUpgrade=false", want: map[string]bool{"RayServiceIncrementalUpgrade": false, "RayClusterStatusConditions": true, "RayMultiHostIndexing": true}},
		{flag: "RayClusterStatusConditions=false,RayMultiHostIndexing=false", want: map[string]bool{"RayClusterStatusConditions": false, "RayMultiHostIndexing": false, "RayServiceIncrementalUpgrade": true}},
		{flag: "RayServiceIncrementalUpgrade=true", want: map[string]bool{"RayServiceIncrementalUpgrade": true}},
		{flag: "NoSuchGate=true", wantErr: "unrecognized feature gate: NoSuchGate"},
		{flag: "RayMultiHostIndexing=maybe", wantErr: "invalid value of RayMultiHostIndexing=maybe"},
	}
	for _, tc := range cases {
		t.Run(tc.flag, func(t *testing.T) {
			gate := utilfeature.DefaultMutableFeatureGate.DeepCopy()
			fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
			gate.AddFlag(fs)
			err := fs.Parse([]string{"--feature-gates=" + tc.flag})
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error = %v, want containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for name, on := range tc.want {
				if got := gate.Enabled(Feature(name)); got != on {
					t.Errorf("%s = %v, want %v", name, got, on)
				}
			}
		})
	}
}

func TestSetForTestRestores(t *testing.T) {
	t.Run("inner", func(t *testing.T) {
		SetForTest(t, RayServiceIncrementalUpgrade, false)
		if Enabled(RayServiceIncrementalUpgrade) {
			t.Fatal("gate not set")
		}
	})
	if !Enabled(RayServiceIncrementalUpgrade) {
		t.Fatal("gate not restored after the test")
	}
}

func TestStatic(t *testing.T) {
	s := Static{RayMultiHostIndexing: false}
	if s.Enabled(RayMultiHostIndexing) || !s.Enabled(RayServiceIncrementalUpgrade) || !s.Enabled(RayClusterStatusConditions) {
		t.Fatal("Static does not fall back to defaults")
	}
}
