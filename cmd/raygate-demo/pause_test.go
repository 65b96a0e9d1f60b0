package main

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
)

func TestPauserScriptsPauseResumePromote(t *testing.T) {
	t0 := time.Unix(1000, 0)
	svc := func(traffic, capacity int32, reason string) (*rayv1.RayService, split) {
		s := &rayv1.RayService{Status: rayv1.RayServiceStatuses{
			ActiveServiceStatus:  rayv1.RayServiceStatus{RayClusterName: "rs-a"},
			PendingServiceStatus: rayv1.RayServiceStatus{RayClusterName: "rs-b", TrafficRoutedPercent: ptr.To(traffic), TargetCapacity: ptr.To(capacity)},
		}}
		if reason != "" {
			s.Status.Conditions = []metav1.Condition{{Type: string(rayv1.UpgradeAction), Status: metav1.ConditionTrue, Reason: reason}}
		}
		return s, splitOf(s, nil)
	}
	p := &pauser{at: 40, hold: 6 * time.Second}
	steps := []struct {
		traffic, capacity int32
		reason            string
		at                time.Duration
		action, note      string // note: a substring
	}{
		{20, 40, "", 0, "", ""},
		{40, 40, "", time.Second, rayv1.UpgradeActionPause, "has 40% of the traffic"},
		{40, 40, "", 2 * time.Second, "", ""},                        // not taken up yet
		{40, 40, rayv1.UpgradePaused, 3 * time.Second, "", "paused"}, // frozen from here
		{40, 40, rayv1.UpgradePaused, 8 * time.Second, "", ""},       // held 5s < 6s
		{40, 40, rayv1.UpgradePaused, 9 * time.Second, rayv1.UpgradeActionResume, "nothing moved for 6s"},
		{40, 60, rayv1.UpgradeResumed, 10 * time.Second, "", ""}, // capacity first
		{60, 60, rayv1.UpgradeResumed, 12 * time.Second, rayv1.UpgradeActionPromote, "40% → 60%"},
		{100, 100, rayv1.UpgradePromoting, 13 * time.Second, "", ""}, // the script is done
	}
	for i, st := range steps {
		s, sp := svc(st.traffic, st.capacity, st.reason)
		action, note, err := p.step(s, sp, t0.Add(st.at))
		if err != nil || action != st.action || (st.note == "") != (note == "") || !strings.Contains(note, st.note) {
			t.Errorf("step %d: got %q %q %v, want %q %q", i, action, note, err, st.action, st.note)
		}
	}
	if p.phase != pausePromoting {
		t.Errorf("phase %d, want promoting", p.phase)
	}
}

func TestPauserFailsWhenAPausedUpgradeMoves(t *testing.T) {
	p := &pauser{at: 40, hold: time.Minute, phase: pauseFrozen, frozenTraffic: 40, frozenCap: 40, pausedAt: time.Unix(1000, 0)}
	s := &rayv1.RayService{Status: rayv1.RayServiceStatuses{
		ActiveServiceStatus:  rayv1.RayServiceStatus{RayClusterName: "rs-a"},
		PendingServiceStatus: rayv1.RayServiceStatus{RayClusterName: "rs-b", TrafficRoutedPercent: ptr.To[int32](60), TargetCapacity: ptr.To[int32](40)},
	}}
	if _, _, err := p.step(s, splitOf(s, nil), time.Unix(1010, 0)); err == nil || !strings.Contains(err.Error(), "moved while paused") {
		t.Errorf("got %v, want an error about moving while paused", err)
	}
}

func TestPauserIsOffWithoutPauseAt(t *testing.T) {
	var nilPauser *pauser
	s := &rayv1.RayService{Status: rayv1.RayServiceStatuses{PendingServiceStatus: rayv1.RayServiceStatus{RayClusterName: "rs-b", TrafficRoutedPercent: ptr.To[int32](90)}}}
	for _, p := range []*pauser{nilPauser, {}} {
		if a, n, err := p.step(s, splitOf(s, nil), time.Now()); a != "" || n != "" || err != nil {
			t.Errorf("%v: got %q %q %v, want nothing", p, a, n, err)
		}
	}
}

func TestHoldFor(t *testing.T) {
	for _, tt := range []struct{ interval, want time.Duration }{
		{0, 3 * rowEvery},
		{time.Second, 3 * rowEvery},
		{30 * time.Second, 30*time.Second + rowEvery},
	} {
		if got := holdFor(tt.interval); got != tt.want {
			t.Errorf("holdFor(%s) = %s, want %s", tt.interval, got, tt.want)
		}
	}
}
