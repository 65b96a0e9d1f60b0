package poddryrun

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/raygate/raygate/internal/podsecurity"
	"github.com/raygate/raygate/internal/raypod"
	"github.com/raygate/raygate/internal/validation"
)

// Warnings the dry-run adds.
const (
	// WarnNotChecked: the API server could not answer for these pods; it checks them when
	// raygate creates them.
	WarnNotChecked = "%s: the API server could not dry-run %s (%s); it checks them when raygate creates them"
	// WarnOutOfTime: admission's time budget ran out first.
	WarnOutOfTime = "admission's time budget (%s) ran out before the API server's dry-run of %s; it checks them when raygate creates them"
	// WarnTooManyPods: one object asked for more distinct pods than are dry-run per review.
	WarnTooManyPods = "only %d distinct pods are dry-run per request; %s were not, and the API server checks them when raygate creates them"
	// WarnServiceAccountMissing: the API server refuses pods whose ServiceAccount does not
	// exist, and checks nothing else first.
	WarnServiceAccountMissing = "%s: the API server refuses %s while their ServiceAccount does not exist (%s); create it, and the rest of the pods' checks run on the next apply"
)

// Report is what the API server said about an object's pods.
type Report struct {
	// Errors are the refusals, at the fields of the object they come from.
	Errors field.ErrorList
	// Warnings are the API server's warnings, at those fields too, and the checks that
	// did not run.
	Warnings []string
	// decided are the fields (path prefixes) whose pods the API server's Pod Security
	// admitted or refused: raygate's own Pod Security verdict there, read from namespace
	// labels only, gives way to the one of the API server's configuration.
	decided []string
}

var podSecurityEvaluator = podsecurity.NewEvaluator()

// report turns the outcomes of a review's dry-runs into a Report.
func report(outcomes []outcome, r Request) Report {
	var rep Report
	var late, skipped []string
	for _, o := range outcomes {
		p, v := o.pod, o.verdict
		switch {
		case o.skipped:
			skipped = append(skipped, p.What)
			continue
		case v.kind == notChecked && v.timedOut:
			late = append(late, p.What)
			continue
		}
		for _, w := range o.warnings {
			rep.Warnings = append(rep.Warnings, mapWarning(p, w, r.PodSecurity)...)
		}
		switch v.kind {
		case admitted, quotaOnly:
			rep.decided = append(rep.decided, decidedPaths(p)...)
		case refused:
			rep.Errors = append(rep.Errors, refusalErrors(p, v)...)
			if v.afterPodSecurity {
				rep.decided = append(rep.decided, decidedPaths(p)...)
			}
		case refusedByPodSecurity:
			rep.decided = append(rep.decided, decidedPaths(p)...)
			e, w := podSecurityRefusal(p, v, r.PodSecurity)
			rep.Errors, rep.Warnings = append(rep.Errors, e...), append(rep.Warnings, w...)
		case missingServiceAccount:
			rep.Warnings = append(rep.Warnings, fmt.Sprintf(WarnServiceAccountMissing,
				p.Origin.TemplatePath.Child("spec", "serviceAccountName"), p.What, v.message))
		case notChecked:
			rep.Warnings = append(rep.Warnings, fmt.Sprintf(WarnNotChecked, p.Origin.TemplatePath, p.What, v.message))
		}
	}
	if len(late) > 0 {
		rep.Warnings = append(rep.Warnings, fmt.Sprintf(WarnOutOfTime, r.Budget, joinWhat(late)))
	}
	if len(skipped) > 0 {
		rep.Warnings = append(rep.Warnings, fmt.Sprintf(WarnTooManyPods, MaxPodsPerRequest, joinWhat(skipped)))
	}
	return rep
}

func joinWhat(what []string) string {
	if len(what) <= 1 {
		return strings.Join(what, "")
	}
	return strings.Join(what[:len(what)-1], ", ") + " and " + what[len(what)-1]
}

// decidedPaths are the fields whose Pod Security errors concern pod p: its template's, and
// spec.autoscalerOptions' for a head with the autoscaler.
func decidedPaths(p Pod) []string {
	out := []string{p.Origin.TemplatePath.String()}
	if p.Origin.SpecPath != nil && slices.ContainsFunc(p.Pod.Spec.Containers, func(c corev1.Container) bool { return c.Name == raypod.AutoscalerContainer }) {
		out = append(out, p.Origin.SpecPath.Child("autoscalerOptions").String())
	}
	return out
}

// refusalErrors are the API server's reasons for refusing a pod, at the object's fields: one
// per field it names, else one at the template with its message.
func refusalErrors(p Pod, v verdict) field.ErrorList {
	var errs field.ErrorList
	if d := v.status.Details; d != nil {
		for _, c := range d.Causes {
			if c.Field != "" {
				errs = append(errs, causeError(p.Origin.FieldPath(p.Pod, c.Field), c))
			}
		}
	}
	if len(errs) == 0 {
		errs = append(errs, field.Forbidden(p.Origin.TemplatePath, fmt.Sprintf("the API server refuses %s: %s", p.What, v.message)))
	}
	return errs
}

