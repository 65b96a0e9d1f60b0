package plan

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	raygatev1alpha1 "github.com/raygate/raygate/apis/raygate/v1alpha1"
)

// Metric gates (raygate.ray.io/upgrade-policy on the RayService names an UpgradePolicy):
// before each traffic step of an incremental upgrade, and through the policy's settle
// period before promotion, the policy's Prometheus queries must all be within bounds. The
// plan cannot query Prometheus; a pass that reaches a gated step without results asks for
// them (Effects.GateAsk), and the caller plans again with them. A failing gate writes the
// same annotation a user would (pause or abort), so what it decided survives a restart.

// gateRecheck is how soon gates that waited (no data, Prometheus down) or are settling are
// evaluated again.
const gateRecheck = 5 * time.Second

// Event reasons of the gates.
const (
	EventGateFailed  = "UpgradeGateFailed"
	EventGateWaiting = "UpgradeGateWaiting"
)

// GateObservation is what the reconciler found for the policy: its gates and their results,
// or why they cannot be evaluated.
type GateObservation struct {
	Policy string
	// Unavailable, when set, is why the gates cannot be evaluated (no policy, no CRD, no
	// Prometheus configured, an invalid policy): the upgrade waits.
	Unavailable string
	OnFailure   raygatev1alpha1.FailureAction
	Settle      time.Duration
	Gates       []raygatev1alpha1.Gate
	Results     []GateResult
}

// GateResult is one gate's query result, as the reconciler's Prometheus client returns it.
type GateResult struct {
	Gate string
	// Query is the query as sent (placeholders replaced).
	Query string
	// Values are the samples' values; empty: no data.
	Values []float64
	// Err is why there is no answer, sanitized.
	Err string
}

type gateVerdict int

const (
	gatePass gateVerdict = iota
	gateWait
	gateFail
)

// gateDecision is decideGates' answer.
type gateDecision struct {
	Verdict gateVerdict
	Reason  string
	// Gate is the failing gate's name ("" unless gateFail).
	Gate    string
	Message string
}

// decideGates judges a policy's results: a gate out of bounds fails (even while another
// has no data: a bad value is an answer); any gate without an answer waits; else pass.
// Missing data never passes and never fails.
func decideGates(g GateObservation) gateDecision {
	if g.Unavailable != "" {
		return gateDecision{Verdict: gateWait, Reason: raygatev1alpha1.GatesUnavailable, Message: g.Unavailable}
	}
	byName := map[string]GateResult{}
	for _, r := range g.Results {
		byName[r.Gate] = r
	}
	var waits, passes []string
	for _, gate := range g.Gates {
		r, ok := byName[gate.Name]
		lo, hi, err := bounds(gate)
		switch {
		case err != nil:
			return gateDecision{Verdict: gateWait, Reason: raygatev1alpha1.GatesUnavailable,
				Message: fmt.Sprintf("UpgradePolicy %s is invalid: gate %q: %v", g.Policy, gate.Name, err)}
		case !ok:
			waits = append(waits, fmt.Sprintf("gate %q was not evaluated", gate.Name))
		case r.Err != "":
			waits = append(waits, fmt.Sprintf("gate %q: no answer from Prometheus (%s)", gate.Name, r.Err))
		case len(r.Values) == 0:
			waits = append(waits, fmt.Sprintf("gate %q: the query returned no data", gate.Name))
		default:
			v, bad := worst(r.Values, lo, hi)
			if bad != "" {
				return gateDecision{Verdict: gateFail, Reason: raygatev1alpha1.GateFailed, Gate: gate.Name,
					Message: fmt.Sprintf("gate %q of UpgradePolicy %s failed: query %s returned %s, %s", gate.Name, g.Policy, r.Query, formatValue(v), bad)}
			}
			passes = append(passes, fmt.Sprintf("%s=%s (%s)", gate.Name, formatValue(v), describeBounds(gate)))
		}
	}
	if len(waits) > 0 {
		return gateDecision{Verdict: gateWait, Reason: raygatev1alpha1.GatesWaiting,
			Message: fmt.Sprintf("UpgradePolicy %s: %s; the upgrade waits for data (it never proceeds ungated nor rolls back on missing data)", g.Policy, strings.Join(waits, "; "))}
	}
	return gateDecision{Verdict: gatePass, Reason: raygatev1alpha1.GatesPassed,
		Message: fmt.Sprintf("all %d gates of UpgradePolicy %s pass: %s", len(g.Gates), g.Policy, strings.Join(passes, ", "))}
}

