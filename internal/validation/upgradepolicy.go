package validation

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/equality"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	raygatev1alpha1 "github.com/raygate/raygate/apis/raygate/v1alpha1"
)

// The placeholder syntax is checked here without a PromQL parser (none is in the module
// graph): a query is bounded in length, balanced in brackets and quotes, and uses only the
// four placeholders. Prometheus itself rejects what is left, and the gate then waits.

var upgradePolicyAnnotationPath = field.NewPath("metadata", "annotations").Key(raygatev1alpha1.UpgradePolicyAnnotation)

// WarnUpgradePolicyNewCluster: gates only apply between traffic steps.
const WarnUpgradePolicyNewCluster = "%s is set but the upgrade strategy is not NewClusterWithIncrementalUpgrade: a NewCluster upgrade switches all traffic at once, so there is no step to gate and the policy is not evaluated"

// UpgradePolicyAnnotation checks a RayService's raygate.ray.io/upgrade-policy: a DNS-1123
// subdomain name (the UpgradePolicy's). Only a changed value is checked (ratcheting). It
// warns when the strategy has no traffic steps to gate.
func UpgradePolicyAnnotation(old, svc *rayv1.RayService) (field.ErrorList, []string) {
	name, ok := svc.Annotations[raygatev1alpha1.UpgradePolicyAnnotation]
	if !ok {
		return nil, nil
	}
	var errs field.ErrorList
	if old == nil || old.Annotations[raygatev1alpha1.UpgradePolicyAnnotation] != name {
		for _, msg := range apivalidation.NameIsDNSSubdomain(name, false) {
			errs = append(errs, field.Invalid(upgradePolicyAnnotationPath, name, "must name an UpgradePolicy in the same namespace: "+msg))
		}
	}
	var warnings []string
	if t := svc.Spec.UpgradeStrategy; t == nil || t.Type == nil || *t.Type != rayv1.NewClusterWithIncrementalUpgrade {
		warnings = append(warnings, fmt.Sprintf(WarnUpgradePolicyNewCluster, upgradePolicyAnnotationPath))
	}
	return errs, warnings
}

// UpgradePolicy validates an UpgradePolicy; on update (old set) only errors about what the
// update changed count, so a policy stored under older rules can still be fixed a gate at
// a time.
func UpgradePolicy(old, p *raygatev1alpha1.UpgradePolicy) field.ErrorList {
	if p == nil || p.DeletionTimestamp != nil {
		return nil
	}
	spec := field.NewPath("spec")
	errs := apivalidation.ValidateObjectMeta(&p.ObjectMeta, true, apivalidation.NameIsDNSSubdomain, field.NewPath("metadata"))
	var oldSpec *raygatev1alpha1.UpgradePolicySpec
	if old != nil {
		oldSpec = &old.Spec
	}
	changed := func(get func(*raygatev1alpha1.UpgradePolicySpec) any) bool {
		return oldSpec == nil || !equality.Semantic.DeepEqual(get(oldSpec), get(&p.Spec))
	}
	s := &p.Spec
	if changed(func(s *raygatev1alpha1.UpgradePolicySpec) any { return len(s.Gates) }) {
		switch {
		case len(s.Gates) == 0:
			errs = append(errs, field.Required(spec.Child("gates"), "at least one gate"))
		case len(s.Gates) > raygatev1alpha1.MaxGates:
			errs = append(errs, field.TooMany(spec.Child("gates"), len(s.Gates), raygatev1alpha1.MaxGates))
		}
	}
	oldGates := map[string]raygatev1alpha1.Gate{}
	if oldSpec != nil {
		for _, g := range oldSpec.Gates {
			oldGates[g.Name] = g
		}
	}
	seen := map[string]bool{}
	for i, g := range s.Gates {
		p := spec.Child("gates").Index(i)
		if seen[g.Name] {
			errs = append(errs, field.Duplicate(p.Child("name"), g.Name))
		}
		seen[g.Name] = true
		if o, ok := oldGates[g.Name]; ok && o == g {
			continue // unchanged gate: ratcheted
		}
		errs = append(errs, gateErrors(g, p)...)
	}
	if changed(func(s *raygatev1alpha1.UpgradePolicySpec) any { return s.SettleSeconds }) && s.SettleSeconds != nil {
		if v := *s.SettleSeconds; v < 0 || v > raygatev1alpha1.MaxSettleSeconds {
			errs = append(errs, field.Invalid(spec.Child("settleSeconds"), v, fmt.Sprintf("must be between 0 and %d", raygatev1alpha1.MaxSettleSeconds)))
		}
	}
	if changed(func(s *raygatev1alpha1.UpgradePolicySpec) any { return s.QueryTimeoutSeconds }) && s.QueryTimeoutSeconds != nil {
		if v := *s.QueryTimeoutSeconds; v < 1 || v > raygatev1alpha1.MaxQueryTimeoutSeconds {
			errs = append(errs, field.Invalid(spec.Child("queryTimeoutSeconds"), v, fmt.Sprintf("must be between 1 and %d", raygatev1alpha1.MaxQueryTimeoutSeconds)))
		}
	}
	if changed(func(s *raygatev1alpha1.UpgradePolicySpec) any { return s.OnFailure }) {
		switch s.OnFailure {
		case "", raygatev1alpha1.FailurePause, raygatev1alpha1.FailureRollback:
		default:
			errs = append(errs, field.NotSupported(spec.Child("onFailure"), s.OnFailure, []string{string(raygatev1alpha1.FailurePause), string(raygatev1alpha1.FailureRollback)}))
		}
	}
	return errs
}

