package raycluster

import (
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
)

func TestDecideStatusWrite(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	const window = 2 * time.Second
	base := rayv1.RayClusterStatus{
		DesiredWorkerReplicas: 3,
		Conditions:            []metav1.Condition{{Type: string(rayv1.HeadPodReady), Status: metav1.ConditionFalse, Reason: "HeadPodNotFound"}},
	}
	with := func(f func(*rayv1.RayClusterStatus)) rayv1.RayClusterStatus {
		s := *base.DeepCopy()
		f(&s)
		return s
	}
	oneReady := with(func(s *rayv1.RayClusterStatus) { s.ReadyWorkerReplicas, s.AvailableWorkerReplicas = 1, 1 })
	headIP := with(func(s *rayv1.RayClusterStatus) { s.Head.PodName, s.Head.PodIP = "h", "127.0.0.5" })
	headlessIP := with(func(s *rayv1.RayClusterStatus) { s.Head.PodIP, s.Head.ServiceIP = "127.0.0.5", "127.0.0.5" })
	serviceIP := with(func(s *rayv1.RayClusterStatus) { s.Head.PodIP, s.Head.ServiceIP = "127.0.0.5", "127.0.0.9" })
	ready := with(func(s *rayv1.RayClusterStatus) { s.State, s.ReadyWorkerReplicas = rayv1.Ready, 3 })
	headReady := with(func(s *rayv1.RayClusterStatus) { s.Conditions[0].Status = metav1.ConditionTrue })
	headAndClusterReady := with(func(s *rayv1.RayClusterStatus) {
		s.Conditions[0].Status, s.State, s.ReadyWorkerReplicas = metav1.ConditionTrue, rayv1.Ready, 3
	})
	headWaiting := with(func(s *rayv1.RayClusterStatus) {
		s.Conditions[0].Reason, s.Conditions[0].Message = "ContainerCreating", "pulling"
	})
	newCondition := with(func(s *rayv1.RayClusterStatus) {
		s.Conditions = append(s.Conditions, metav1.Condition{Type: string(rayv1.RayClusterProvisioned), Status: metav1.ConditionFalse})
	})
	reason := with(func(s *rayv1.RayClusterStatus) { s.Reason = "FailedCreateWorkerPod: quota" })
	desired := with(func(s *rayv1.RayClusterStatus) { s.DesiredWorkerReplicas = 4 })
	endpoints := with(func(s *rayv1.RayClusterStatus) { s.Endpoints = map[string]string{"gcs": "6379"} })
	generation := with(func(s *rayv1.RayClusterStatus) { s.ObservedGeneration = 2 })
	onlyTime := with(func(s *rayv1.RayClusterStatus) { s.LastUpdateTime = &metav1.Time{Time: t0} })

	for _, tt := range []struct {
		name         string
		cur          rayv1.RayClusterStatus
		pendingSince time.Time
		now          time.Time
		window       time.Duration
		want         statusWrite
	}{
		{"unchanged: nothing to do", base, time.Time{}, t0, window, statusWrite{}},
		{"only lastUpdateTime differs: nothing to do", onlyTime, time.Time{}, t0, window, statusWrite{}},
		{"unchanged clears a waiting change", base, t0, t0.Add(time.Second), window, statusWrite{}},
		{"a first count change waits the window", oneReady, time.Time{}, t0, window, statusWrite{After: window, Pending: pendingChange{Since: t0}}},
		{"a count change seen again waits the rest", oneReady, t0, t0.Add(500 * time.Millisecond), window, statusWrite{After: 1500 * time.Millisecond, Pending: pendingChange{Since: t0}}},
		{"a count change is written once the window is over", oneReady, t0, t0.Add(window), window, statusWrite{Write: true}},
		{"the head pod's IP waits too", headIP, time.Time{}, t0, window, statusWrite{After: window, Pending: pendingChange{Since: t0}}},
		{"so does a headless Service's IP, the pod's", headlessIP, time.Time{}, t0, window, statusWrite{After: window, Pending: pendingChange{Since: t0}}},
		{"a Service's own IP is written at once", serviceIP, time.Time{}, t0, window, statusWrite{Write: true}},
		{"a pending time in the future (clock step) restarts the wait", oneReady, t0.Add(time.Hour), t0, window, statusWrite{After: window, Pending: pendingChange{Since: t0}}},
		{"without a window a count change is written at once", oneReady, time.Time{}, t0, 0, statusWrite{Write: true}},
		{"the ready transition is written at once", ready, time.Time{}, t0, window, statusWrite{Write: true}},
		{"the ready transition does not wait for a pending count change", ready, t0, t0.Add(time.Millisecond), window, statusWrite{Write: true}},
		{"the head turning ready waits like a worker", headReady, time.Time{}, t0, window, statusWrite{After: window, Pending: pendingChange{Since: t0}}},
		{"the head turning ready is written once the window is over", headReady, t0, t0.Add(window), window, statusWrite{Write: true}},
		{"the head turning ready with the cluster ready is written at once", headAndClusterReady, time.Time{}, t0, window, statusWrite{Write: true}},
		{"a new condition is written at once", newCondition, time.Time{}, t0, window, statusWrite{Write: true}},
		{"a condition's reason while its status stays waits", headWaiting, time.Time{}, t0, window, statusWrite{After: window, Pending: pendingChange{Since: t0}}},
		{"a reason is written at once", reason, time.Time{}, t0, window, statusWrite{Write: true}},
		{"desired figures are written at once", desired, time.Time{}, t0, window, statusWrite{Write: true}},
		{"endpoints are written at once", endpoints, time.Time{}, t0, window, statusWrite{Write: true}},
		{"observedGeneration is written at once", generation, time.Time{}, t0, window, statusWrite{Write: true}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := decideStatusWrite(base, tt.cur, pendingChange{Since: tt.pendingSince}, time.Time{}, tt.now, coalesceWindows{Steady: tt.window}); got != tt.want {
				t.Errorf("decideStatusWrite = %+v, want %+v", got, tt.want)
			}
		})
	}
}

