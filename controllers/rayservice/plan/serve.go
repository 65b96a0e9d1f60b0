package plan

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
)

// serveState is what the plan concludes about one cluster's Serve applications.
type serveState struct {
	// Ready: every wanted application is RUNNING (or there is nothing to run).
	Ready bool
	// Note says why not.
	Note string
	// Apps are the applications as the dashboard reported them (nil: not read this pass).
	Apps map[string]rayv1.AppStatus
	// ReadAt is when Apps were read.
	ReadAt time.Time
	// Runs is the serve config and target capacity the cluster's dashboard accepted last.
	Runs submitted
	// NothingToRun: the cluster is to run no serve config, so it has no target capacity.
	NothingToRun bool
}

// serveStates are by cluster name.
type serveStates map[string]serveState

// ready: the role has a cluster whose applications run.
func (s serveStates) ready(role slot) bool { return role.View != nil && s[role.name()].Ready }

// planServe decides, for the active and pending clusters, which serve config to submit and
// whether their applications run.
func planServe(in inputs, r roles, act *Effects, out *Outcome) serveStates {
	states := serveStates{}
	for _, s := range []struct {
		slot   slot
		active bool
	}{{r.Active, true}, {r.Pending, false}} {
		if s.slot.View != nil {
			states[s.slot.name()] = planServeFor(in, r, s.slot, s.active, act, out)
		}
	}
	return states
}

func planServeFor(in inputs, r roles, s slot, active bool, act *Effects, out *Outcome) serveState {
	rc, v := s.cluster(), s.View
	w := wantedServe(in, r, s, active)
	rec := submittedOn(rc)
	st := serveState{Runs: runsOn(rec, v.Serve), NothingToRun: w.empty()}
	if acc := v.Serve.Accepted; acc != nil && acc.Hash != rec.Hash {
		// The dashboard accepted a config since the record was written: record it first,
		// so the record never lags what the cluster runs for longer than a pass.
		act.doFirst(AnnotateCluster{Cluster: rc, Annotations: recordAnnotations(acc.Hash), Remove: staleRecordAnnotations(rc)})
	}
	switch {
	case !HeadReady(v.Pods):
		st.Note = "waiting for the head pod of " + rc.Name + " to be ready"
		return st
	case v.Serve.Err != "":
		st.Note = "cannot read Serve applications of " + rc.Name + ": " + v.Serve.Err
		out.Wake.Poll = true
		return st
	case v.Serve.Apps == nil:
		st.Note = "the Serve applications of " + rc.Name + " were not read yet"
		out.Wake.Poll = true
		return st
	}
	st.Apps, st.ReadAt = v.Serve.Apps, v.Serve.ReadAt.Time
	acceptedHere := v.Serve.Accepted != nil && v.Serve.Accepted.Hash == w.Hash
	d := decideSubmit(st.Runs, w, len(st.Apps), acceptedHere)
	if d.Submit {
		redeploy := st.Runs.Hash != w.Hash || len(st.Apps) == 0
		if note, sent := submitServe(in, rc, v, w, st.Runs, d.Reason, redeploy, act, out); !sent || note != "" {
			st.Note = note
			return st
		}
	}
	switch {
	case w.empty():
		st.Ready = true
	case appsRunning(st.Apps, w.appNames(st.Apps)):
		st.Ready = true
	default:
		st.Note = describeApps(rc.Name, st.Apps, w.appNames(st.Apps))
		if len(unhealthyApps(st.Apps)) == 0 {
			out.Wake.Poll = true
		}
	}
	return st
}