func gateErrors(g raygatev1alpha1.Gate, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range apivalidation.NameIsDNSLabel(g.Name, false) {
		errs = append(errs, field.Invalid(p.Child("name"), g.Name, msg))
	}
	q := p.Child("query")
	switch {
	case strings.TrimSpace(g.Query) == "":
		errs = append(errs, field.Required(q, "a PromQL instant query"))
	case len(g.Query) > raygatev1alpha1.MaxQueryLength:
		errs = append(errs, field.TooLong(q, "", raygatev1alpha1.MaxQueryLength))
	default:
		if unknown := unknownPlaceholders(g.Query); len(unknown) > 0 {
			errs = append(errs, field.Invalid(q, g.Query, fmt.Sprintf("unknown placeholders %s: only %s may be used", strings.Join(unknown, ", "), strings.Join(raygatev1alpha1.Placeholders, ", "))))
		}
		if msg := unbalanced(g.Query); msg != "" {
			errs = append(errs, field.Invalid(q, g.Query, "not a PromQL query: "+msg))
		}
	}
	if g.Min == "" && g.Max == "" {
		errs = append(errs, field.Required(p.Child("max"), "set max, min or both: the bounds the value must stay within"))
	}
	lo, okLo := threshold(g.Min, p.Child("min"), &errs)
	hi, okHi := threshold(g.Max, p.Child("max"), &errs)
	if okLo && okHi && lo > hi {
		errs = append(errs, field.Invalid(p.Child("min"), g.Min, "must not be above max "+g.Max))
	}
	return errs
}

func threshold(s string, p *field.Path, errs *field.ErrorList) (float64, bool) {
	if s == "" {
		return 0, false
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		*errs = append(*errs, field.Invalid(p, s, "must be a finite decimal number such as 0.05 or 250"))
		return 0, false
	}
	return f, true
}

// unknownPlaceholders lists the {{...}} that are not one of the four placeholders (and an
// unclosed "{{").
func unknownPlaceholders(q string) []string {
	var out []string
	for rest := q; ; {
		i := strings.Index(rest, "{{")
		if i < 0 {
			return out
		}
		j := strings.Index(rest[i:], "}}")
		if j < 0 {
			return append(out, strconv.Quote(rest[i:]))
		}
		ph := rest[i : i+j+2]
		known := false
		for _, p := range raygatev1alpha1.Placeholders {
			known = known || ph == p
		}
		if !known {
			out = append(out, ph)
		}
		rest = rest[i+j+2:]
	}
}

// unbalanced checks brackets and quotes outside string literals ("" when balanced).
func unbalanced(q string) string {
	var stack []rune
	pairs := map[rune]rune{')': '(', ']': '[', '}': '{'}
	var quote rune
	escaped := false
	for _, r := range q {
		switch {
		case quote != 0:
			switch {
			case escaped:
				escaped = false
			case r == '\\' && quote != '`':
				escaped = true
			case r == quote:
				quote = 0
			}
		case r == '"' || r == '\'' || r == '`':
			quote = r
		case r == '(' || r == '[' || r == '{':
			stack = append(stack, r)
		case r == ')' || r == ']' || r == '}':
			if len(stack) == 0 || stack[len(stack)-1] != pairs[r] {
				return fmt.Sprintf("unbalanced %q", r)
			}
			stack = stack[:len(stack)-1]
		}
	}
	switch {
	case quote != 0:
		return fmt.Sprintf("unterminated string starting with %q", quote)
	case len(stack) > 0:
		return fmt.Sprintf("unclosed %q", stack[len(stack)-1])
	}
	return ""
}
