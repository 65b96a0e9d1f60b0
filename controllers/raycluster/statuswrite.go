package raycluster

import (
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/statuspatch"
)

// DefaultStatusCoalesce is how long a status change that only follows pods' progress (ready
// and available workers, the head pod's name and IP, a condition's reason or message while
// its status stays) may wait to be written together with the next ones. Pods of a cluster
// turn ready one by one over seconds on a real kubelet; without it each step costs a status
// write. HeadPodReady turning true waits too. The state, any other condition changing status
// or appearing, the reason, desired figures and endpoints are written at once, so the `ready`
// transition is never delayed by it.
const DefaultStatusCoalesce = 5 * time.Second

// DefaultBringUpCoalesce is the least time the pods of a cluster coming up for the first time
// without trouble (not yet provisioned, no failure reported) must stand still before their
// progress is written on its own. While they keep moving the progress waits for the `ready`
// transition, which is written at once, up to DefaultBringUpMaxWait; once they stop short of
// it (a worker that cannot be scheduled, a head that never turns ready) the progress is
// written this long after their last step, or as long as the pods took to make their first
// step since the cluster was created if that is longer: on a busy cluster every step is slow,
// and a pause no longer than the wait for the first step is no sign of trouble. A wait counted
// from the first step instead ran out during every bring-up slower than itself: on a saturated
// API server each cluster's pods took far longer than that from their first step to `ready`
// (docs/benchmarks.md), and most clusters paid a third status write. Conditions' reasons and
// messages (e.g. ImagePullBackOff) and any failure keep DefaultStatusCoalesce: trouble is
// shown within seconds.
const DefaultBringUpCoalesce = 30 * time.Second

// DefaultBringUpMaxWait bounds how long pod progress waits during a first bring-up, whether
// the pods keep moving or not: the most `kubectl get raycluster` lags behind them.
const DefaultBringUpMaxWait = 2 * time.Minute

// coalesceWindows are the waits of decideStatusWrite.
type coalesceWindows struct {
	// Steady is the wait of progress changes (0: every change is written at once).
	Steady time.Duration
	// BringUp is the least wait of pod progress after the pods last moved, while a cluster
	// comes up without trouble (bringingUp); never shorter than Steady.
	BringUp time.Duration
	// BringUpMax bounds the wait of pod progress from its first step (never shorter than
	// BringUp).
	BringUpMax time.Duration
}

// pendingChange is a status change waiting to be written.
type pendingChange struct {
	// Since is when it was first seen (zero: nothing waits).
	Since time.Time
	// Moved is when the pods' progress last moved, and Progress what it was then.
	Moved    time.Time
	Progress progressMark
}

// progressMark is what pods making progress move in a status (sameApartFromProgress), kept
// to notice that they moved again; a few words per waiting cluster.
type progressMark struct {
	ready, available      int32
	headPod, headIP, svc  string
	headReady, headReason string
}

func markOf(s *rayv1.RayClusterStatus) progressMark {
	m := progressMark{
		ready: s.ReadyWorkerReplicas, available: s.AvailableWorkerReplicas,
		headPod: s.Head.PodName, headIP: s.Head.PodIP, svc: s.Head.ServiceIP,
	}
	if c := meta.FindStatusCondition(s.Conditions, string(rayv1.HeadPodReady)); c != nil {
		m.headReady, m.headReason = string(c.Status), c.Reason
	}
	return m
}

// statusWrite is what to do with a computed status: write it now, or wait (After) with the
// change left waiting (Pending).
type statusWrite = statuspatch.Decision[pendingChange]

// decideStatusWrite says whether a status that differs from the stored one in cur is
// written now. Progress changes (countsOnly) wait until the steady window has passed since
// such a change was first seen (pending.Since). Pod progress during a trouble-free first
// bring-up waits until the pods have stood still for bringUpQuiet, or the bring-up bound has
// passed since the first step; created is the cluster's creation (zero: unknown). Anything
// else is written at once.
func decideStatusWrite(old, cur rayv1.RayClusterStatus, pending pendingChange, created, now time.Time, w coalesceWindows) statusWrite {
	if !statusChanged(old, cur) {
		return statusWrite{}
	}
	if w.Steady <= 0 || !countsOnly(old, cur) {
		return statusWrite{Write: true}
	}
	if pending.Since.IsZero() || pending.Since.After(now) {
		pending = pendingChange{Since: now}
	}
	waited := now.Sub(pending.Since)
	if w.BringUp <= w.Steady || !bringingUp(old, cur) || !podProgressOnly(old, cur) {
		if waited < w.Steady {
			return statusWrite{After: w.Steady - waited, Pending: pendingChange{Since: pending.Since}}
		}
		return statusWrite{Write: true}
	}
	if mark := markOf(&cur); pending.Moved.IsZero() || pending.Moved.After(now) || mark != pending.Progress {
		pending.Moved, pending.Progress = now, mark
	}
	bound := max(w.BringUpMax, w.BringUp)
	quiet, still := bringUpQuiet(created, pending.Since, w.BringUp, bound), now.Sub(pending.Moved)
	if still >= quiet || waited >= bound {
		return statusWrite{Write: true}
	}
	return statusWrite{After: min(quiet-still, bound-waited), Pending: pending}
}

