package raycronjob

import (
	"time"

	"github.com/robfig/cron/v3"
)

// MaxMissedRuns is how many missed runs are caught up one by one. Past it (an operator down
// for a long time under a frequent schedule, or a RayCronJob resumed after a long suspend)
// only the most recent missed run is created and the others are reported skipped, as
// batch/v1 CronJob does: a tenant's RayCronJob must not be able to make the operator
// create RayJobs by the thousand. KubeRay has no such bound.
const MaxMissedRuns = 100

// Input is what one decision reads: the schedule, when the RayCronJob was created, the
// scheduled time of the last run created (status.lastScheduleTime, nil: none yet), whether
// it is suspended, and the time of the pass.
type Input struct {
	Schedule      cron.Schedule
	Created       time.Time
	LastScheduled *time.Time
	Suspended     bool
	Now           time.Time
}

// Decision is what to do now.
type Decision struct {
	// Run is the scheduled time of the run to create now (zero: none is due).
	Run time.Time
	// Skipped says that missed runs before Run are not created (more than MaxMissedRuns).
	Skipped bool
	// Next is the scheduled time after Run (or, with nothing due, the next one); zero: the
	// schedule has no further time (cron looks five years ahead) or the RayCronJob is
	// suspended.
	Next time.Time
}

// Due reports whether a run is to be created.
func (d Decision) Due() bool { return !d.Run.IsZero() }

// RequeueAfter is how long until the next pass is needed: at once when another missed run
// is already due, at Next otherwise, never (0) without a Next.
func (d Decision) RequeueAfter(now time.Time) time.Duration {
	if d.Next.IsZero() {
		return 0
	}
	return max(d.Next.Sub(now), time.Millisecond)
}

// Decide is the RayCronJob controller's decision, KubeRay's rule: runs are created in
// schedule order, one per pass, from the first scheduled time after the last run (after the
// creation time before any run), each as soon as it is due, so no scheduled time is run
// twice or lost across operator restarts; suspended, nothing is created and the missed
// runs are caught up on resume. Beyond KubeRay: past MaxMissedRuns missed runs, only the
// most recent is created.
func Decide(in Input) Decision {
	if in.Suspended || in.Schedule == nil {
		return Decision{}
	}
	from := in.Created
	if in.LastScheduled != nil {
		from = *in.LastScheduled
	}
	first := in.Schedule.Next(from)
	if first.IsZero() || first.After(in.Now) {
		return Decision{Next: first}
	}
	// Walk at most MaxMissedRuns+1 due times: within the bound the first is run.
	t, due := first, 1
	for due <= MaxMissedRuns {
		n := in.Schedule.Next(t)
		if n.IsZero() || n.After(in.Now) {
			return Decision{Run: first, Next: in.Schedule.Next(first)}
		}
		t, due = n, due+1
	}
	latest := latestDue(in.Schedule, t, in.Now)
	return Decision{Run: latest, Skipped: true, Next: in.Schedule.Next(latest)}
}

// latestDue finds the last scheduled time at or before now, from a due time t. The walk
// starts in the narrowest window before now that holds a due time, so its cost is bounded
// by the ticks of that window, not by how long ago t was.
func latestDue(s cron.Schedule, t, now time.Time) time.Time {
	latest := t
	for _, w := range []time.Duration{time.Minute, time.Hour, 24 * time.Hour, 31 * 24 * time.Hour, 366 * 24 * time.Hour} {
		from := now.Add(-w)
		if !from.After(t) {
			break
		}
		if n := s.Next(from); !n.IsZero() && !n.After(now) {
			latest = n
			break
		}
	}
	for {
		n := s.Next(latest)
		if n.IsZero() || n.After(now) {
			return latest
		}
		latest = n
	}
}