// bounds parses a gate's min and max (nil: unbounded on that side).
func bounds(g raygatev1alpha1.Gate) (lo, hi *float64, err error) {
	parse := func(s string) (*float64, error) {
		if s == "" {
			return nil, nil
		}
		f, err := strconv.ParseFloat(s, 64)
		if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
			return nil, fmt.Errorf("%q is not a finite number", s)
		}
		return &f, nil
	}
	if lo, err = parse(g.Min); err != nil {
		return nil, nil, err
	}
	if hi, err = parse(g.Max); err != nil {
		return nil, nil, err
	}
	if lo == nil && hi == nil {
		return nil, nil, fmt.Errorf("neither min nor max is set")
	}
	return lo, hi, nil
}

// worst is the sample that decides: the first out of bounds (and why), else the one
// nearest to a bound.
func worst(values []float64, lo, hi *float64) (float64, string) {
	for _, v := range values {
		if hi != nil && v > *hi {
			return v, "above max " + formatValue(*hi)
		}
		if lo != nil && v < *lo {
			return v, "below min " + formatValue(*lo)
		}
	}
	w := values[0]
	for _, v := range values[1:] {
		if (hi != nil && v > w) || (hi == nil && v < w) {
			w = v
		}
	}
	return w, ""
}

func formatValue(f float64) string { return strconv.FormatFloat(f, 'g', 6, 64) }

func describeBounds(g raygatev1alpha1.Gate) string {
	var p []string
	if g.Min != "" {
		p = append(p, "min "+g.Min)
	}
	if g.Max != "" {
		p = append(p, "max "+g.Max)
	}
	return strings.Join(p, ", ")
}

// GateAsk says which policy the pass needs results of.
type GateAsk struct {
	Policy          string
	Active, Pending string
}

// policyOf is the UpgradePolicy a RayService names ("" none). Only incremental upgrades are
// gated: a NewCluster upgrade switches all traffic at once.
func policyOf(in inputs) string {
	if !in.want.incremental() {
		return ""
	}
	return in.want.Service.Annotations[raygatev1alpha1.UpgradePolicyAnnotation]
}

// gateStep is the step a gate is consulted for.
type gateStep int

const (
	gateTraffic gateStep = iota // the next traffic step
	gatePromote                 // the promotion after the last step
)

// gateCheck is gateHold's answer: whether the step waits and why, and the decision on the
// gates' results (nil: none was made), which the UpgradeGates condition records.
type gateCheck struct {
	Hold     bool
	Why      string
	Decision *gateDecision
}

