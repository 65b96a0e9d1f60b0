package plan

import (
	"fmt"
	"time"
)

// Before traffic moves to a cluster, two facts must hold that the applications' RUNNING
// status alone does not give:
//
//   - the status was read after the step came due. A converged head is read only every
//     resync (up to a minute), so a timed step could otherwise rest on a RUNNING read
//     10–60 s old; a dashboard that stops answering then holds the step instead of
//     letting it go on what it said before;
//   - the cluster's serve Service (the HTTPRoute's backend) has a ready pod. With
//     excludeHeadPodFromServeSvc and no worker ready yet, the applications run but the
//     gateway has no endpoint to send the shifted share to, and those requests fail.

// stepFacts are what holdTrafficStep looks at for the step's target cluster.
type stepFacts struct {
	// ReadAt is when the target's applications were read.
	ReadAt time.Time
	// Due is when the step came due (zero: the step is not timed, e.g. the first one,
	// which follows a capacity change that made the pool read the head again).
	Due time.Time
	// ServeEndpoints counts the ready pods the target's serve Service selects.
	ServeEndpoints int32
}

// stepHold is holdTrafficStep's answer.
type stepHold struct {
	Hold bool
	// Refresh: the target's dashboard is to be read again now.
	Refresh bool
	Why     string
}

// holdTrafficStep decides whether a traffic step to target waits. Both reasons to wait end
// with something the pass is told about: a pod turning ready (a watch event) or the pool's
// answer to the read it asks for.
func holdTrafficStep(f stepFacts, target string) stepHold {
	switch {
	case f.ServeEndpoints <= 0:
		return stepHold{Hold: true, Why: "waiting for a ready pod in the serve Service of " + target + " before traffic moves to it"}
	case !f.Due.IsZero() && f.ReadAt.Before(f.Due):
		return stepHold{Hold: true, Refresh: true, Why: fmt.Sprintf("waiting for a read of the Serve applications of %s made after the step came due at %s",
			target, f.Due.UTC().Format(time.RFC3339))}
	}
	return stepHold{}
}

// due is when the next timed traffic step comes due (zero: it is not timed).
func due(s split, p pacing) time.Time {
	if s.LastMigrated == nil {
		return time.Time{}
	}
	return s.LastMigrated.Add(p.Interval)
}

// trafficStepFacts gathers stepFacts for a step toward target.
func trafficStepFacts(s split, p pacing, target slot, serve serveStates) stepFacts {
	f := stepFacts{ReadAt: serve[target.name()].ReadAt, Due: due(s, p)}
	if target.View != nil {
		f.ServeEndpoints = serveEndpoints(target.View, nil)
	}
	return f
}

// holdStep applies holdTrafficStep to a traffic step of the upgrade: when it holds, the
// progress says why and the pass asks for what it waits for.
func holdStep(in inputs, r roles, s split, target slot, serve serveStates, act *Effects, out *Outcome) (bool, progress) {
	h := holdTrafficStep(trafficStepFacts(s, in.want.Pacing, target, serve), target.name())
	if !h.Hold {
		return false, progress{}
	}
	out.note(h.Why)
	if h.Refresh {
		act.refresh(target.name())
		out.Wake.Poll = true // in case the pool's word is lost
		// The read takes milliseconds: the status keeps saying when the step is due (as
		// the pass that waited for the interval wrote it), so the hold costs no status
		// write. A dashboard that does not answer shows up as an unreadable cluster.
		return true, progress{Upgrade: describeUpgrade(r, s, "next traffic step at "+due(s, in.want.Pacing).UTC().Format(time.RFC3339))}
	}
	return true, progress{Upgrade: describeUpgrade(r, s, h.Why)}
}
