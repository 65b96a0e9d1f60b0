package raycronjob

import (
	"testing"
	"time"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
)

func TestRunName(t *testing.T) {
	at := time.Date(2026, 1, 1, 13, 45, 59, 0, time.UTC)
	// KubeRay's getRayJobName: the name and the scheduled time's Unix minutes.
	if got, want := RunName("nightly", at), "nightly-29454585"; got != want {
		t.Errorf("RunName = %s, want %s", got, want)
	}
	if got := RunName("nightly", at.In(time.FixedZone("x", 8*3600))); got != "nightly-29454585" {
		t.Errorf("the name depends on the zone the time is read in: %s", got)
	}
	if n := len(LongestRunName("a")) - len("a"); n != 11 {
		t.Errorf("longest run suffix %d characters, want KubeRay's 11", n)
	}
	if far := RunName("a", time.Date(9999, 12, 31, 23, 59, 0, 0, time.UTC)); len(far) > len(LongestRunName("a")) {
		t.Errorf("%s is longer than LongestRunName", far)
	}
}

func TestParse(t *testing.T) {
	tz := "Asia/Taipei"
	s, err := Parse(&rayv1.RayCronJobSpec{Schedule: "45 21 * * *", TimeZone: &tz}, time.UTC)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := s.Next(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)), time.Date(2026, 1, 1, 13, 45, 0, 0, time.UTC); !got.Equal(want) {
		t.Errorf("next in Taipei: %s, want %s", got, want)
	}
	local := time.FixedZone("operator", -5*3600)
	s, err = Parse(&rayv1.RayCronJobSpec{Schedule: "0 9 * * *"}, local)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := s.Next(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)), time.Date(2026, 1, 1, 14, 0, 0, 0, time.UTC); !got.Equal(want) {
		t.Errorf("next in the operator's zone: %s, want %s", got, want)
	}
	for _, bad := range []string{"TZ=UTC 0 9 * * *", "CRON_TZ=UTC 0 9 * * *", "61 * * * *", ""} {
		if _, err := Parse(&rayv1.RayCronJobSpec{Schedule: bad}, time.UTC); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
	gone := "Nowhere/Land"
	if _, err := Parse(&rayv1.RayCronJobSpec{Schedule: "@daily", TimeZone: &gone}, time.UTC); err == nil {
		t.Error("an unknown zone parsed")
	}
}

func TestFiresWithinAMinute(t *testing.T) {
	for schedule, want := range map[string]bool{"@every 30s": true, "@every 59s": true, "@every 1m": false, "* * * * *": false, "@hourly": false} {
		s, err := Parse(&rayv1.RayCronJobSpec{Schedule: schedule}, time.UTC)
		if err != nil {
			t.Fatal(err)
		}
		if got := FiresWithinAMinute(s); got != want {
			t.Errorf("%s: %v, want %v", schedule, got, want)
		}
	}
}
