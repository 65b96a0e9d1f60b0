package plan

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/utils/ptr"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
)

var t0 = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

// walk drives nextStep like the controller does (a wait advances the clock to its due
// time) and returns the timeline, one line per change: seconds since t0, the step, and
// capacity A(ctive)/P(ending) and traffic A/P afterwards.
func walk(t *testing.T, s split, p pacing, dir direction) []string {
	t.Helper()
	now := t0
	var out []string
	for range 1000 {
		st := nextStep(s, p, dir, now)
		switch st.Kind {
		case stepWait:
			if !st.Until.After(now) {
				t.Fatalf("wait until %v is not in the future (now %v)", st.Until, now)
			}
			now = st.Until
			continue
		case stepComplete:
			return append(out, fmt.Sprintf("%3.0fs complete", now.Sub(t0).Seconds()))
		}
		s = st.Next
		out = append(out, fmt.Sprintf("%3.0fs %-22s cap A%d/P%d traffic A%d/P%d", now.Sub(t0).Seconds(), st.Kind, s.ActiveCapacity, s.PendingCapacity, s.ActiveTraffic(), s.PendingTraffic))
	}
	t.Fatal("no completion after 1000 steps")
	return nil
}

func incremental(maxSurge, step, interval int32) *rayv1.RayServiceSpec {
	return &rayv1.RayServiceSpec{UpgradeStrategy: &rayv1.RayServiceUpgradeStrategy{
		Type: ptr.To(rayv1.NewClusterWithIncrementalUpgrade),
		ClusterUpgradeOptions: &rayv1.ClusterUpgradeOptions{
			MaxSurgePercent: ptr.To(maxSurge), StepSizePercent: ptr.To(step), IntervalSeconds: ptr.To(interval), GatewayClassName: "istio",
		},
	}}
}

var start = split{ActiveCapacity: 100, PendingCapacity: 0, PendingTraffic: 0}

func TestTimelineFastMigration(t *testing.T) {
	// maxSurge 100, step 100, interval 0: blue/green through the Gateway. The pending
	// cluster takes all capacity, then all traffic, then the active one gives up its
	// capacity, each its own step.
	got := walk(t, start, pacingOf(incremental(100, 100, 0)), towardPending)
	want := []string{
		"  0s grow target capacity   cap A100/P100 traffic A100/P0",
		"  0s shift traffic          cap A100/P100 traffic A0/P100",
		"  0s shrink source capacity cap A0/P100 traffic A0/P100",
		"  0s complete",
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Fatalf("timeline (-want +got):\n%s", d)
	}
}

func TestTimelineConservative(t *testing.T) {
	// maxSurgePercent 120 (above validation's 100; clamped), step 20, interval 30 s: the
	// pending cluster's capacity goes to 100% at once, traffic then moves 20% every 30 s (the
	// first step as soon as the pending cluster is ready), and the active cluster drops to 0%
	// once all traffic moved.
	got := walk(t, start, pacingOf(incremental(120, 20, 30)), towardPending)
	want := []string{
		"  0s grow target capacity   cap A100/P100 traffic A100/P0",
		"  0s shift traffic          cap A100/P100 traffic A80/P20",
		" 30s shift traffic          cap A100/P100 traffic A60/P40",
		" 60s shift traffic          cap A100/P100 traffic A40/P60",
		" 90s shift traffic          cap A100/P100 traffic A20/P80",
		"120s shift traffic          cap A100/P100 traffic A0/P100",
		"120s shrink source capacity cap A0/P100 traffic A0/P100",
		"120s complete",
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Fatalf("timeline (-want +got):\n%s", d)
	}
}

func TestTimelineDocumentedExample(t *testing.T) {
	// The example of docs/rayservice.md: maxSurgePercent 20, stepSizePercent 5,
	// intervalSeconds 10.
	// Cycle: pending capacity +20 → traffic +5 every 10 s until it reaches the pending
	// capacity → active capacity -20. Total capacity never exceeds 120%.
	got := walk(t, start, pacingOf(incremental(20, 5, 10)), towardPending)
	var want []string
	at, first := 0, true
	for cycle := int32(1); cycle <= 5; cycle++ {
		pc := 20 * cycle
		want = append(want, fmt.Sprintf("%3ds grow target capacity   cap A%d/P%d traffic A%d/P%d", at, 100-pc+20, pc, 100-pc+20, pc-20))
		for tr := pc - 15; tr <= pc; tr += 5 {
			if !first {
				at += 10 // one traffic step per interval, across cycles too
			}
			first = false
			want = append(want, fmt.Sprintf("%3ds shift traffic          cap A%d/P%d traffic A%d/P%d", at, 100-pc+20, pc, 100-tr, tr))
		}
		want = append(want, fmt.Sprintf("%3ds shrink source capacity cap A%d/P%d traffic A%d/P%d", at, 100-pc, pc, 100-pc, pc))
	}
	want = append(want, "190s complete")
	if d := cmp.Diff(want, got); d != "" {
		t.Fatalf("timeline (-want +got):\n%s", d)
	}
	// Spelled out, the start of the cycle (grow, shift, shrink):
	for i, line := range []string{
		"  0s grow target capacity   cap A100/P20 traffic A100/P0",
		"  0s shift traffic          cap A100/P20 traffic A95/P5",
		" 10s shift traffic          cap A100/P20 traffic A90/P10",
		" 20s shift traffic          cap A100/P20 traffic A85/P15",
		" 30s shift traffic          cap A100/P20 traffic A80/P20",
		" 30s shrink source capacity cap A80/P20 traffic A80/P20",
		" 30s grow target capacity   cap A80/P40 traffic A80/P20",
		" 40s shift traffic          cap A80/P40 traffic A75/P25",
	} {
		if got[i] != line {
			t.Errorf("line %d = %q, want %q", i, got[i], line)
		}
	}
	// 20 traffic steps of 5%, the first immediately: 19 intervals in all.
	if last := got[len(got)-1]; last != "190s complete" {
		t.Errorf("completion %q, want at 190s", last)
	}
}

