package plan

import (
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
)

// The upgrade actions (raygate.ray.io/upgrade-action on the RayService): the annotation is
// the user's durable request; the UpgradeAction condition says the controller took it up.
// A pass that finds the condition not yet saying what the annotation asks only records it
// (condition, event, and for abort the aborted spec hash on the active cluster) and moves
// nothing; the passes after carry it out. A restart therefore resumes from what is stored.

// ctlMode is what the upgrade actions ask of the upgrade in flight.
type ctlMode int

const (
	ctlNone      ctlMode = iota // no action applies: the upgrade paces itself
	ctlPaused                   // capacity and traffic stay where they are
	ctlResumed                  // a pause was lifted (or resume was asked): pacing as usual
	ctlAborting                 // walk back to the active cluster, then drop the pending one
	ctlPromoting                // skip the remaining steps: capacity first, then traffic
	ctlAborted                  // the aborted spec is not upgraded to again until resume
)

// Reasons of the UpgradeAction condition.
const (
	ReasonUpgradePaused    = rayv1.UpgradePaused
	ReasonUpgradeResumed   = rayv1.UpgradeResumed
	ReasonUpgradeAborting  = rayv1.UpgradeAborting
	ReasonUpgradePromoting = rayv1.UpgradePromoting
	ReasonUpgradeAborted   = rayv1.UpgradeAborted
)

// upgradeActionReasons are every reason of the UpgradeAction condition.
var UpgradeActionReasons = [...]string{ReasonUpgradePaused, ReasonUpgradeResumed, ReasonUpgradeAborting, ReasonUpgradePromoting, ReasonUpgradeAborted}

// control is decideControl's answer.
type control struct {
	Mode ctlMode
	// Action is the annotation's action this answer acts on ("" with ctlNone).
	Action string
	// Status, Reason and Message are the UpgradeAction condition (Reason "": no condition).
	Status          metav1.ConditionStatus
	Reason, Message string
	// Recorded: the stored condition already says so, so the action may be carried out.
	Recorded bool
	// AbortedHash is the spec hash the active cluster must carry as aborted ("" none);
	// Release: remove it (resume after an abort).
	AbortedHash string
	Release     bool
}

// controlInputs are the facts decideControl needs.
type controlInputs struct {
	Action, Target  string // the RayService's annotations
	Active, Pending string // cluster names as the pass found them
	// PendingHash is the pending cluster's spec hash, AbortedHash the active cluster's
	// aborted-spec-hash annotation, GoalHash the spec's hash.
	PendingHash, AbortedHash, GoalHash string
	Stored                             *metav1.Condition
}

// decideControl maps the annotations onto the upgrade in flight. An action applies only to
// the pending cluster it names: one left on the object after its upgrade ended is inert.
func decideControl(in controlInputs) control {
	var c control
	switch {
	case in.Active == "":
		// A first cluster is no upgrade: nothing to control.
	case in.Pending != "" && in.Action == rayv1.UpgradeActionResume && (in.Target == "" || in.Target == in.Pending):
		c = control{Mode: ctlResumed, Status: metav1.ConditionFalse, Reason: ReasonUpgradeResumed,
			Message: fmt.Sprintf("the upgrade to RayCluster %s was resumed (%s=resume): it goes on at its pace", in.Pending, rayv1.UpgradeActionKey)}
	case in.Pending != "" && in.Target == in.Pending && in.Action == rayv1.UpgradeActionPause:
		c = control{Mode: ctlPaused, Status: metav1.ConditionTrue, Reason: ReasonUpgradePaused,
			Message: fmt.Sprintf("the upgrade to RayCluster %s is paused (%s=pause): capacity and traffic stay where they are until resume, abort or promote", in.Pending, rayv1.UpgradeActionKey)}
	case in.Pending != "" && in.Target == in.Pending && in.Action == rayv1.UpgradeActionAbort:
		c = control{Mode: ctlAborting, Status: metav1.ConditionTrue, Reason: ReasonUpgradeAborting, AbortedHash: in.PendingHash,
			Message: fmt.Sprintf("the upgrade to RayCluster %s is aborted (%s=abort): traffic and capacity go back to %s step by step, then %s is dropped", in.Pending, rayv1.UpgradeActionKey, in.Active, in.Pending)}
	case in.Pending != "" && in.Target == in.Pending && in.Action == rayv1.UpgradeActionPromote:
		c = control{Mode: ctlPromoting, Status: metav1.ConditionTrue, Reason: ReasonUpgradePromoting,
			Message: fmt.Sprintf("the upgrade to RayCluster %s is promoted (%s=promote): the remaining steps are skipped, capacity first, then traffic", in.Pending, rayv1.UpgradeActionKey)}
	case in.Pending == "" && in.AbortedHash != "" && in.Action == rayv1.UpgradeActionAbort && in.AbortedHash == in.GoalHash:
		c = control{Mode: ctlAborted, Status: metav1.ConditionTrue, Reason: ReasonUpgradeAborted, AbortedHash: in.AbortedHash,
			Message: fmt.Sprintf("an upgrade to this spec was aborted: RayCluster %s keeps serving and no new cluster is created until the spec changes or %s=resume is set", in.Active, rayv1.UpgradeActionKey)}
	case in.Pending == "" && in.AbortedHash != "" && in.Action == rayv1.UpgradeActionResume:
		c.Release = true
	}
	if c.Reason != "" {
		c.Action = in.Action
		s := in.Stored
		c.Recorded = s != nil && s.Status == c.Status && s.Reason == c.Reason && s.Message == c.Message
	}
	if c.Mode == ctlNone || c.Mode == ctlResumed {
		// An aborted hash left from an earlier abort stays until resume or the next abort.
		c.AbortedHash = ""
	}
	return c
}