// Only the head turning ready is progress: any other transition, and the head turning
// unready, is written at once.
func TestDecideStatusWriteOtherTransitions(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	status := func(head, provisioned metav1.ConditionStatus) rayv1.RayClusterStatus {
		return rayv1.RayClusterStatus{Conditions: []metav1.Condition{
			{Type: string(rayv1.HeadPodReady), Status: head, Reason: "r"},
			{Type: string(rayv1.RayClusterProvisioned), Status: provisioned, Reason: "r"},
		}}
	}
	f, tr := metav1.ConditionFalse, metav1.ConditionTrue
	for _, tt := range []struct {
		name     string
		old, cur rayv1.RayClusterStatus
		wait     bool
	}{
		{"head ready", status(f, f), status(tr, f), true},
		{"head unready", status(tr, f), status(f, f), false},
		{"provisioned", status(tr, f), status(tr, tr), false},
		{"head ready and provisioned", status(f, f), status(tr, tr), false},
	} {
		got := decideStatusWrite(tt.old, tt.cur, pendingChange{}, time.Time{}, t0, coalesceWindows{Steady: 5 * time.Second})
		if tt.wait != !got.Write {
			t.Errorf("%s: decideStatusWrite = %+v, want waiting %v", tt.name, got, tt.wait)
		}
	}
}

