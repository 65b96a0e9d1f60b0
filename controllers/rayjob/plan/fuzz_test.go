package plan

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/utils/ptr"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/features"
	"github.com/raygate/raygate/test/builders"
)

// FuzzPlan drives the plan through the simulated world, pass after pass, for a RayJob whose
// mode and lifecycle settings the fuzzer picks, under a script of events and faults: suspend
// and resume, deletion, failing actions and status writes, operator restarts (the pool
// forgets), dashboards down, Ray jobs failing or reporting unknown statuses and hostile
// messages, submissions refused or failing, clusters, head pods and submitters deleted by
// hand, the spec made invalid and fixed, the clock jumping. Every pass is judged on the
// plan's promises (invariants_test.go); a status edited by hand with extreme values is
// planned for too. Once the faults are gone the job must come to rest (finished, suspended
// or deleted) and stay there. The seeds run as tests under go test.
func FuzzPlan(f *testing.F) {
	quiet := func(n int) []byte { return slices.Repeat([]byte{255, 255}, n) }
	script := func(parts ...[]byte) []byte { return slices.Concat(parts...) }
	var (
		suspend  = []byte{0, 255}
		del      = []byte{1, 255}
		failAct  = []byte{2, 255}
		conflict = []byte{3, 255}
		restart  = []byte{4, 255}
		down     = []byte{5, 255}
		appFails = []byte{6, 255}
		hostile  = []byte{7, 255}
		unknown  = []byte{8, 255}
		refuse   = []byte{9, 255}
		subFails = []byte{10, 255}
		rmClust  = []byte{11, 255}
		loseHead = []byte{12, 255}
		rmSubmit = []byte{13, 255}
		jump     = []byte{14, 255}
		invalid  = []byte{15, 255}
		inFlight = []byte{17, 255}
		timedOut = []byte{18, 255}
	)
	const (
		shutdown = 1 << iota
		selector
		suspended
		pinned
		sidecarRestart
		deleteSelf
		gateOffFlag
		batch
	)
	for mode := range uint8(4) {
		f.Add(mode, uint8(shutdown), int8(0), uint16(0), uint16(0), uint16(0), uint8(0), script(quiet(40)))
		f.Add(mode, uint8(shutdown|pinned), int8(2), uint16(0), uint16(0), uint16(30), uint8(0), script(quiet(3), appFails, quiet(40)))
		f.Add(mode, uint8(shutdown|suspended), int8(1), uint16(90), uint16(40), uint16(0), uint8(0), script(quiet(5), suspend, quiet(10), restart, quiet(20)))
		f.Add(mode, uint8(0), int8(0), uint16(0), uint16(0), uint16(0), uint8(0x1b), script(quiet(4), restart, quiet(2), restart, quiet(6), hostile, unknown, quiet(30)))
		f.Add(mode, uint8(shutdown), int8(1), uint16(0), uint16(0), uint16(0), uint8(0), script(quiet(6), down, quiet(30), down, refuse, subFails, quiet(20), refuse, subFails, quiet(20)))
		f.Add(mode, uint8(shutdown|sidecarRestart|batch), int8(3), uint16(0), uint16(0), uint16(0), uint8(0), script(quiet(8), loseHead, quiet(8), rmClust, quiet(8), rmSubmit, quiet(30)))
		f.Add(mode, uint8(selector), int8(0), uint16(40), uint16(0), uint16(0), uint8(0), script(quiet(5), failAct, conflict, quiet(5), del, quiet(10)))
		f.Add(mode, uint8(shutdown|deleteSelf), int8(0), uint16(0), uint16(0), uint16(5), uint8(0), script(invalid, quiet(3), invalid, quiet(8), jump, quiet(20)))
		f.Add(mode, uint8(gateOffFlag), int8(1), uint16(0), uint16(0), uint16(0), uint8(0x3f), script(quiet(10), appFails, quiet(40)))
		f.Add(mode, uint8(shutdown), int8(1), uint16(0), uint16(0), uint16(0), uint8(0), script(inFlight, quiet(12), appFails, timedOut, quiet(30)))
	}
	f.Add(uint8(1), uint8(0xff), int8(-1), uint16(math.MaxUint16), uint16(math.MaxUint16), uint16(math.MaxUint16), uint8(0xff), []byte("a script of faults: restarts, refusals, conflicts"))
	f.Add(uint8(0), uint8(0), int8(math.MaxInt8), uint16(1), uint16(1), uint16(0), uint8(0x80), []byte{0, 0, 0, 1, 1, 1, 2, 3, 4, 5})

	f.Fuzz(func(t *testing.T, mode, flags uint8, backoff int8, deadline, preRunning, ttl uint16, rules uint8, script []byte) {
		modes := []rayv1.JobSubmissionMode{rayv1.K8sJobMode, rayv1.HTTPMode, rayv1.SidecarMode, rayv1.InteractiveMode}
		job := builders.RayJob("train", "ml").Mode(modes[int(mode)%len(modes)]).Obj()
		spec := &job.Spec
		spec.BackoffLimit = ptr.To(int32(backoff) % 4)
		if deadline > 0 {
			spec.ActiveDeadlineSeconds = ptr.To(int32(deadline))
		}
		if preRunning > 0 {
			spec.PreRunningDeadlineSeconds = ptr.To(int32(preRunning))
		}
		if flags&shutdown != 0 {
			spec.ShutdownAfterJobFinishes, spec.TTLSecondsAfterFinished = true, int32(ttl)
		}
		if flags&selector != 0 {
			spec.RayClusterSpec, spec.ClusterSelector = nil, map[string]string{rayv1.RayJobClusterSelectorKey: "shared"}
		}
		spec.Suspend = flags&suspended != 0
		if flags&pinned != 0 {
			spec.JobId = "pinned-id"
		}
		if rules != 0 && flags&shutdown == 0 {
			spec.DeletionStrategy = &rayv1.DeletionStrategy{DeletionRules: fuzzRules(rules, ttl)}
		}
		w := newWorld(job)
		w.settings.Gates = features.Static{features.RayJobDeletionPolicy: flags&gateOffFlag == 0, features.SidecarSubmitterRestart: flags&sidecarRestart != 0}
		w.settings.DeleteRayJobAfterJobFinishes = flags&deleteSelf != 0
		w.settings.BatchScheduler = flags&batch != 0
		if flags&selector != 0 {
			w.sharedCluster("shared")
		}
		runScript(t, w, &dice{b: script})
	})
}

