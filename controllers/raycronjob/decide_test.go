package raycronjob

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/raycronjob"
)

func at(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t
}

func ptrTime(s string) *time.Time { t := at(s); return &t }

func schedule(t *testing.T, spec string, tz string) Input {
	t.Helper()
	s := rayv1.RayCronJobSpec{Schedule: spec}
	if tz != "" {
		s.TimeZone = &tz
	}
	sched, err := raycronjob.Parse(&s, time.UTC)
	if err != nil {
		t.Fatal(err)
	}
	return Input{Schedule: sched}
}

// TestDecide runs the decision on a fake clock: each case is one pass at Now.
func TestDecide(t *testing.T) {
	cases := map[string]struct {
		spec, tz      string
		created       string
		lastScheduled *time.Time
		suspended     bool
		now           string
		want          Decision
	}{
		"created between two runs: wait for the first": {
			spec: "0 * * * *", created: "2026-01-01T10:15:00Z", now: "2026-01-01T10:20:00Z",
			want: Decision{Next: at("2026-01-01T11:00:00Z")},
		},
		"the first run is due": {
			spec: "0 * * * *", created: "2026-01-01T10:15:00Z", now: "2026-01-01T11:00:00Z",
			want: Decision{Run: at("2026-01-01T11:00:00Z"), Next: at("2026-01-01T12:00:00Z")},
		},
		"a run already created: wait for the next": {
			spec: "0 * * * *", created: "2026-01-01T10:15:00Z", lastScheduled: ptrTime("2026-01-01T11:00:00Z"), now: "2026-01-01T11:00:05Z",
			want: Decision{Next: at("2026-01-01T12:00:00Z")},
		},
		"operator down for three runs: the oldest first, the next already due": {
			spec: "0 * * * *", created: "2026-01-01T10:15:00Z", lastScheduled: ptrTime("2026-01-01T11:00:00Z"), now: "2026-01-01T14:30:00Z",
			want: Decision{Run: at("2026-01-01T12:00:00Z"), Next: at("2026-01-01T13:00:00Z")},
		},
		"the last missed run": {
			spec: "0 * * * *", created: "2026-01-01T10:15:00Z", lastScheduled: ptrTime("2026-01-01T13:00:00Z"), now: "2026-01-01T14:30:00Z",
			want: Decision{Run: at("2026-01-01T14:00:00Z"), Next: at("2026-01-01T15:00:00Z")},
		},
		"exactly MaxMissedRuns missed: all caught up": {
			spec: "* * * * *", created: "2026-01-01T00:00:30Z", now: "2026-01-01T01:40:59Z",
			want: Decision{Run: at("2026-01-01T00:01:00Z"), Next: at("2026-01-01T00:02:00Z")},
		},
		"more than MaxMissedRuns missed: only the most recent": {
			spec: "* * * * *", created: "2026-01-01T00:00:30Z", now: "2026-01-01T01:41:00Z",
			want: Decision{Run: at("2026-01-01T01:41:00Z"), Skipped: true, Next: at("2026-01-01T01:42:00Z")},
		},
		"a week of missed minutes": {
			spec: "* * * * *", created: "2026-01-01T00:00:30Z", now: "2026-01-08T09:30:10Z",
			want: Decision{Run: at("2026-01-08T09:30:00Z"), Skipped: true, Next: at("2026-01-08T09:31:00Z")},
		},
		"years of missed days": {
			spec: "@daily", created: "2020-01-01T00:00:30Z", now: "2026-03-01T12:00:00Z",
			want: Decision{Run: at("2026-03-01T00:00:00Z"), Skipped: true, Next: at("2026-03-02T00:00:00Z")},
		},
		"suspended with runs due: nothing, no requeue": {
			spec: "0 * * * *", created: "2026-01-01T10:15:00Z", suspended: true, now: "2026-01-01T14:30:00Z",
			want: Decision{},
		},
		"resumed: the missed runs are caught up": {
			spec: "0 * * * *", created: "2026-01-01T10:15:00Z", lastScheduled: ptrTime("2026-01-01T11:00:00Z"), now: "2026-01-01T12:30:00Z",
			want: Decision{Run: at("2026-01-01T12:00:00Z"), Next: at("2026-01-01T13:00:00Z")},
		},
		"in a time zone": {
			spec: "45 21 * * *", tz: "Asia/Taipei", created: "2026-01-01T00:00:00Z", now: "2026-01-01T13:45:00Z",
			want: Decision{Run: at("2026-01-01T13:45:00Z"), Next: at("2026-01-02T13:45:00Z")},
		},
		"across a daylight saving change": {
			spec: "30 2 * * *", tz: "America/New_York", created: "2026-03-07T12:00:00Z", lastScheduled: ptrTime("2026-03-07T07:30:00Z"), now: "2026-03-08T12:00:00Z",
			// 02:30 does not exist on 8 March 2026 in New York: robfig/cron (so KubeRay) skips it.
			want: Decision{Next: at("2026-03-09T06:30:00Z")},
		},
		"a schedule that never fires": {
			spec: "0 0 30 2 *", created: "2026-01-01T00:00:00Z", now: "2026-01-01T00:00:00Z",
			want: Decision{},
		},
		"every 30 seconds, one pass a run": {
			spec: "@every 30s", created: "2026-01-01T00:00:00Z", lastScheduled: ptrTime("2026-01-01T00:00:30Z"), now: "2026-01-01T00:01:10Z",
			want: Decision{Run: at("2026-01-01T00:01:00Z"), Next: at("2026-01-01T00:01:30Z")},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			in := schedule(t, tc.spec, tc.tz)
			in.Created, in.LastScheduled, in.Suspended, in.Now = at(tc.created), tc.lastScheduled, tc.suspended, at(tc.now)
			got := Decide(in)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("decision (-want +got):\n%s", diff)
			}
		})
	}
}