// A first bring-up without trouble waits longer for pod progress; trouble, a provisioned
// cluster and anything but pod progress keep the short wait.
func TestDecideStatusWriteBringUp(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	w := coalesceWindows{Steady: 5 * time.Second, BringUp: 30 * time.Second}
	f, tr := metav1.ConditionFalse, metav1.ConditionTrue
	status := func(head, provisioned metav1.ConditionStatus, mutate ...func(*rayv1.RayClusterStatus)) rayv1.RayClusterStatus {
		s := rayv1.RayClusterStatus{DesiredWorkerReplicas: 3, Conditions: []metav1.Condition{
			{Type: string(rayv1.HeadPodReady), Status: head, Reason: "Unknown"},
			{Type: string(rayv1.RayClusterProvisioned), Status: provisioned, Reason: "RayClusterPodsProvisioning"},
		}}
		if head == tr {
			s.Conditions[0].Reason = rayv1.HeadPodRunningAndReady
		}
		for _, m := range mutate {
			m(&s)
		}
		return s
	}
	workers := func(n int32) func(*rayv1.RayClusterStatus) {
		return func(s *rayv1.RayClusterStatus) { s.ReadyWorkerReplicas, s.AvailableWorkerReplicas = n, n }
	}
	headIP := func(s *rayv1.RayClusterStatus) {
		s.Head.PodName, s.Head.PodIP, s.Head.ServiceIP = "h", "127.0.0.5", "127.0.0.5"
	}
	failing := func(s *rayv1.RayClusterStatus) { s.Reason = "FailedCreateWorkerPod: quota" }
	replicaFailure := func(s *rayv1.RayClusterStatus) {
		s.Conditions = append(s.Conditions, metav1.Condition{Type: string(rayv1.RayClusterReplicaFailure), Status: tr, Reason: "FailedCreateWorkerPod"})
	}
	pulling := func(s *rayv1.RayClusterStatus) {
		s.Conditions[0].Reason, s.Conditions[0].Message = "ImagePullBackOff", "no-such-tag"
	}
	ready := func(s *rayv1.RayClusterStatus) { s.State = rayv1.Ready }
	creating := func(s *rayv1.RayClusterStatus) {
		s.Conditions[0].Reason, s.Conditions[0].Message = "ContainerCreating", ""
	}
	initializing := func(s *rayv1.RayClusterStatus) {
		s.Conditions[0].Reason, s.Conditions[0].Message = "PodInitializing", "containers with unready status: [ray-head]"
	}
	for _, tt := range []struct {
		name         string
		old, cur     rayv1.RayClusterStatus
		pendingSince time.Time
		now          time.Time
		want         statusWrite
	}{
		{"the head turning ready with its IP waits the bring-up window", status(f, f), status(tr, f, headIP), time.Time{}, t0,
			statusWrite{After: w.BringUp, Pending: pendingChange{Since: t0}}},
		{"workers turning ready wait the bring-up window", status(tr, f, headIP), status(tr, f, headIP, workers(2)), t0, t0.Add(10 * time.Second),
			statusWrite{After: 20 * time.Second, Pending: pendingChange{Since: t0}}},
		{"and are written when it is over", status(tr, f, headIP), status(tr, f, headIP, workers(2)), t0, t0.Add(w.BringUp), statusWrite{Write: true}},
		{"provisioned is written at once, with the progress that waited", status(f, f), status(tr, tr, headIP, workers(3), ready), t0, t0.Add(time.Second),
			statusWrite{Write: true}},
		{"a provisioned cluster's counts keep the short wait", status(tr, tr, headIP, workers(3), ready), status(tr, tr, headIP, workers(2), ready), time.Time{}, t0,
			statusWrite{After: w.Steady, Pending: pendingChange{Since: t0}}},
		{"so do they once ready without the condition", status(tr, "", headIP, workers(3), ready), status(tr, "", headIP, workers(2), ready), time.Time{}, t0,
			statusWrite{After: w.Steady, Pending: pendingChange{Since: t0}}},
		{"a reported failure keeps the short wait", status(f, f, failing), status(tr, f, failing, headIP), time.Time{}, t0,
			statusWrite{After: w.Steady, Pending: pendingChange{Since: t0}}},
		{"so does a replica failure", status(f, f, replicaFailure), status(tr, f, replicaFailure, headIP), time.Time{}, t0,
			statusWrite{After: w.Steady, Pending: pendingChange{Since: t0}}},
		{"the head's start-up steps wait the bring-up window", status(f, f), status(f, f, headIP, creating), time.Time{}, t0,
			statusWrite{After: w.BringUp, Pending: pendingChange{Since: t0}}},
		{"from one step to the next too", status(f, f, headIP, creating), status(f, f, headIP, initializing), time.Time{}, t0,
			statusWrite{After: w.BringUp, Pending: pendingChange{Since: t0}}},
		{"a start-up step to trouble keeps the short wait", status(f, f, headIP, creating), status(f, f, headIP, pulling), time.Time{}, t0,
			statusWrite{After: w.Steady, Pending: pendingChange{Since: t0}}},
		{"a condition's new reason keeps the short wait: trouble is shown within seconds", status(f, f), status(f, f, pulling), time.Time{}, t0,
			statusWrite{After: w.Steady, Pending: pendingChange{Since: t0}}},
		{"progress waiting since long ago is written by the short wait once a reason joins it", status(f, f), status(tr, f, headIP, workers(1), func(s *rayv1.RayClusterStatus) {
			s.Conditions[1].Message = "one worker pending"
		}), t0, t0.Add(w.Steady), statusWrite{Write: true}},
		{"no steady window: written at once", status(f, f), status(tr, f, headIP), time.Time{}, t0, statusWrite{Write: true}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			win := w
			if strings.HasPrefix(tt.name, "no steady window") {
				win.Steady = 0
			}
			// Moved and Progress are the debounce's own (TestBringUpWaitsWhilePodsMove).
			got := decideStatusWrite(tt.old, tt.cur, pendingChange{Since: tt.pendingSince}, time.Time{}, tt.now, win)
			if got.Pending.Since != tt.want.Pending.Since {
				t.Errorf("decideStatusWrite waits since %v, want %v", got.Pending.Since, tt.want.Pending.Since)
			}
			if got.Write != tt.want.Write || got.After != tt.want.After {
				t.Errorf("decideStatusWrite = %+v, want %+v", got, tt.want)
			}
		})
	}
}

