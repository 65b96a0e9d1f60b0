package rayservice

import (
	"slices"
	"testing"
	"time"
)

func TestServeServiceSide(t *testing.T) {
	for _, tt := range []struct {
		name string
		cur  serveSide
		s    split
		want serveSide
		// unready: the applications of this side do not all run.
		unready []serveSide
	}{
		{"upgrade starts: on the active cluster", sideActive, split{ActiveCapacity: 100, PendingCapacity: 0}, sideActive, nil},
		{"capacity raised, no traffic yet", sideActive, split{ActiveCapacity: 100, PendingCapacity: 100}, sideActive, nil},
		{"traffic split: stays", sideActive, split{ActiveCapacity: 100, PendingCapacity: 100, PendingTraffic: 60}, sideActive, nil},
		{"traffic split, small surge: stays", sideActive, split{ActiveCapacity: 40, PendingCapacity: 60, PendingTraffic: 60}, sideActive, nil},
		{"route sends all to pending: moves with it", sideActive, split{ActiveCapacity: 100, PendingCapacity: 100, PendingTraffic: 100}, sidePending, nil},
		{"source shrunk to 0: on pending", sidePending, split{ActiveCapacity: 0, PendingCapacity: 100, PendingTraffic: 100}, sidePending, nil},
		{"rollback, traffic split: stays on pending", sidePending, split{ActiveCapacity: 100, PendingCapacity: 100, PendingTraffic: 40}, sidePending, nil},
		{"rollback, all traffic back: active", sidePending, split{ActiveCapacity: 100, PendingCapacity: 100, PendingTraffic: 0}, sideActive, nil},
		{"never a cluster at capacity 0: leaves the current one", sidePending, split{ActiveCapacity: 100, PendingCapacity: 0, PendingTraffic: 50}, sideActive, nil},
		{"never a cluster at capacity 0: active", sideActive, split{ActiveCapacity: 0, PendingCapacity: 100, PendingTraffic: 50}, sidePending, nil},
		{"all traffic on a pending cluster whose applications fail: stays", sideActive, split{ActiveCapacity: 20, PendingCapacity: 100, PendingTraffic: 100}, sideActive, []serveSide{sidePending}},
		{"current applications unreadable but capacity: stays", sidePending, split{ActiveCapacity: 100, PendingCapacity: 100, PendingTraffic: 50}, sidePending, []serveSide{sidePending}},
		{"nowhere better: stays", sidePending, split{ActiveCapacity: 0, PendingCapacity: 100, PendingTraffic: 100}, sidePending, []serveSide{sidePending}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := serveServiceSide(tt.cur, tt.s, !slices.Contains(tt.unready, sideActive), !slices.Contains(tt.unready, sidePending)); got != tt.want {
				t.Errorf("serveServiceSide(%v, %s) = %v, want %v", tt.cur, tt.s, got, tt.want)
			}
		})
	}
}

func TestHoldLastShrink(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	recent, old := now.Add(-2*time.Second), now.Add(-time.Minute)
	for _, tt := range []struct {
		name      string
		onSource  bool
		migrated  *time.Time
		hold      bool
		wantUntil time.Time
	}{
		{"Service still on the source: wait for it to move", true, &old, true, time.Time{}},
		{"Service moved, last step recent: one interval", false, &recent, true, recent.Add(10 * time.Second)},
		{"Service moved, interval passed", false, &old, false, time.Time{}},
		{"no traffic step recorded", false, nil, false, time.Time{}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			hold, until := holdLastShrink(tt.onSource, tt.migrated, 10*time.Second, now)
			if hold != tt.hold || !until.Equal(tt.wantUntil) {
				t.Errorf("holdLastShrink = %v %s, want %v %s", hold, until, tt.hold, tt.wantUntil)
			}
		})
	}
}
