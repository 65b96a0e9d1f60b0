package rayservice

import (
	"fmt"
	"strconv"

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
	// Runs is the serve config and target capacity the cluster runs once this pass's
	// submission, if any, landed (the submissions are carried out before anything else).
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
func planServe(in inputs, r roles, out *planned) serveStates {
	states := serveStates{}
	for _, s := range []struct {
		slot   slot
		active bool
	}{{r.Active, true}, {r.Pending, false}} {
		if s.slot.View != nil {
			states[s.slot.name()] = planServeFor(in, r, s.slot, s.active, out)
		}
	}
	return states
}

func planServeFor(in inputs, r roles, s slot, active bool, out *planned) serveState {
	rc, v := s.cluster(), s.View
	cfg, tc, known := wantedServe(in, r, s, active)
	st := serveState{Runs: submittedOn(rc), NothingToRun: known && cfg.empty()}
	switch {
	case !headReady(v.Pods):
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
	st.Apps = v.Serve.Apps
	if !known {
		// The cluster must keep the config it runs, and raygate cannot tell which it is:
		// nothing is submitted, so its target capacity cannot change either.
		st.Note = "the serve config recorded on " + rc.Name + " (annotation " + ServeConfigKey + ") is missing or unreadable; it keeps what it runs"
		st.Ready = appsRunning(st.Apps, appNames(st.Apps))
		return st
	}
	d := decideSubmit(st.Runs, cfg, tc, len(st.Apps))
	redeployed := false
	if d.Submit {
		if ref, refused := in.obs.Refused[rc.Name]; refused {
			st.Note = "the dashboard of " + rc.Name + " rejected the serve config: " + ref.Message
			// A config refused as a bad request fails the same way again: wait for a spec
			// change (or the resync). Other refusals are retried soon.
			out.Wake.Poll = out.Wake.Poll || !ref.BadRequest
			return st
		}
		redeployed = st.Runs.Hash != cfg.hash || len(st.Apps) == 0
		done := normalEvent(rc, EventTargetCapacity, "SetTargetCapacity", "set Serve target_capacity of %s to %s", rc.Name, percent(tc))
		if redeployed {
			done = normalEvent(rc, EventSubmittedServeConfig, "SubmitServeConfig", "submitted the serve config to %s: %s", rc.Name, d.Reason)
		}
		out.submit(submitServeConfig{Cluster: rc, Config: cfg, TargetCapacity: tc, Reason: d.Reason, Done: done})
		st.Runs = submitted{Hash: cfg.hash, Config: cfg.json(), TargetCapacity: tc}
	}
	switch {
	case cfg.empty():
		st.Ready = true
	case redeployed:
		st.Note = "Serve applications of " + rc.Name + " are deploying"
		out.Wake.Poll = true
	case appsRunning(st.Apps, cfg.apps):
		st.Ready = true
	default:
		st.Note = describeApps(rc.Name, st.Apps, cfg.apps)
		if len(unhealthyApps(st.Apps)) == 0 {
			out.Wake.Poll = true
		}
	}
	return st
}

// wantedServe is the config and target capacity a cluster should run. During an upgrade
// (or rollback) the active cluster keeps exactly the config it was given before: only its
// target capacity changes, by resubmitting that recorded config. The same holds for a
// pending cluster being rolled back (it may still carry traffic; a third spec goes to a
// fresh cluster). known is false for such a frozen cluster without a readable record.
func wantedServe(in inputs, r roles, s slot, active bool) (cfg *serveConfig, tc *int32, known bool) {
	if in.want.incremental() {
		tc = s.Status.TargetCapacity
	}
	frozen := (active && r.Pending.View != nil) || (!active && r.Rollback != "")
	if !frozen {
		return in.want.Serve, tc, true
	}
	rec := submittedOn(s.cluster())
	if rec.Hash == "" && rec.Config == "" {
		// Never given a config: it keeps running none.
		empty, _ := newServeConfig(map[string]any{})
		return empty, tc, true
	}
	cfg, err := parseSubmittedConfig(rec.Config)
	if err != nil {
		return nil, tc, false
	}
	return cfg, tc, true
}

func appNames(apps map[string]rayv1.AppStatus) []string {
	out := make([]string, 0, len(apps))
	for n := range apps {
		out = append(out, n)
	}
	return out
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

func percent(v *int32) string {
	if v == nil {
		return "unset (100%)"
	}
	return strconv.Itoa(int(*v)) + "%"
}