// bringUpQuiet is how long a bring-up's pods must stand still before their progress is
// written on its own: as long as they took from the cluster's creation to their first step
// (firstStep), between least and most.
func bringUpQuiet(created, firstStep time.Time, least, most time.Duration) time.Duration {
	pace := time.Duration(0)
	if !created.IsZero() && firstStep.After(created) {
		pace = firstStep.Sub(created)
	}
	return min(max(pace, least), most)
}

// bringingUp says whether a cluster is coming up for the first time without trouble: it was
// never provisioned (nor ready) and neither status reports a failure.
func bringingUp(old, cur rayv1.RayClusterStatus) bool {
	if old.State == rayv1.Ready || meta.IsStatusConditionTrue(old.Conditions, string(rayv1.RayClusterProvisioned)) {
		return false
	}
	for _, s := range []rayv1.RayClusterStatus{old, cur} {
		if s.Reason != "" || meta.IsStatusConditionTrue(s.Conditions, string(rayv1.RayClusterReplicaFailure)) {
			return false
		}
	}
	return true
}

// countsOnly says whether two statuses differ only in what pods making progress move: the
// worker counts, the head pod's name and IP (and a headless Service's, which is the pod's),
// HeadPodReady turning true, and the reason, message and times of conditions whose status
// stays. HeadPodReady turning true is progress like a worker turning ready: on a kubelet the
// head is usually ready seconds before the workers, and writing it at once cost every
// cluster a third status write. Nothing in raygate waits on it (the RayService controller
// waits on `ready`, which is written at once); the head turning unready is written at once.
func countsOnly(old, cur rayv1.RayClusterStatus) bool {
	return sameApartFromProgress(old, cur, true)
}

// podProgressOnly is countsOnly without the conditions' reasons and messages: only the
// worker counts, the head pod's name and IP, HeadPodReady turning true and the head's
// normal start-up steps (headStartingReasons) differ.
func podProgressOnly(old, cur rayv1.RayClusterStatus) bool {
	return sameApartFromProgress(old, cur, false)
}

// headStartingReasons are the HeadPodReady reasons of a head pod starting normally: no Ready
// condition yet, containers not ready yet, the kubelet creating containers or running init
// containers. Every other reason (ImagePullBackOff, CrashLoopBackOff, …) is trouble.
var headStartingReasons = map[string]bool{
	rayv1.UnknownReason: true, "ContainersNotReady": true, "ContainerCreating": true, "PodInitializing": true,
}

// sameApartFromProgress compares two statuses without what pods making progress move;
// conditionText also leaves out the conditions' reasons, messages and times.
func sameApartFromProgress(old, cur rayv1.RayClusterStatus, conditionText bool) bool {
	// Only the conditions are changed in place below: the rest is copied with the struct.
	a, b := &old, &cur
	a.Conditions, b.Conditions = slices.Clone(old.Conditions), slices.Clone(cur.Conditions)
	if was := meta.FindStatusCondition(a.Conditions, string(rayv1.HeadPodReady)); was != nil && was.Status == metav1.ConditionFalse {
		now := meta.FindStatusCondition(b.Conditions, string(rayv1.HeadPodReady))
		switch {
		case now == nil:
		case now.Status == metav1.ConditionTrue:
			*now = *was // the head turning ready, with its new reason and message
		case now.Status == metav1.ConditionFalse && headStartingReasons[was.Reason] && headStartingReasons[now.Reason]:
			*now = *was // the head moving through its start-up steps
		}
	}
	for _, s := range []*rayv1.RayClusterStatus{a, b} {
		s.ReadyWorkerReplicas, s.AvailableWorkerReplicas = 0, 0
		if s.Head.ServiceIP == s.Head.PodIP {
			s.Head.ServiceIP = "" // a headless Service's IP is the head pod's
		}
		s.Head.PodName, s.Head.PodIP = "", ""
		if !conditionText {
			continue
		}
		for i := range s.Conditions {
			c := &s.Conditions[i]
			c.Reason, c.Message, c.LastTransitionTime = "", "", metav1.Time{}
		}
	}
	return !statusChanged(*a, *b)
}

// statusWriter writes the clusters' statuses; GetCached makes the passes read their own
// status writes without a request, and the changes decideStatusWrite leaves waiting are kept
// there (internal/statuspatch).
type statusWriter = statuspatch.Writer[*rayv1.RayCluster, rayv1.RayClusterStatus, pendingChange, clusterStatus]

// clusterStatus reaches a RayCluster's status for the writer.
type clusterStatus struct{}

func (clusterStatus) Status(rc *rayv1.RayCluster) *rayv1.RayClusterStatus { return &rc.Status }

func (clusterStatus) Copy(s *rayv1.RayClusterStatus) *rayv1.RayClusterStatus { return s.DeepCopy() }

// statusPolicy is decideStatusWrite for a cluster created at created (zero: unknown).
func statusPolicy(created time.Time, w coalesceWindows) statuspatch.Policy[rayv1.RayClusterStatus, pendingChange] {
	return func(old, cur rayv1.RayClusterStatus, pending pendingChange, now time.Time) statusWrite {
		return decideStatusWrite(old, cur, pending, created, now, w)
	}
}