// fuzzRules picks deletion rules from the bits of b.
func fuzzRules(b uint8, ttl uint16) []rayv1.DeletionRule {
	policies := []rayv1.DeletionPolicyType{rayv1.DeleteWorkers, rayv1.DeleteCluster, rayv1.DeleteSelf, rayv1.DeleteNone}
	var rules []rayv1.DeletionRule
	for i := range 8 {
		if b&(1<<i) == 0 {
			continue
		}
		r := rayv1.DeletionRule{Policy: policies[i%4], Condition: rayv1.DeletionCondition{TTLSeconds: int32(ttl%600) + int32(i)*7}}
		switch i / 4 {
		case 0:
			r.Condition.JobStatus = ptr.To(rayv1.JobStatusSucceeded)
		default:
			r.Condition.JobDeploymentStatus = ptr.To(rayv1.JobDeploymentStatusFailed)
		}
		rules = append(rules, r)
	}
	return rules
}

// dice reads the script a byte at a time (255 when it runs out).
type dice struct {
	b []byte
	i int
}

func (d *dice) next() byte {
	if d.i >= len(d.b) {
		return 255
	}
	d.i++
	return d.b[d.i-1]
}

const (
	scriptedPasses = 150
	calmPasses     = 4000
)

func runScript(t *testing.T, w *world, d *dice) {
	dr := drive(t, w)
	for i := range scriptedPasses {
		if w.job == nil {
			break
		}
		dr.history = append(dr.history, perturb(w, d))
		r := dr.step()
		if r == nil {
			break
		}
		if i%10 == 0 {
			probeHandEditedStatus(t, r.in, i)
		}
		w.advance(w.untilNext(fuzzWait(d, r)))
	}
	calm(w)
	dr.history = append(dr.history, "calm: the faults are gone")
	for i := 0; ; i++ {
		if i == calmPasses {
			t.Fatalf("not at rest after %d passes; history:\n%s", calmPasses, strings.Join(dr.history, "\n"))
		}
		userActs(w)
		r := dr.step()
		if r == nil {
			for e := w.nextEvent(); !e.IsZero(); e = w.nextEvent() {
				w.advance(e)
			}
			return
		}
		next := w.untilNext(wait(r))
		if next.IsZero() {
			if userActs(w) {
				continue
			}
			break
		}
		w.advance(next)
	}
	if w.job == nil {
		return
	}
	resting := []rayv1.JobDeploymentStatus{rayv1.JobDeploymentStatusComplete, rayv1.JobDeploymentStatusFailed, rayv1.JobDeploymentStatusSuspended}
	if len(w.inputs().Invalid) > 0 {
		// A spec that breaks a rule from the start (the fuzzer picks any combination).
		resting = append(resting, rayv1.JobDeploymentStatusValidationFailed)
	}
	if st := w.job.Status; !slices.Contains(resting, st.JobDeploymentStatus) {
		t.Fatalf("at rest in %s (%s: %s); clusters %s\nhistory:\n%s", st.JobDeploymentStatus, st.Reason, st.Message, w.ids(), strings.Join(dr.history, "\n"))
	}
	if r := dr.step(); r != nil && (!r.p.empty() || !statusEqual(&r.p.Status, &r.in.Job.Status)) {
		t.Fatalf("a job at rest still acts: %v, status %+v", kinds(r.p), r.p.Status)
	}
}