// submitServe asks for a cluster's serve config to be submitted and says what the cluster
// waits for: "" when its applications keep running meanwhile (only the target capacity
// changes). sent is false when the config cannot be submitted (its record's name is taken).
func submitServe(in inputs, rc *rayv1.RayCluster, v *ClusterView, w wanted, runs submitted, reason string, redeploy bool, act *Effects, out *Outcome) (note string, sent bool) {
	if foreign := in.obs.ForeignRecords[rc.Name]; foreign != "" {
		out.conflict(foreign)
		return "the serve config of " + rc.Name + " cannot be recorded: " + foreign, false
	}
	// A change of target capacity alone is a step of an incremental upgrade: the status
	// records it and the step's ShiftedTraffic event tells the capacities, so it gets no
	// event of its own (two per step, a third of an upgrade's writes once).
	var done Event
	if redeploy {
		done = NormalEvent(rc, EventSubmittedServeConfig, "SubmitServeConfig", "submitted the serve config to %s: %s", rc.Name, reason)
	}
	keep := []string{runs.Hash}
	if h := submittedOn(rc).Hash; h != runs.Hash {
		keep = append(keep, h)
	}
	act.submit(SubmitServeConfig{Cluster: rc, Hash: w.Hash, Config: w.Config, TargetCapacity: w.TC, Keep: keep, Reason: reason, Done: done})
	if sub := v.Serve.Submission; sub != nil && sub.ID == submissionID(w.Hash, w.TC) {
		switch sub.Outcome {
		case SubmitRefused:
			// A config refused as a bad request fails the same way again: it is sent again
			// only after a while, or when the spec changes.
			out.Wake.Poll = out.Wake.Poll || !sub.BadRequest
			return "the dashboard of " + rc.Name + " rejected the serve config: " + sub.Message, true
		case SubmitFailed:
			out.Wake.Poll = true
			return "cannot submit the serve config to " + rc.Name + " (retrying): " + sub.Message, true
		}
	}
	// The dashboard's answer comes back on a later pass (the pool says when); poll in case
	// that word is lost.
	out.Wake.Poll = true
	if redeploy {
		return "submitting the serve config to " + rc.Name + ": " + reason, true
	}
	return "", true
}

// wanted is the serve config a cluster should run and its target capacity.
type wanted struct {
	Hash string
	// Config is nil when only the hash is known: the config recorded for a frozen cluster,
	// read from the cluster's record when it must be sent again.
	Config *ServeConfig
	TC     *int32
}

func (w wanted) empty() bool {
	if w.Config != nil {
		return w.Config.empty()
	}
	return w.Hash == emptyConfigHash
}

// hasApps: the config names applications (assumed of a config known only by its hash).
func (w wanted) hasApps() bool { return w.Config == nil || len(w.Config.apps) > 0 }

// appNames are the applications that must run: the config's, or for a config known only
// by its hash, every application the dashboard reports.
func (w wanted) appNames(reported map[string]rayv1.AppStatus) []string {
	if w.Config != nil {
		return w.Config.apps
	}
	return appNames(reported)
}

// wantedServe is the config and target capacity a cluster should run. During an upgrade
// (or rollback) the active cluster keeps exactly the config it was given before: only its
// target capacity changes, by resubmitting that recorded config. The same holds for a
// pending cluster being rolled back (it may still carry traffic; a third spec goes to a
// fresh cluster).
func wantedServe(in inputs, r roles, s slot, active bool) wanted {
	var tc *int32
	if in.want.incremental() {
		tc = s.Status.TargetCapacity
	}
	frozen := (active && r.Pending.View != nil) || (!active && r.Rollback != "")
	if !frozen {
		return wanted{Hash: in.want.Serve.hash, Config: in.want.Serve, TC: tc}
	}
	rec := submittedOn(s.cluster())
	if rec.Hash == "" {
		// Never given a config: it keeps running none.
		empty, _ := newServeConfig(map[string]any{})
		return wanted{Hash: empty.hash, Config: empty, TC: tc}
	}
	if rec.Hash == in.want.Serve.hash {
		return wanted{Hash: rec.Hash, Config: in.want.Serve, TC: tc}
	}
	if rec.Legacy != "" {
		if cfg, err := parseLegacyConfig(rec.Legacy); err == nil && cfg.hash == rec.Hash {
			return wanted{Hash: rec.Hash, Config: cfg, TC: tc}
		}
	}
	return wanted{Hash: rec.Hash, TC: tc}
}

// appNames are the applications' names in order, so a message built from them is the same
// on every pass (a changed message would rewrite the status).
func appNames(apps map[string]rayv1.AppStatus) []string {
	return slices.Sorted(maps.Keys(apps))
}

func describeApps(cluster string, apps map[string]rayv1.AppStatus, wanted []string) string {
	var waiting []string
	for _, n := range wanted {
		s := apps[n].Status
		if s == "" {
			s = "missing"
		}
		if s != rayv1.ApplicationStatusRunning {
			waiting = append(waiting, n+" "+s)
		}
	}
	return fmt.Sprintf("Serve applications of %s not RUNNING yet: %v", cluster, waiting)
}

func Percent(v *int32) string {
	if v == nil {
		return "unset (100%)"
	}
	return strconv.Itoa(int(*v)) + "%"
}
