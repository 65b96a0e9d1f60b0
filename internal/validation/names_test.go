package validation

import (
	"strings"
	"testing"
)

// longestDerivedName takes the longest fixed part from the names derived from "": that holds
// only while every derived name is the name plus fixed parts.
func TestDerivedNamesAddFixedParts(t *testing.T) {
	for what, derived := range map[string]derivedNames{"cluster": clusterNames, "service": serviceNames, "job": jobNames, "cron job": cronJobNames} {
		fixed := derived.of("")
		for _, n := range []int{1, 5, 40, 63, 64, 300} {
			name := strings.Repeat("a", n)
			names := derived.of(name)
			if len(names) != len(fixed) {
				t.Fatalf("%s: %d names for %q, %d for the empty name", what, len(names), name, len(fixed))
			}
			for i := range names {
				if len(names[i]) != n+len(fixed[i]) || !strings.Contains(names[i], name) {
					t.Errorf("%s: derived name %q of %q is not the name plus %q's fixed parts", what, names[i], name, fixed[i])
				}
			}
		}
	}
}
