package plan

import (
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/validation/field"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
)

// Inputs are everything one pass is planned from.
type Inputs struct {
	// Job is the RayJob as stored, its spec defaulted in memory (defaulting.RayJob on a
	// copy): metadata (deletion timestamp, finalizers, UID, generation), spec and status.
	Job *rayv1.RayJob
	// Invalid is what validation.StoredRayJob found wrong with it (nil: valid).
	Invalid field.ErrorList
	// Observed is what the pass read.
	Observed Observed
	// Fresh are names drawn for this pass; the plan records one only when it needs a new
	// one, so drawing them here keeps the plan a function of what it is given.
	Fresh Fresh
	// Settings are the operator's choices.
	Settings Settings
	// Now is the time the pass plans at.
	Now time.Time
}

// Fresh are newly drawn names (internal/rayjob.NewJobID and NewClusterName).
type Fresh struct {
	JobID       string
	ClusterName string
}

// Plan is the plan's answer for one pass: the Effects the pass must carry out and the
// Outcome it concludes, which is recorded once the effects are carried out.
type Plan struct {
	Effects
	Outcome
}

// Effects are what the pass must do, in this order: the Actions (API writes; a failed one
// stops the pass before its outcome is recorded), then the Requests to the dashboard pool.
type Effects struct {
	Actions  []Action
	Requests []Request
}

func (e *Effects) do(a Action)      { e.Actions = append(e.Actions, a) }
func (e *Effects) ask(r Request)    { e.Requests = append(e.Requests, r) }
func (e *Effects) empty() bool      { return len(e.Actions) == 0 && len(e.Requests) == 0 }
func (o *Outcome) tell(e Event)     { o.Events = append(o.Events, e) }
func (o *Outcome) note(what string) { o.Decisions = append(o.Decisions, what) }
func (w *Wakeup) due(t time.Time)   { w.At = earliest(w.At, t) }
func (w *Wakeup) soon()             { w.Soon = true }
func earliest(a, b time.Time) time.Time {
	if a.IsZero() || (!b.IsZero() && b.Before(a)) {
		return b
	}
	return a
}

// Outcome is what the pass concludes: the status to store and what follows once it is
// stored.
type Outcome struct {
	// Status is the status to store. It is the stored status itself (not a copy) when
	// nothing changed, so the controller writes only when it differs.
	Status rayv1.RayJobStatus
	// Events are emitted once Status is stored (or needed no write).
	Events []Event
	// Decisions say what was decided and why, for the operator's log.
	Decisions []string
	// Wake is when the pass wants to run again.
	Wake Wakeup
	// Metrics are the facts counted once Status is stored.
	Metrics MetricFacts
}

// Wakeup is when the pass wants to run again. Everything else (the RayJob, its cluster, its
// submitter Job, the pool's answers) is watched.
type Wakeup struct {
	// Soon: a decision was recorded that the next pass carries on.
	Soon bool
	// At is the earliest time something is due: a deadline, a TTL, the next read of a
	// running job's status (zero: nothing).
	At time.Time
}

// soonRequeue is how soon a pass that recorded a decision comes back to carry it on.
const soonRequeue = 20 * time.Millisecond

// After turns the wake-up into one delay (0: none).
func (w Wakeup) After(now time.Time) time.Duration {
	if w.Soon {
		return soonRequeue
	}
	if w.At.IsZero() {
		return 0
	}
	return max(w.At.Sub(now), time.Millisecond)
}

// MetricFacts are what the metrics count once the status is stored, so a pass whose write
// fails (and runs again) does not count them twice.
type MetricFacts struct {
	// Execution is set when the job's attempt ended: kuberay_job_execution_duration_seconds.
	Execution *Execution
}

// Execution is an attempt that ended, as KubeRay records it: when the deployment status
// goes from a non-final one to Complete, Failed or Retrying.
type Execution struct {
	DeploymentStatus rayv1.JobDeploymentStatus
	// RetryCount is status.failed before the pass.
	RetryCount int
	// Seconds since status.startTime.
	Seconds float64
}

// pass is one planning pass: its inputs (read only) and what it builds.
type pass struct {
	in     Inputs
	job    *rayv1.RayJob
	stored *rayv1.RayJobStatus
	st     *rayv1.RayJobStatus // the new status, a copy of stored
	set    Settings
	now    time.Time
	act    *Effects
	out    *Outcome
}

// Decide plans one pass. It calls no client, dashboard or clock: the same inputs give the
// same plan. Decisions that need something to happen first (a name recorded before it is
// used, a final status recorded before clean-up) are recorded in the status and carried on
// by the next pass, so an operator restart at any point resumes from the status.
func Decide(in Inputs) Plan {
	var p Plan
	if in.Job == nil {
		return p
	}
	stored := &in.Job.Status
	s := &pass{
		in: in, job: in.Job, stored: stored, st: stored.DeepCopy(), set: in.Settings.withDefaults(),
		now: in.Now, act: &p.Effects, out: &p.Outcome,
	}
	switch {
	case managedByOther(in.Job):
		s.out.note("managed by " + *in.Job.Spec.ManagedBy + ": left alone")
	case in.Job.DeletionTimestamp != nil:
		s.deleting()
	case len(in.Invalid) > 0:
		s.invalid()
	default:
		s.advance()
	}
	s.finish()
	return p
}

// finish sets what every pass records and keeps the stored status when nothing changed.
func (s *pass) finish() {
	if !managedByOther(s.job) && s.job.DeletionTimestamp == nil {
		s.st.ObservedGeneration = s.job.Generation
	}
	if equality.Semantic.DeepEqual(s.st, s.stored) {
		s.out.Status = *s.stored
		return
	}
	s.out.Status = *s.st
}
