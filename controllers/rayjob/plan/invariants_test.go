package plan

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/rayjob"
)

// hostile is remote text no status or event may carry verbatim.
const hostile = "\x1b[31mowned\x1b[0m\r\nInjected: yes\u202e"

// breaches judges one pass against the plan's promises; it returns what was broken.
func breaches(w *world, r *reconciled) []string {
	var out []string
	bad := func(format string, args ...any) { out = append(out, fmt.Sprintf(format, args...)) }
	in, p := r.in, r.p
	stored := &in.Job.Status

	// The same inputs give the same plan.
	if again := Decide(in); !reflect.DeepEqual(again, p) {
		bad("the plan is not a function of its inputs")
	}
	// The status is the stored one, unchanged, when nothing changed.
	if equality.Semantic.DeepEqual(&p.Status, stored) && !reflect.DeepEqual(p.Status, *stored) {
		bad("the status is semantically the stored one but not the stored one itself")
	}
	// Nothing is done for a job another controller manages; nothing is created, changed or
	// deleted for an invalid one.
	if managedByOther(in.Job) && !p.empty() {
		bad("effects for a job managed by %s: %v %v", *in.Job.Spec.ManagedBy, p.Actions, p.Requests)
	}
	if len(in.Invalid) > 0 && in.Job.DeletionTimestamp == nil && !p.empty() {
		bad("effects for an invalid job: %v %v", p.Actions, p.Requests)
	}
	out = append(out, submissionBreaches(in, p)...)
	for _, a := range p.Actions {
		var rc *rayv1.RayCluster
		switch a := a.(type) {
		case DeleteCluster:
			rc = a.Cluster
		case SuspendWorkers:
			rc = a.Cluster
		case PointJobService:
			rc = a.Cluster
		}
		if rc != nil && (rayjob.UsesClusterSelector(in.Job) || !controlledBy(rc, in.Job)) {
			bad("%s: a RayCluster the job does not control", a)
		}
	}
	out = append(out, textBreaches(p)...)
	if !p.Wake.At.IsZero() && !p.Wake.At.After(in.Now) {
		bad("wakes at %s, not after now %s", p.Wake.At, in.Now)
	}
	if p.Wake.Soon && p.empty() && reflect.DeepEqual(p.Status, *stored) {
		bad("asks to come back soon having decided nothing (a busy loop)")
	}
	out = append(out, deadlineBreaches(in, p)...)
	for name, ids := range w.submissions {
		n := 0
		for id, count := range ids {
			n++
			if count != 1 {
				bad("RayCluster %s ran job %s %d times", name, id, count)
			}
		}
		if n > 1 {
			bad("RayCluster %s ran %d jobs: %v", name, n, ids)
		}
	}
	return out
}

// submissionBreaches: an effect that submits carries the id the stored status records; an
// HTTP submission follows a "not found" newer than any earlier submission's answer.
func submissionBreaches(in Inputs, p Plan) []string {
	var out []string
	stored := &in.Job.Status
	recorded := func(what, id string) {
		if id == "" || id != stored.JobId {
			out = append(out, fmt.Sprintf("%s submits id %q, the stored status records %q", what, id, stored.JobId))
		}
	}
	for _, a := range p.Actions {
		switch a := a.(type) {
		case CreateSubmitter:
			recorded(a.String(), submitterEnv(a.Job, rayjob.EnvSubmissionID))
		case CreateCluster:
			for _, c := range a.Cluster.Spec.HeadGroupSpec.Template.Spec.Containers {
				if c.Name == rayv1.SubmitterContainerName {
					recorded(a.String(), envOf(c, rayjob.EnvSubmissionID))
				}
			}
		}
	}
	for _, q := range p.Requests {
		s, ok := q.(SubmitJob)
		if !ok {
			continue
		}
		recorded(s.String(), s.JobID)
		v := in.Observed.Jobs
		switch {
		case v.Cluster != s.Cluster || v.JobID != s.JobID || v.Read == nil || v.Read.Outcome != ReadNotFound:
			out = append(out, s.String()+" without a 'not found' for this cluster and id")
		case v.Submission != nil && (v.Submission.Outcome == SubmitPending || !v.Read.At.After(v.Submission.At)):
			out = append(out, s.String()+" while an earlier submission is under way or newer than the 'not found'")
		case v.Submission.submitted():
			out = append(out, s.String()+" after the Jobs API took the job")
		}
	}
	return out
}

func controlledBy(rc *rayv1.RayCluster, job *rayv1.RayJob) bool {
	ref := metav1.GetControllerOfNoCopy(rc)
	return ref != nil && ref.UID == job.UID
}

// textBreaches: the status message and event notes are printable and bounded, and carry no
// remote text verbatim.
func textBreaches(p Plan) []string {
	var out []string
	check := func(what, s string, limit int) {
		if utf8.RuneCountInString(s) > limit {
			out = append(out, fmt.Sprintf("%s is %d runes long", what, utf8.RuneCountInString(s)))
		}
		if strings.Contains(s, "Injected: yes") && strings.ContainsAny(s, "\r\n") || strings.Contains(s, "\x1b") {
			out = append(out, fmt.Sprintf("%s carries remote text verbatim: %q", what, s))
		}
		if i := strings.IndexFunc(s, func(r rune) bool { return !unicode.IsPrint(r) && r != ' ' }); i >= 0 {
			out = append(out, fmt.Sprintf("%s has an unprintable character at %d: %q", what, i, s))
		}
	}
	check("status.message", p.Status.Message, maxJobMessage+300)
	for _, e := range p.Events {
		check("event "+e.Reason, e.Note, 1024)
		if len(e.Note) > 1024 {
			out = append(out, fmt.Sprintf("event %s note is %d bytes", e.Reason, len(e.Note)))
		}
	}
	return out
}

// deadlineBreaches: a pass at or after activeDeadlineSeconds fails the attempt; before, it
// wakes no later than the deadline.
func deadlineBreaches(in Inputs, p Plan) []string {
	job := in.Job
	d, start := job.Spec.ActiveDeadlineSeconds, job.Status.StartTime
	running := []rayv1.JobDeploymentStatus{rayv1.JobDeploymentStatusInitializing, rayv1.JobDeploymentStatusWaiting, rayv1.JobDeploymentStatusRunning}
	if d == nil || start == nil || job.Spec.Suspend || job.DeletionTimestamp != nil || len(in.Invalid) > 0 || managedByOther(job) ||
		!slices.Contains(running, job.Status.JobDeploymentStatus) {
		return nil
	}
	due := start.Add(seconds(int(*d)))
	if in.Now.Before(due) {
		if slices.Contains(running, p.Status.JobDeploymentStatus) && !p.Wake.Soon && (p.Wake.At.IsZero() || p.Wake.At.After(due)) {
			return []string{fmt.Sprintf("the active deadline is due at %s, the pass wakes at %v", due, p.Wake.At)}
		}
		return nil
	}
	if p.Status.JobDeploymentStatus != rayv1.JobDeploymentStatusFailed || p.Status.Reason != rayv1.DeadlineExceeded {
		return []string{fmt.Sprintf("the active deadline passed at %s; the status is %s (%s)", due, p.Status.JobDeploymentStatus, p.Status.Reason)}
	}
	return nil
}