// The comparisons change copies: the statuses they are given (the cached object's, the one
// just computed) stay as they were.
func TestStatusComparisonsLeaveTheirInputsAlone(t *testing.T) {
	now := metav1.Now()
	mk := func(reason string, ready int32) rayv1.RayClusterStatus {
		return rayv1.RayClusterStatus{ReadyWorkerReplicas: ready, LastUpdateTime: &now,
			Head:       rayv1.HeadInfo{PodName: "h", PodIP: "127.0.0.5", ServiceIP: "127.0.0.5"},
			Conditions: []metav1.Condition{{Type: string(rayv1.HeadPodReady), Status: metav1.ConditionFalse, Reason: reason, Message: "m", LastTransitionTime: now}}}
	}
	old, cur := mk("ContainerCreating", 1), mk("PodInitializing", 2)
	oldCopy, curCopy := old.DeepCopy(), cur.DeepCopy()
	if !podProgressOnly(old, cur) || !countsOnly(mk("x", 1), mk("x", 2)) || !statusChanged(old, cur) {
		t.Fatal("comparison results changed")
	}
	if !equality.Semantic.DeepEqual(&old, oldCopy) || !equality.Semantic.DeepEqual(&cur, curCopy) {
		t.Errorf("a comparison changed its inputs:\nold %+v\ncur %+v", old, cur)
	}
}