// fuzzWait is how long the clock moves after a pass: usually until the wake-up, sometimes
// less (a watch event comes first) or more (the operator is slow).
func fuzzWait(d *dice, r *reconciled) time.Duration {
	want := wait(r)
	switch d.next() % 8 {
	case 0:
		return time.Millisecond
	case 1:
		return time.Duration(d.next()) * 20 * time.Millisecond
	case 2:
		return want + time.Duration(d.next())*100*time.Millisecond
	}
	return want
}

// perturb applies the script's next event to the world and says what it was.
func perturb(w *world, d *dice) string {
	cluster := w.clusters[w.job.Status.RayClusterName]
	switch d.next() {
	case 0:
		w.updateSpec(func(s *rayv1.RayJobSpec) { s.Suspend = !s.Suspend })
		return fmt.Sprintf("spec.suspend: %v", w.job.Spec.Suspend)
	case 1:
		w.deleteJob()
		return "the RayJob is deleted"
	case 2:
		w.failAction = 0
		return "the next pass's first action fails"
	case 3:
		w.conflictStatus = true
		return "the next status write conflicts"
	case 4:
		w.pool.reset()
		return "the operator restarts"
	case 5:
		if cluster != nil {
			cluster.dashboardDown = !cluster.dashboardDown
			return fmt.Sprintf("dashboard of %s down: %v", cluster.rc.Name, cluster.dashboardDown)
		}
	case 6:
		w.app.outcome = map[rayv1.JobStatus]rayv1.JobStatus{rayv1.JobStatusSucceeded: rayv1.JobStatusFailed, rayv1.JobStatusFailed: rayv1.JobStatusSucceeded}[w.app.outcome]
		return "new Ray jobs end " + string(w.app.outcome)
	case 7:
		w.app.message = strings.Repeat("Traceback "+hostile, 300)
		return "Ray's messages are hostile"
	case 8:
		if w.app.unknownWord == "" {
			w.app.unknownWord = "ZOMBIE\x00" + hostile
		} else {
			w.app.unknownWord = ""
		}
		return "unknown status words: " + fmt.Sprint(w.app.unknownWord != "")
	case 9:
		if w.app.refuse == "" {
			w.app.refuse = "invalid runtime_env " + hostile
		} else {
			w.app.refuse = ""
		}
		return "submissions refused: " + fmt.Sprint(w.app.refuse != "")
	case 10:
		w.app.submitFails = !w.app.submitFails
		return "submitters fail: " + fmt.Sprint(w.app.submitFails)
	case 11:
		if cluster != nil && cluster.deletingAt.IsZero() {
			cluster.deletingAt = w.now
			return "RayCluster " + cluster.rc.Name + " deleted by hand"
		}
	case 12:
		if cluster != nil {
			w.loseHead(cluster.rc.Name)
			return "the head pod of " + cluster.rc.Name + " is lost"
		}
	case 13:
		if w.submitter != nil && w.submitter.deletingAt.IsZero() {
			w.submitter.deletingAt = w.now
			return "the submitter Job deleted by hand"
		}
	case 14:
		w.advance(w.now.Add(time.Hour))
		return "the operator was down for an hour"
	case 15:
		w.updateSpec(func(s *rayv1.RayJobSpec) { *s.BackoffLimit = -1 - *s.BackoffLimit })
		return fmt.Sprintf("spec.backoffLimit: %d", *w.job.Spec.BackoffLimit)
	case 16:
		w.clusterNeverReady = !w.clusterNeverReady
		return "new clusters never ready: " + fmt.Sprint(w.clusterNeverReady)
	case 17:
		w.nextSubmission = "restart"
		return "the operator restarts while the next submission is in flight"
	case 18:
		w.nextSubmission = "timeout"
		return "the next submission lands but its answer times out"
	}
	return "-"
}