// frozen: nothing moves in this pass, because the upgrade is paused or an action was only
// recorded (it is carried out once the condition saying so is stored).
func (c control) frozen() bool {
	return c.Mode == ctlPaused || (c.Reason != "" && !c.Recorded && c.Mode != ctlResumed)
}

// controlOf decides the pass' control from the RayService's annotations and the roles.
func controlOf(in inputs, r roles) control {
	ann := in.want.Service.Annotations
	ci := controlInputs{
		Action: ann[rayv1.UpgradeActionKey], Target: ann[rayv1.UpgradeTargetKey],
		Active: r.Active.name(), Pending: r.Pending.name(), GoalHash: in.want.Goal.Hash,
		Stored: findCondition(in.stored.Conditions, rayv1.UpgradeAction),
	}
	if rc := r.Active.cluster(); rc != nil {
		ci.AbortedHash = rc.Annotations[rayv1.AbortedSpecHashKey]
	}
	if rc := r.Pending.cluster(); rc != nil {
		ci.PendingHash = rc.Annotations[rayv1.SpecHashKey]
	}
	return decideControl(ci)
}

// planControl keeps the active cluster's aborted-spec-hash in line with the control
// (written before the abort is carried out) and, once the abort is recorded, starts
// walking back: step by step for the incremental strategy; a NewCluster pending cluster
// never served, so it is dropped.
func planControl(in inputs, r roles, act *Effects, out *Outcome) roles {
	c := r.Control
	if rc := r.Active.cluster(); rc != nil && rc.UID != "" {
		have := rc.Annotations[rayv1.AbortedSpecHashKey]
		switch {
		case c.AbortedHash != "" && have != c.AbortedHash:
			cp := rc.DeepCopy()
			setAnnotations(cp, map[string]string{rayv1.AbortedSpecHashKey: c.AbortedHash})
			act.doFirst(AnnotateCluster{Cluster: cp, Annotations: map[string]string{rayv1.AbortedSpecHashKey: c.AbortedHash}})
			r.Active = r.Active.withCluster(cp)
		case c.Release && have != "":
			cp := rc.DeepCopy()
			delete(cp.Annotations, rayv1.AbortedSpecHashKey)
			act.doFirst(AnnotateCluster{Cluster: cp, Remove: []string{rayv1.AbortedSpecHashKey}})
			r.Active = r.Active.withCluster(cp)
			out.Wake.Soon = true
		}
	}
	if c.Mode != ctlAborting || !c.Recorded || r.Pending.View == nil {
		return r
	}
	if in.want.incremental() {
		if r.Rollback == "" {
			r.Rollback = c.Message
		}
		return r
	}
	dropCluster(in, r.Pending, c.Message, act, out)
	r.Pending = slot{}
	out.Wake.Soon = true
	return r
}

// setUpgradeAction stores the UpgradeAction condition; the pass that records an action
// announces it and counts it.
func setUpgradeAction(in inputs, st *rayv1.RayServiceStatuses, c control, now metav1.Time, out *Outcome) {
	if c.Reason == "" {
		meta.RemoveStatusCondition(&st.Conditions, string(rayv1.UpgradeAction))
		return
	}
	meta.SetStatusCondition(&st.Conditions, metav1.Condition{
		Type: string(rayv1.UpgradeAction), Status: c.Status, Reason: c.Reason, Message: c.Message,
		ObservedGeneration: in.want.Service.Generation, LastTransitionTime: now,
	})
	if c.Recorded {
		return
	}
	out.tell(NormalEvent(nil, c.Reason, "UpgradeAction", "%s", c.Message))
	out.Metrics.ActionRecorded = c.Action
	out.Wake.Soon = true
}

// promoteStep is one step of a promotion: the pending cluster gets all capacity, then all
// traffic (never traffic beyond its capacity), then the active cluster gives its capacity
// back. Each step waits, as every step does, for the previous one to take effect.
func promoteStep(s split, now time.Time) step {
	n := s
	switch {
	case s.PendingCapacity < 100:
		n.PendingCapacity = 100
		return step{Kind: stepGrowTarget, Next: n}
	case s.PendingTraffic < 100:
		n.PendingTraffic, n.LastMigrated = 100, ptr.To(now)
		return step{Kind: stepTraffic, Next: n}
	case s.ActiveCapacity > 0:
		n.ActiveCapacity = 0
		return step{Kind: stepShrinkSource, Next: n}
	}
	return step{Kind: stepComplete, Next: n}
}

// controlNote is what the UpgradeInProgress message adds while an action holds the upgrade.
func controlNote(c control) string {
	switch {
	case c.Mode == ctlPaused:
		return "paused by " + rayv1.UpgradeActionKey + "=pause"
	case c.frozen():
		return c.Action + " recorded; carried out next"
	}
	return ""
}
