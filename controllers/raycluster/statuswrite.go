package raycluster

import (
	"slices"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
)

// DefaultStatusCoalesce is how long a status change that only follows pods' progress (ready
// and available workers, the head pod's name and IP, a condition's reason or message while
// its status stays) may wait to be written together with the next ones. Pods of a cluster
// turn ready one by one over seconds on a real kubelet; without it each step costs a status
// write. HeadPodReady turning true waits too. The state, any other condition changing status
// or appearing, the reason, desired figures and endpoints are written at once, so the `ready`
// transition is never delayed by it.
const DefaultStatusCoalesce = 5 * time.Second

// DefaultBringUpCoalesce is how long the same progress may wait while a cluster comes up for
// the first time without trouble: not yet provisioned, no failure reported. Its pods' progress
// is then written with the `ready` transition, which is written at once, or at most this long
// after it was first seen. On kubelet-like pod timing a bring-up spreads over more than
// DefaultStatusCoalesce, so the shorter wait still cost most clusters a third status write
// (3.1 per cluster at 100 clusters, 3.7 at 1,000, against the 2 a bring-up needs: the first
// status and `ready`). Conditions' reasons and messages (e.g. ImagePullBackOff) and any
// failure keep the short wait: trouble is shown within seconds.
const DefaultBringUpCoalesce = 30 * time.Second

// coalesceWindows are the waits of decideStatusWrite.
type coalesceWindows struct {
	// Steady is the wait of progress changes (0: every change is written at once).
	Steady time.Duration
	// BringUp is the wait of pod progress while a cluster comes up without trouble
	// (bringingUp); never shorter than Steady.
	BringUp time.Duration
}

// statusWrite is what to do with a computed status.
type statusWrite struct {
	// Write: write it now.
	Write bool
	// After, when not writing, is when to look again so a waiting change is written.
	After time.Duration
	// PendingSince is when the waiting change was first seen (zero: nothing waits).
	PendingSince time.Time
}

// decideStatusWrite says whether a status that differs from the stored one in cur is
// written now. Progress changes (countsOnly) wait until their window has passed since such a
// change was first seen (pendingSince); anything else is written at once.
func decideStatusWrite(old, cur rayv1.RayClusterStatus, pendingSince, now time.Time, w coalesceWindows) statusWrite {
	if !statusChanged(old, cur) {
		return statusWrite{}
	}
	if w.Steady <= 0 || !countsOnly(old, cur) {
		return statusWrite{Write: true}
	}
	window := w.Steady
	if w.BringUp > window && bringingUp(old, cur) && podProgressOnly(old, cur) {
		window = w.BringUp
	}
	if pendingSince.IsZero() || pendingSince.After(now) {
		pendingSince = now
	}
	if waited := now.Sub(pendingSince); waited < window {
		return statusWrite{After: window - waited, PendingSince: pendingSince}
	}
	return statusWrite{Write: true}
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

// statusMemo remembers, per cluster, the status raygate last wrote and any change waiting to
// be written. The status patch carries no resourceVersion, so a pass must compute from the
// status last written even when the cache has not caught up with it.
//
// A written status is needed only until the cache shows it, which is the next pass's
// business; but after a cluster's last write there may be no next pass for hours, and at
// 1,000 clusters the copies kept that way were 3 MB of live heap. So a written status older
// than memoKeep is dropped by a sweep that update runs at most every memoSweepEvery. Were a
// cache ever that far behind, the pass would compute from the older status and at worst
// write the same status again.
type statusMemo struct {
	mu        sync.Mutex
	m         map[types.NamespacedName]memoEntry
	lastSweep time.Time
}

const (
	memoKeep       = time.Minute
	memoSweepEvery = 10 * time.Second
)

type memoEntry struct {
	uid types.UID
	// written is the status last written, kept until the cache shows it (or memoKeep).
	written *rayv1.RayClusterStatus
	// writtenAt is when written was written.
	writtenAt time.Time
	// pendingSince is when a waiting count change was first seen.
	pendingSince time.Time
}

// stored returns the status last stored for rc: the one raygate last wrote until the cache
// shows it, then rc's own. (Nobody else writes this status; an edit by hand is replaced by
// the next write either way.)
func (s *statusMemo) stored(k types.NamespacedName, rc *rayv1.RayCluster) rayv1.RayClusterStatus {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.m[k]
	if !ok || e.written == nil {
		return rc.Status
	}
	if e.uid == rc.UID && !equality.Semantic.DeepEqual(*e.written, rc.Status) {
		return *e.written.DeepCopy()
	}
	e.written = nil
	s.put(k, e)
	return rc.Status
}

func (s *statusMemo) pendingSince(k types.NamespacedName, uid types.UID) time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e, ok := s.m[k]; ok && e.uid == uid {
		return e.pendingSince
	}
	return time.Time{}
}

// update records the outcome of a pass at now: the status written (nil: none) and when a
// waiting change was first seen.
func (s *statusMemo) update(k types.NamespacedName, uid types.UID, written *rayv1.RayClusterStatus, pendingSince, now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = map[types.NamespacedName]memoEntry{}
	}
	e := s.m[k]
	if e.uid != uid {
		e = memoEntry{uid: uid}
	}
	if written != nil {
		e.written, e.writtenAt = written.DeepCopy(), now
	}
	e.pendingSince = pendingSince
	s.put(k, e)
	if now.Sub(s.lastSweep) >= memoSweepEvery || now.Before(s.lastSweep) {
		s.sweep(now)
	}
}

// sweep drops written statuses older than memoKeep; the caller holds mu.
func (s *statusMemo) sweep(now time.Time) {
	s.lastSweep = now
	for k, e := range s.m {
		if e.written != nil && now.Sub(e.writtenAt) >= memoKeep {
			e.written = nil
			s.put(k, e)
		}
	}
}

// put stores e, or drops it when it holds nothing; the caller holds mu.
func (s *statusMemo) put(k types.NamespacedName, e memoEntry) {
	if e.written == nil && e.pendingSince.IsZero() {
		delete(s.m, k)
		return
	}
	s.m[k] = e
}

func (s *statusMemo) forget(k types.NamespacedName) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.m, k)
}