// calm clears every fault: what the world does from now on, it does right.
func calm(w *world) {
	w.app.refuse, w.app.submitFails, w.app.unknownWord = "", false, ""
	w.clusterNeverReady, w.failAction, w.conflictStatus, w.nextSubmission = false, -1, false, ""
	for _, c := range w.clusters {
		c.dashboardDown = false
		if c.readyAt.IsZero() {
			c.readyAt = w.now
		}
	}
	if w.job != nil && *w.job.Spec.BackoffLimit < 0 {
		w.updateSpec(func(s *rayv1.RayJobSpec) { *s.BackoffLimit = -1 - *s.BackoffLimit })
	}
}

// userActs does what a user of a job waiting on them would: creates the cluster a clusterSelector
// names, submits an InteractiveMode job and names it. It reports whether it did anything.
func userActs(w *world) bool {
	if w.job == nil {
		return false
	}
	st, spec := &w.job.Status, &w.job.Spec
	acted := false
	if name := spec.ClusterSelector[rayv1.RayJobClusterSelectorKey]; name != "" && w.clusters[name] == nil {
		w.sharedCluster(name)
		w.kicked, acted = true, true
	}
	if spec.SubmissionMode == rayv1.InteractiveMode {
		if c := w.clusters[st.RayClusterName]; c != nil && c.ready(w.now) {
			id := spec.JobId
			if id == "" {
				id = fmt.Sprintf("user-%d", w.passes)
				w.updateSpec(func(s *rayv1.RayJobSpec) { s.JobId = id })
				acted = true
			}
			if c.jobs[id] == nil && st.JobDeploymentStatus != rayv1.JobDeploymentStatusComplete && st.JobDeploymentStatus != rayv1.JobDeploymentStatusFailed {
				w.userSubmit(c, id)
				w.kicked, acted = true, true
			}
		}
	}
	return acted
}

// probeHandEditedStatus plans for the pass's inputs with a status edited by hand: extreme
// counts, times and words. The plan must not panic, and must keep its text promises.
func probeHandEditedStatus(t *testing.T, in Inputs, i int) {
	t.Helper()
	job := in.Job.DeepCopy()
	st := &job.Status
	switch i / 10 % 4 {
	case 0:
		st.Failed, st.Succeeded = ptr.To[int32](math.MaxInt32), ptr.To[int32](math.MinInt32)
		st.StartTime, st.EndTime = nil, nil
	case 1:
		st.StartTime, st.EndTime, st.JobStatusCheckFailureStartTime = at(-1e6*time.Hour), at(1e6*time.Hour), at(-1e6*time.Hour)
	case 2:
		st.JobDeploymentStatus, st.JobStatus = "Bogus\x00", "WHAT"
	case 3:
		st.JobStatus, st.JobId, st.RayClusterName = rayv1.JobStatusSucceeded, "", ""
	}
	in.Job = job
	p := Decide(in)
	if b := textBreaches(p); len(b) > 0 {
		t.Fatalf("hand-edited status %+v: %v", *st, b)
	}
}
