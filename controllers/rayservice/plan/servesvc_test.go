package plan

import (
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/validation"
	"github.com/raygate/raygate/test/builders"
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
		interval  time.Duration
		hold      bool
		wantUntil time.Time
	}{
		{"Service still on the source: wait for it to move", true, &old, 10 * time.Second, true, time.Time{}},
		{"Service moved, last step recent: one interval", false, &recent, 10 * time.Second, true, recent.Add(10 * time.Second)},
		{"Service moved, interval passed", false, &old, 10 * time.Second, false, time.Time{}},
		{"no traffic step recorded", false, nil, 10 * time.Second, false, time.Time{}},
		// A gateway may apply the last step up to ~2 s late (Traefik's throttle): a 1 s
		// interval still holds the last replicas minLastShrinkHold.
		{"interval 1s, last step 2s ago: held to 3s", false, &recent, time.Second, true, recent.Add(minLastShrinkHold)},
		{"interval 1s, last step 3s ago: shrink", false, ptr.To(now.Add(-minLastShrinkHold)), time.Second, false, time.Time{}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			hold, until := holdLastShrink(tt.onSource, tt.migrated, tt.interval, now)
			if hold != tt.hold || !until.Equal(tt.wantUntil) {
				t.Errorf("holdLastShrink = %v %s, want %v %s", hold, until, tt.hold, tt.wantUntil)
			}
		})
	}
}

func TestPromotable(t *testing.T) {
	inc := Admit(incrementalService(20, 5, 10), allGates, validation.Limits{}, "v1")
	nc := Admit(builders.RayService("svc", "ns").Obj(), allGates, validation.Limits{}, "v1")
	view := &ClusterView{Cluster: &rayv1.RayCluster{ObjectMeta: metav1.ObjectMeta{Name: "a"}}}
	roleSplit := func(activeCap, pendingCap, pendingTraffic int32, rollback string) roles {
		return roles{
			Active:   slot{View: view, Status: rayv1.RayServiceStatus{TargetCapacity: ptr.To(activeCap), TrafficRoutedPercent: ptr.To(100 - pendingTraffic)}},
			Pending:  slot{View: view, Status: rayv1.RayServiceStatus{TargetCapacity: ptr.To(pendingCap), TrafficRoutedPercent: ptr.To(pendingTraffic)}},
			Rollback: rollback,
		}
	}
	for _, tt := range []struct {
		name    string
		want    *Desired
		r       roles
		settled bool
		ok      bool
	}{
		{"blue/green: at once", nc, roleSplit(100, 0, 0, ""), false, true},
		{"incremental: serve Service moved, source still has capacity", inc, roleSplit(20, 100, 100, ""), true, false},
		{"incremental: complete and settled", inc, roleSplit(0, 100, 100, ""), true, true},
		{"incremental: complete, route not settled", inc, roleSplit(0, 100, 100, ""), false, false},
		{"incremental: rolling back", inc, roleSplit(0, 100, 100, "the spec went back"), true, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			in := inputs{obs: &Observed{GatewayAPI: true}, want: tt.want, now: t0}
			if got := promotable(in, tt.r, trafficState{Settled: tt.settled}); got != tt.ok {
				t.Errorf("promotable = %v, want %v", got, tt.ok)
			}
		})
	}
}