// During a first bring-up, pod progress waits while the pods keep moving (ready comes next,
// written at once), is written once they have not moved for the bring-up window (a stall
// shows), and never waits longer than the bound from its first step.
func TestBringUpWaitsWhilePodsMove(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	w := coalesceWindows{Steady: 5 * time.Second, BringUp: 30 * time.Second, BringUpMax: 2 * time.Minute}
	old := rayv1.RayClusterStatus{DesiredWorkerReplicas: 3, Conditions: []metav1.Condition{
		{Type: string(rayv1.HeadPodReady), Status: metav1.ConditionFalse, Reason: rayv1.UnknownReason},
		{Type: string(rayv1.RayClusterProvisioned), Status: metav1.ConditionFalse, Reason: "RayClusterPodsProvisioning"},
	}}
	step := func(mutate func(*rayv1.RayClusterStatus)) rayv1.RayClusterStatus {
		s := *old.DeepCopy()
		mutate(&s)
		return s
	}
	headIP := step(func(s *rayv1.RayClusterStatus) { s.Head.PodName, s.Head.PodIP = "h", "127.0.0.5" })
	headReady := step(func(s *rayv1.RayClusterStatus) {
		s.Head.PodName, s.Head.PodIP = "h", "127.0.0.5"
		s.Conditions[0].Status, s.Conditions[0].Reason = metav1.ConditionTrue, rayv1.HeadPodRunningAndReady
	})
	workers := func(n int32) rayv1.RayClusterStatus {
		s := *headReady.DeepCopy()
		s.ReadyWorkerReplicas, s.AvailableWorkerReplicas = n, n
		return s
	}
	type pass struct {
		at        time.Duration
		cur       rayv1.RayClusterStatus
		write     bool
		wantAfter time.Duration
	}
	for _, tt := range []struct {
		name    string
		created time.Time // zero: unknown, the least wait
		passes  []pass
	}{
		{"pods that keep moving wait past the bring-up window", time.Time{}, []pass{
			{0, headIP, false, 30 * time.Second},
			{20 * time.Second, headReady, false, 30 * time.Second},
			{30 * time.Second, headReady, false, 20 * time.Second}, // a wait counted from the first step wrote here
			{45 * time.Second, workers(1), false, 30 * time.Second},
			{70 * time.Second, workers(2), false, 30 * time.Second},
		}},
		{"pods that stop moving are written a window after their last step", time.Time{}, []pass{
			{0, headIP, false, 30 * time.Second},
			{20 * time.Second, headReady, false, 30 * time.Second},
			{45 * time.Second, headReady, false, 5 * time.Second},
			{50 * time.Second, headReady, true, 0},
		}},
		{"pods that never stop moving are written at the bound", time.Time{}, []pass{
			{0, headIP, false, 30 * time.Second},
			{25 * time.Second, headReady, false, 30 * time.Second},
			{50 * time.Second, workers(1), false, 30 * time.Second},
			{75 * time.Second, workers(2), false, 30 * time.Second},
			{100 * time.Second, workers(1), false, 20 * time.Second},
			{120 * time.Second, workers(2), true, 0},
		}},
		{"a last step in the future (clock step) restarts the quiet wait", time.Time{}, []pass{
			{0, headIP, false, 30 * time.Second},
			{-10 * time.Second, headIP, false, 30 * time.Second},
		}},
		{"a quick first step keeps the least wait", t0.Add(-2 * time.Second), []pass{
			{0, headIP, false, 30 * time.Second},
			{30 * time.Second, headIP, true, 0},
		}},
		{"on a slow cluster a pause as long as the wait for the first step is no stall", t0.Add(-50 * time.Second), []pass{
			{0, headIP, false, 50 * time.Second},
			{20 * time.Second, headReady, false, 50 * time.Second},
			{60 * time.Second, headReady, false, 10 * time.Second}, // the least wait alone wrote here
			{70 * time.Second, headReady, true, 0},
		}},
		{"the pace never stretches the wait past the bound", t0.Add(-5 * time.Minute), []pass{
			{0, headIP, false, 2 * time.Minute},
			{60 * time.Second, headReady, false, time.Minute},
			{2 * time.Minute, headReady, true, 0},
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var pending pendingChange
			for _, p := range tt.passes {
				got := decideStatusWrite(old, p.cur, pending, tt.created, t0.Add(p.at), w)
				if got.Write != p.write || got.After != p.wantAfter {
					t.Fatalf("at %v: decideStatusWrite = write %v after %v, want write %v after %v", p.at, got.Write, got.After, p.write, p.wantAfter)
				}
				if !p.write && !got.Pending.Since.Equal(t0) && p.at >= 0 {
					t.Fatalf("at %v: waiting since %v, want the first step's %v", p.at, got.Pending.Since, t0)
				}
				pending = got.Pending
			}
		})
	}
}

func TestBringUpQuiet(t *testing.T) {
	created := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	least, most := 30*time.Second, 2*time.Minute
	for _, tt := range []struct {
		name      string
		created   time.Time
		firstStep time.Duration // after created
		want      time.Duration
	}{
		{"a quick first step: the least wait", created, 3 * time.Second, least},
		{"a slow first step: as long as it took", created, 50 * time.Second, 50 * time.Second},
		{"a very slow first step: the most", created, 10 * time.Minute, most},
		{"creation unknown: the least wait", time.Time{}, 50 * time.Second, least},
		{"a first step before creation (clock step): the least wait", created, -time.Minute, least},
	} {
		if got := bringUpQuiet(tt.created, created.Add(tt.firstStep), least, most); got != tt.want {
			t.Errorf("%s: bringUpQuiet = %v, want %v", tt.name, got, tt.want)
		}
	}
}
