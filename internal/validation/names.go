package validation

import (
	"fmt"
	"strings"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/raygate/raygate/internal/rayjob"
	"github.com/raygate/raygate/internal/rayspec"
)

var (
	namePath         = field.NewPath("metadata", "name")
	generateNamePath = field.NewPath("metadata", "generateName")
	labelsPath       = field.NewPath("metadata", "labels")
)

// generatedSuffix stands in for the random suffix the API server appends to generateName.
const generatedSuffix = "x0x0x"

// derivedNames are the names derived from an object's name (of), each the name plus fixed
// parts (TestDerivedNamesAddFixedParts), and the longest fixed part, found once.
type derivedNames struct {
	of       func(string) []string
	overhead func() int
}

func namesDerivedBy(of func(string) []string) derivedNames {
	return derivedNames{of: of, overhead: sync.OnceValue(func() int {
		overhead := 0
		for _, d := range of("") {
			overhead = max(overhead, len(d))
		}
		return overhead
	})}
}

var (
	clusterNames = namesDerivedBy(rayspec.ClusterDerivedNames)
	serviceNames = namesDerivedBy(rayspec.ServiceDerivedNames)
	jobNames     = namesDerivedBy(rayjob.DerivedNames)
	cronJobNames = namesDerivedBy(runDerivedNames)
)

// validateName checks that an object's name is a DNS-1035 label and short enough that every
// name derived from it (given by derived) fits in a label value. With only generateName set,
// it checks the prefix plus the API server's 5-character suffix.
func validateName(meta *metav1.ObjectMeta, derived derivedNames) field.ErrorList {
	name, path := meta.Name, namePath
	if name == "" {
		if meta.GenerateName == "" {
			return nil // the API server itself requires one of them
		}
		name, path = meta.GenerateName+generatedSuffix, generateNamePath
	}
	var errs field.ErrorList
	tooLong := ""
	if longest, limit := longestDerivedName(name, derived); longest != "" {
		if path == generateNamePath {
			limit -= len(generatedSuffix)
		}
		tooLong = fmt.Sprintf("must be no more than %d characters: the derived name %q would be %d characters, over the Kubernetes limit of %d",
			limit, shorten(longest), len(longest), rayspec.MaxLabelValueLength)
	}
	for _, msg := range utilvalidation.IsDNS1035Label(name) {
		// The derived-name error states a tighter length limit; don't print two limits.
		if tooLong != "" && msg == utilvalidation.MaxLenError(utilvalidation.DNS1035LabelMaxLength) {
			continue
		}
		errs = append(errs, field.Invalid(path, bad(meta, name), msg))
	}
	if tooLong != "" {
		errs = append(errs, field.Invalid(path, bad(meta, name), tooLong))
	}
	return errs
}

// bad is the value printed in an error: what the user wrote.
func bad(meta *metav1.ObjectMeta, name string) string {
	if meta.Name == "" {
		return meta.GenerateName
	}
	return name
}

// longestDerivedName returns the longest derived name over the limit ("" when all fit) and
// the longest name that would fit. Every derived name contains the name once, so the limit
// on the name is the label limit minus the longest fixed part; the names themselves are made
// only for a name over the limit.
func longestDerivedName(name string, derived derivedNames) (longest string, limit int) {
	if limit := rayspec.MaxLabelValueLength - derived.overhead(); len(name) <= limit {
		return "", limit
	}
	names := derived.of(name)
	overhead := 0
	for _, d := range names {
		if len(d)-len(name) > overhead {
			overhead = len(d) - len(name)
		}
		if len(d) > rayspec.MaxLabelValueLength && len(d) > len(longest) {
			longest = d
		}
	}
	return longest, rayspec.MaxLabelValueLength - overhead
}

// shorten keeps error messages readable for absurdly long names.
func shorten(s string) string {
	const keep = 100
	if len(s) <= keep {
		return s
	}
	return s[:keep/2] + "..." + s[len(s)-keep/2:]
}

// keysOf returns the non-empty values of the listed keys in params, in the listed order.
func keysOf(params map[string]string, keys ...string) []string {
	var found []string
	for _, k := range keys {
		if strings.TrimSpace(params[k]) != "" {
			found = append(found, k)
		}
	}
	return found
}