// causeError is a cause of the API server's at path, printed as the API server printed it:
// the cause's message is the error's body ("Invalid value: \"1BAD=\": a valid ..."), which
// begins with its type's words.
func causeError(path *field.Path, c metav1.StatusCause) *field.Error {
	t := field.ErrorType(c.Type)
	words := t.String()
	detail, ok := strings.CutPrefix(c.Message, words)
	if !ok || strings.HasPrefix(words, "<unknown") {
		t, detail = field.ErrorTypeInvalid, c.Message
	}
	detail = strings.TrimPrefix(detail, ": ")
	return &field.Error{Type: t, Field: path.String(), BadValue: field.OmitValueType{}, Detail: detail}
}

// podSecurityRefusal locates the violations of the level the API server enforced, as
// validation does for the namespace's labels, and counts them as the admin's
// --pod-security-check says.
func podSecurityRefusal(p Pod, v verdict, mode validation.PodSecurityMode) (field.ErrorList, []string) {
	if mode == validation.PodSecurityOff {
		return nil, nil
	}
	lv := v.level.String()
	type found struct{ path, message string }
	var all []found
	for _, viol := range podSecurityEvaluator.PodAt(v.level, p.Pod, p.Origin) {
		all = append(all, found{viol.Path.String(), viol.Message})
	}
	if len(all) == 0 {
		// A check this evaluator does not know (an API server newer than raygate's library).
		all = append(all, found{p.Origin.TemplatePath.String(), strings.TrimPrefix(v.message, fmt.Sprintf("violates PodSecurity %q: ", lv))})
	}
	var errs field.ErrorList
	var warnings []string
	for _, f := range all {
		if mode == validation.PodSecurityWarn {
			warnings = append(warnings, fmt.Sprintf(validation.WarnPodSecurityEnforce, f.path, lv, f.message))
			continue
		}
		errs = append(errs, &field.Error{Type: field.ErrorTypeForbidden, Field: f.path, Detail: fmt.Sprintf("violates PodSecurity %q: %s", lv, f.message)})
	}
	return errs, warnings
}

// mapWarning turns a warning the API server gave for pod p into warnings about the object:
// Pod Security's located like validation's, one naming a field of the pod at the object's
// field, any other at the pod's template.
func mapWarning(p Pod, w string, mode validation.PodSecurityMode) []string {
	if m := podSecurityWarning.FindStringSubmatch(w); m != nil {
		if mode == validation.PodSecurityOff {
			return nil
		}
		if lv, err := parseLevelVersion(m[1]); err == nil {
			var out []string
			for _, v := range podSecurityEvaluator.PodAt(lv, p.Pod, p.Origin) {
				out = append(out, fmt.Sprintf(validation.WarnPodSecurity, v.Path, lv.String(), v.Message))
			}
			if len(out) > 0 {
				return out
			}
		}
	}
	if head, rest, ok := strings.Cut(w, ": "); ok && (strings.HasPrefix(head, "spec.") || strings.HasPrefix(head, "metadata.")) && !strings.ContainsAny(head, " \"") {
		return []string{fmt.Sprintf("%s: %s", p.Origin.FieldPath(p.Pod, head), rest)}
	}
	return []string{fmt.Sprintf("%s: %s", p.Origin.TemplatePath, w)}
}

// Merge adds a report to what validation found: the API server's Pod Security verdict
// replaces raygate's own for the pods it decided; errors and warnings already listed are
// not repeated.
func (r Report) Merge(errs field.ErrorList, warnings []string) (field.ErrorList, []string) {
	out := slices.DeleteFunc(slices.Clone(errs), func(e *field.Error) bool {
		return isPodSecurityError(e) && slices.ContainsFunc(r.decided, func(prefix string) bool { return under(e.Field, prefix) })
	})
	seen := map[string]bool{}
	for _, e := range out {
		seen[e.Field+"\x00"+e.ErrorBody()] = true
	}
	for _, e := range r.Errors {
		if k := e.Field + "\x00" + e.ErrorBody(); !seen[k] {
			seen[k] = true
			out = append(out, e)
		}
	}
	for _, w := range r.Warnings {
		if !slices.Contains(warnings, w) {
			warnings = append(warnings, w)
		}
	}
	return out, warnings
}

// OnlyPodSecurity reports whether every error is a Pod Security refusal (which the API
// server's own verdict may overrule): the only errors the pods are dry-run despite. Other
// errors are fixed first; the next apply dry-runs the pods.
func OnlyPodSecurity(errs field.ErrorList) bool {
	return !slices.ContainsFunc(errs, func(e *field.Error) bool { return !isPodSecurityError(e) })
}

func isPodSecurityError(e *field.Error) bool {
	return e.Type == field.ErrorTypeForbidden && strings.HasPrefix(e.Detail, "violates PodSecurity ")
}

// under reports whether path is prefix or a field below it.
func under(path, prefix string) bool {
	rest, ok := strings.CutPrefix(path, prefix)
	return ok && (rest == "" || rest[0] == '.' || rest[0] == '[')
}
