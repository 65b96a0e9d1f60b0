package rayservice

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
)

func TestMessageWait(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	const window = 2 * time.Second
	base := rayv1.RayServiceStatuses{Conditions: []metav1.Condition{
		{Type: string(rayv1.RayServiceReady), Status: metav1.ConditionTrue, Reason: "NonZeroServeEndpoints", Message: "2 serve endpoint(s) ready"},
		{Type: string(rayv1.UpgradeInProgress), Status: metav1.ConditionTrue, Reason: "BothActivePendingClustersExist", Message: "shift traffic"},
		{Type: string(rayv1.UpgradeAction), Status: metav1.ConditionTrue, Reason: "Paused", Message: "paused by pause"},
	}}
	with := func(f func(*rayv1.RayServiceStatuses)) *rayv1.RayServiceStatuses {
		s := base.DeepCopy()
		f(s)
		return s
	}
	upgradeMsg := with(func(s *rayv1.RayServiceStatuses) { s.Conditions[1].Message = "waiting for the route" })
	readyMsg := with(func(s *rayv1.RayServiceStatuses) { s.Conditions[0].Message = "1 serve endpoint(s) ready" })
	stamped := with(func(s *rayv1.RayServiceStatuses) {
		s.Conditions[1].Message = "waiting for the route"
		s.LastUpdateTime = &metav1.Time{Time: t0}
	})
	actionMsg := with(func(s *rayv1.RayServiceStatuses) { s.Conditions[2].Message = "paused by someone else" })
	reason := with(func(s *rayv1.RayServiceStatuses) { s.Conditions[1].Reason = "Other" })
	status := with(func(s *rayv1.RayServiceStatuses) { s.Conditions[1].Status = metav1.ConditionFalse })
	traffic := with(func(s *rayv1.RayServiceStatuses) {
		s.Conditions[1].Message = "shift traffic"
		s.PendingServiceStatus.TrafficRoutedPercent = ptr.To[int32](20)
	})
	rejected := &rayv1.RayServiceStatuses{Conditions: []metav1.Condition{{Type: string(rayv1.RayServiceReady), Status: metav1.ConditionFalse, Reason: rayv1.ValidationFailed, Message: "a"}}}
	rejectedOther := &rayv1.RayServiceStatuses{Conditions: []metav1.Condition{{Type: string(rayv1.RayServiceReady), Status: metav1.ConditionFalse, Reason: rayv1.ValidationFailed, Message: "b"}}}

	for _, tt := range []struct {
		name         string
		old, cur     *rayv1.RayServiceStatuses
		quiet        bool
		pendingSince time.Time
		now          time.Time
		window       time.Duration
		want         time.Duration
	}{
		{"an upgrade message waits the window", &base, upgradeMsg, true, time.Time{}, t0, window, window},
		{"a Ready message waits too", &base, readyMsg, true, time.Time{}, t0, window, window},
		{"lastUpdateTime is not a change of its own", &base, stamped, true, time.Time{}, t0, window, window},
		{"seen again, it waits the rest", &base, upgradeMsg, true, t0, t0.Add(500 * time.Millisecond), window, 1500 * time.Millisecond},
		{"written once the window is over", &base, upgradeMsg, true, t0, t0.Add(window), window, 0},
		{"a pending time in the future restarts the wait", &base, upgradeMsg, true, t0.Add(time.Hour), t0, window, window},
		{"a pass with events writes at once", &base, upgradeMsg, false, time.Time{}, t0, window, 0},
		{"without a window, at once", &base, upgradeMsg, true, time.Time{}, t0, 0, 0},
		{"the message of a record (UpgradeAction) at once", &base, actionMsg, true, time.Time{}, t0, window, 0},
		{"a reason at once", &base, reason, true, time.Time{}, t0, window, 0},
		{"a condition's status at once", &base, status, true, time.Time{}, t0, window, 0},
		{"traffic at once", &base, traffic, true, time.Time{}, t0, window, 0},
		{"a rejection's message at once", rejected, rejectedOther, true, time.Time{}, t0, window, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := messageWait(tt.old, tt.cur, tt.quiet, tt.pendingSince, tt.now, tt.window); got != tt.want {
				t.Errorf("messageWait = %s, want %s", got, tt.want)
			}
		})
	}
}