// TestDecideRunsEveryTimeOnce plays a day of an operator that is down at random moments on
// a fake clock: every scheduled time gets exactly one run, in order.
func TestDecideRunsEveryTimeOnce(t *testing.T) {
	in := schedule(t, "*/7 * * * *", "")
	in.Created = at("2026-01-01T00:00:00Z")
	var runs []time.Time
	var last *time.Time
	var now time.Time
	for now = in.Created; now.Before(at("2026-01-02T00:00:00Z")); now = now.Add(13 * time.Minute) {
		// Several passes at each wake-up, as requeues after each run would make.
		for range MaxMissedRuns {
			in.Now, in.LastScheduled = now, last
			d := Decide(in)
			if !d.Due() {
				break
			}
			if d.Skipped {
				t.Fatalf("skipped runs at %s", now)
			}
			runs = append(runs, d.Run)
			r := d.Run
			last = &r
		}
	}
	var want []time.Time
	lastWake := now.Add(-13 * time.Minute)
	for tick := in.Schedule.Next(in.Created); !tick.After(lastWake); tick = in.Schedule.Next(tick) {
		want = append(want, tick)
	}
	if diff := cmp.Diff(want, runs); diff != "" {
		t.Errorf("runs (-want +got):\n%s", diff)
	}
}

func TestRequeueAfter(t *testing.T) {
	now := at("2026-01-01T10:00:00Z")
	for _, tc := range []struct {
		d    Decision
		want time.Duration
	}{
		{Decision{}, 0},
		{Decision{Next: now.Add(time.Hour)}, time.Hour},
		{Decision{Run: now.Add(-2 * time.Hour), Next: now.Add(-time.Hour)}, time.Millisecond},
	} {
		if got := tc.d.RequeueAfter(now); got != tc.want {
			t.Errorf("%+v: %s, want %s", tc.d, got, tc.want)
		}
	}
}