// gateHold consults the gates before a traffic step or the promotion of an incremental
// upgrade; it says whether to hold and why. A user's action overrides the gates: a
// promote is carried out without them, and a paused upgrade is not evaluated.
func gateHold(in inputs, r roles, step gateStep, act *Effects, out *Outcome) gateCheck {
	policy := policyOf(in)
	if policy == "" || r.Active.View == nil || r.Pending.View == nil || (r.Control.Mode != ctlNone && r.Control.Mode != ctlResumed) {
		return gateCheck{}
	}
	g := in.obs.Gates
	if g == nil {
		act.GateAsk = &GateAsk{Policy: policy, Active: r.Active.name(), Pending: r.Pending.name()}
		return gateCheck{Hold: true, Why: "evaluating the gates of UpgradePolicy " + policy}
	}
	d := decideGates(*g)
	switch d.Verdict {
	case gateWait:
		out.Wake.due(in.now.Add(gateRecheck))
		if c := findCondition(in.stored.Conditions, raygatev1alpha1.UpgradeGatesCondition); c == nil || c.Reason != d.Reason {
			out.tell(WarningEvent(r.Pending.cluster(), EventGateWaiting, "EvaluateGates", "%s", d.Message))
		}
		return gateCheck{Hold: true, Why: "gates hold the upgrade: " + d.Message, Decision: &d}
	case gateFail:
		failGate(in, r, g.OnFailure, d, act, out)
		return gateCheck{Hold: true, Why: "gates hold the upgrade: " + d.Message, Decision: &d}
	}
	if step == gatePromote && g.Settle > 0 {
		last := r.split().LastMigrated
		if last != nil && in.now.Before(last.Add(g.Settle)) {
			end := last.Add(g.Settle)
			out.Wake.due(minTime(end, in.now.Add(gateRecheck)))
			return gateCheck{Hold: true, Decision: &d,
				Why: fmt.Sprintf("settling: the gates of UpgradePolicy %s are evaluated until %s before promotion", policy, end.UTC().Format(time.RFC3339))}
		}
	}
	return gateCheck{Decision: &d}
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// failGate writes the action a user would (pause or abort of the pending cluster), once
// per failure: the annotation is the durable record, taken up by the next pass.
func failGate(in inputs, r roles, onFailure raygatev1alpha1.FailureAction, d gateDecision, act *Effects, out *Outcome) {
	action := rayv1.UpgradeActionPause
	if onFailure == raygatev1alpha1.FailureRollback {
		action = rayv1.UpgradeActionAbort
	}
	ann := in.want.Service.Annotations
	if ann[rayv1.UpgradeActionKey] == action && ann[rayv1.UpgradeTargetKey] == r.Pending.name() {
		return
	}
	act.do(AnnotateService{Service: in.want.Service, Annotations: map[string]string{
		rayv1.UpgradeActionKey: action, rayv1.UpgradeTargetKey: r.Pending.name(),
	}})
	if c := findCondition(in.stored.Conditions, raygatev1alpha1.UpgradeGatesCondition); c != nil && c.Reason == d.Reason && c.Message == d.Message {
		return // told already (the annotation write is being retried)
	}
	out.tell(WarningEvent(r.Pending.cluster(), EventGateFailed, "EvaluateGates", "%s; %s=%s set on the RayService", d.Message, rayv1.UpgradeActionKey, action))
	out.Metrics.GateFailed = &GateFailure{Gate: d.Gate, Action: action}
}

// GateFailure is a gate failure, counted once the status saying so is stored.
type GateFailure struct{ Gate, Action string }

// setUpgradeGates keeps the UpgradeGates condition: set from this pass' decision (gate; nil:
// none made); after a resume, marked as re-evaluating; kept as stored otherwise (a paused
// upgrade keeps saying which gate paused it); removed when no gated upgrade runs.
func setUpgradeGates(in inputs, st *rayv1.RayServiceStatuses, r roles, gate *gateDecision, now metav1.Time) {
	typ := raygatev1alpha1.UpgradeGatesCondition
	if policyOf(in) == "" || r.Active.View == nil || r.Pending.View == nil {
		meta.RemoveStatusCondition(&st.Conditions, typ)
		return
	}
	c := metav1.Condition{Type: typ, ObservedGeneration: in.want.Service.Generation, LastTransitionTime: now}
	switch d := gate; {
	case d != nil:
		c.Reason, c.Message, c.Status = d.Reason, d.Message, metav1.ConditionFalse
		if d.Verdict == gatePass {
			c.Status = metav1.ConditionTrue
		}
	case r.Control.Mode == ctlResumed && !r.Control.Recorded:
		c.Status, c.Reason = metav1.ConditionUnknown, raygatev1alpha1.GatesEvaluating
		c.Message = "the upgrade was resumed: the gates of UpgradePolicy " + policyOf(in) + " are evaluated again before the next step"
	case meta.FindStatusCondition(st.Conditions, typ) != nil:
		return
	default:
		c.Status, c.Reason = metav1.ConditionUnknown, raygatev1alpha1.GatesEvaluating
		c.Message = "the gates of UpgradePolicy " + policyOf(in) + " are evaluated before each traffic step"
	}
	meta.SetStatusCondition(&st.Conditions, c)
}