func TestTimelineRollback(t *testing.T) {
	// Mid-upgrade with the same pacing: pending at 40% capacity, traffic catching up at
	// 30%, active at 80%, the last traffic step 4 s ago. The spec goes back: the same walk in
	// the other direction, paced by the same interval.
	mid := split{ActiveCapacity: 80, PendingCapacity: 40, PendingTraffic: 30, LastMigrated: ptr.To(t0.Add(-4 * time.Second))}
	got := walk(t, mid, pacingOf(incremental(20, 5, 10)), towardActive)
	want := []string{
		"  6s shift traffic          cap A80/P40 traffic A75/P25",
		" 16s shift traffic          cap A80/P40 traffic A80/P20",
		" 16s shrink source capacity cap A80/P20 traffic A80/P20",
		" 16s grow target capacity   cap A100/P20 traffic A80/P20",
		" 26s shift traffic          cap A100/P20 traffic A85/P15",
		" 36s shift traffic          cap A100/P20 traffic A90/P10",
		" 46s shift traffic          cap A100/P20 traffic A95/P5",
		" 56s shift traffic          cap A100/P20 traffic A100/P0",
		" 56s shrink source capacity cap A100/P0 traffic A100/P0",
		" 56s complete",
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Fatalf("timeline (-want +got):\n%s", d)
	}
}

func TestRollbackBeforeAnyTrafficIsImmediate(t *testing.T) {
	// The pending cluster got capacity but no traffic yet: nothing to walk back but its
	// capacity.
	got := walk(t, split{ActiveCapacity: 100, PendingCapacity: 20}, pacingOf(incremental(20, 5, 10)), towardActive)
	want := []string{"  0s shrink source capacity cap A100/P0 traffic A100/P0", "  0s complete"}
	if d := cmp.Diff(want, got); d != "" {
		t.Fatalf("timeline (-want +got):\n%s", d)
	}
}

