package features

import (
	"testing"

	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/component-base/featuregate"
	featuregatetesting "k8s.io/component-base/featuregate/testing"
)

// SetForTest sets a gate for the duration of one test and restores it afterwards.
func SetForTest(tb testing.TB, f featuregate.Feature, on bool) {
	tb.Helper()
	featuregatetesting.SetFeatureGateDuringTest(tb, utilfeature.DefaultFeatureGate, f, on)
}

// Static is a fixed gate state for tests of pure functions: gates listed are on, others
// take their defaults.
type Static map[featuregate.Feature]bool

// Enabled implements Gates.
func (s Static) Enabled(f featuregate.Feature) bool {
	if on, ok := s[f]; ok {
		return on
	}
	return Specs[f].Default
}