func TestCompletion(t *testing.T) {
	p := pacingOf(incremental(20, 5, 10))
	cases := []struct {
		name string
		s    split
		dir  direction
		want stepKind
	}{
		{"upgrade done", split{ActiveCapacity: 0, PendingCapacity: 100, PendingTraffic: 100}, towardPending, stepComplete},
		{"all traffic but active still has capacity", split{ActiveCapacity: 20, PendingCapacity: 100, PendingTraffic: 100}, towardPending, stepShrinkSource},
		{"capacity moved but traffic not", split{ActiveCapacity: 0, PendingCapacity: 100, PendingTraffic: 95}, towardPending, stepTraffic},
		{"rollback done", split{ActiveCapacity: 100, PendingCapacity: 0, PendingTraffic: 0}, towardActive, stepComplete},
		{"rollback: pending keeps capacity", split{ActiveCapacity: 100, PendingCapacity: 5, PendingTraffic: 0}, towardActive, stepShrinkSource},
		{"not started", start, towardPending, stepGrowTarget},
	}
	for _, tc := range cases {
		if got := nextStep(tc.s, p, tc.dir, t0).Kind; got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestTrafficWaitsForTheInterval(t *testing.T) {
	p := pacingOf(incremental(20, 5, 10))
	s := split{ActiveCapacity: 100, PendingCapacity: 20, PendingTraffic: 5, LastMigrated: ptr.To(t0)}
	st := nextStep(s, p, towardPending, t0.Add(9*time.Second))
	if st.Kind != stepWait || !st.Until.Equal(t0.Add(10*time.Second)) || st.Next != s {
		t.Fatalf("9 s after a step: %+v, want a wait until +10 s with the split unchanged", st)
	}
	st = nextStep(s, p, towardPending, t0.Add(10*time.Second))
	if st.Kind != stepTraffic || st.Next.PendingTraffic != 10 || !st.Next.LastMigrated.Equal(t0.Add(10*time.Second)) {
		t.Fatalf("10 s after a step: %+v", st)
	}
}

// TestInvariantsHoldOnRandomWalks checks, over random pacings, start states and direction
// changes, the upgrade's promises: traffic splits sum to 100, no cluster gets more traffic
// than its capacity, total capacity stays within 100% + maxSurge, and every walk finishes.
func TestInvariantsHoldOnRandomWalks(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 2000 {
		surge := 1 + rng.Int32N(100)
		p := pacing{MaxSurge: surge, Step: 1 + rng.Int32N(surge), Interval: time.Duration(rng.IntN(3)) * time.Second}
		s, dir, now := start, towardPending, t0
		flips := rng.IntN(3)
		for n := 0; ; n++ {
			if n > 5000 {
				t.Fatalf("walk %d (%+v) did not finish", i, p)
			}
			if flips > 0 && rng.IntN(20) == 0 {
				dir, flips = 1-dir, flips-1
			}
			st := nextStep(s, p, dir, now)
			if st.Kind == stepWait {
				now = st.Until
				continue
			}
			if st.Kind == stepComplete {
				break
			}
			s = st.Next
			var problems []string
			if s.PendingTraffic > s.PendingCapacity {
				problems = append(problems, "pending traffic above its capacity")
			}
			if s.ActiveTraffic() > s.ActiveCapacity {
				problems = append(problems, "active traffic above its capacity")
			}
			if s.ActiveCapacity+s.PendingCapacity > 100+p.MaxSurge {
				problems = append(problems, "total capacity above 100% + maxSurge")
			}
			if s.PendingTraffic < 0 || s.PendingTraffic > 100 || s.ActiveCapacity < 0 || s.PendingCapacity < 0 || s.ActiveCapacity > 100 || s.PendingCapacity > 100 {
				problems = append(problems, "out of range")
			}
			if len(problems) > 0 {
				t.Fatalf("walk %d (%+v) after %v: %s: %s", i, p, st.Kind, s, strings.Join(problems, ", "))
			}
		}
	}
}

func TestPacingDefaultsAndClamps(t *testing.T) {
	cases := []struct {
		name string
		spec *rayv1.RayServiceSpec
		want pacing
	}{
		{"guide", incremental(20, 5, 10), pacing{MaxSurge: 20, Step: 5, Interval: 10 * time.Second}},
		{"no options", &rayv1.RayServiceSpec{}, pacing{MaxSurge: 100, Step: 100}},
		{"zero step would stall", incremental(20, 0, 10), pacing{MaxSurge: 20, Step: 1, Interval: 10 * time.Second}},
		{"over 100", incremental(120, 150, -5), pacing{MaxSurge: 100, Step: 100}},
	}
	for _, tc := range cases {
		if got := pacingOf(tc.spec); got != tc.want {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
	}
}

func TestMovedLate(t *testing.T) {
	rec := split{LastMigrated: ptr.To(t0)}
	for d, want := range map[time.Duration]bool{50 * time.Millisecond: false, 900 * time.Millisecond: false, 1500 * time.Millisecond: true, 30 * time.Second: true} {
		if got := movedLate(rec, t0.Add(d)); got != want {
			t.Errorf("applied %v after the record: late = %v, want %v", d, got, want)
		}
	}
	if movedLate(split{}, t0) {
		t.Error("no recorded step cannot be late")
	}
}

// A recorded step whose next move is a wait for the interval already says when the next
// traffic step is due, in the words of the passes that wait, so they change nothing to write.
func TestStepNoteSaysWhatTheNextPassesWaitFor(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	migrated := now.Add(-time.Second)
	p := pacing{MaxSurge: 20, Step: 20, Interval: 4 * time.Second}
	cases := []struct {
		name string
		kind stepKind
		n    split
		dir  direction
		want string
	}{
		{"grow, then wait for the interval", stepGrowTarget, split{ActiveCapacity: 80, PendingCapacity: 40, PendingTraffic: 20, LastMigrated: &migrated}, towardPending, "next traffic step at 2026-01-01T12:00:03Z"},
		{"grow with the interval over: the traffic step comes next", stepGrowTarget, split{ActiveCapacity: 80, PendingCapacity: 40, PendingTraffic: 20, LastMigrated: ptr.To(now.Add(-5 * time.Second))}, towardPending, "grow target capacity"},
		{"shift: the source shrinks next", stepTraffic, split{ActiveCapacity: 100, PendingCapacity: 20, PendingTraffic: 20, LastMigrated: &now}, towardPending, "shift traffic"},
		{"first grow, no traffic moved yet", stepGrowTarget, split{ActiveCapacity: 100, PendingCapacity: 20}, towardPending, "grow target capacity"},
		{"rollback grow, then wait", stepGrowTarget, split{ActiveCapacity: 80, PendingCapacity: 40, PendingTraffic: 40, LastMigrated: &migrated}, towardActive, "next traffic step at 2026-01-01T12:00:03Z"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := stepNote(c.kind, c.n, p, c.dir, now); got != c.want {
				t.Errorf("stepNote = %q, want %q", got, c.want)
			}
		})
	}
}
