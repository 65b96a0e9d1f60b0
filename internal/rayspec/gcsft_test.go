package rayspec

import (
	"strings"
	"testing"
	"time"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
)

func TestParseGCSFTDeletionTimeout(t *testing.T) {
	for in, want := range map[string]time.Duration{"600": 10 * time.Minute, "90s": 90 * time.Second, "1h": time.Hour} {
		if got, err := ParseGCSFTDeletionTimeout(in); err != nil || got != want {
			t.Errorf("%q: got %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "0", "-5", "0s", "-1m", "soon", "5 minutes", "99999999999999999999"} {
		if _, err := ParseGCSFTDeletionTimeout(in); err == nil {
			t.Errorf("%q: accepted", in)
		}
	}
	if got := GCSFTDeletionTimeout(map[string]string{rayv1.GCSFTDeletionTimeoutKey: "bad"}); got != DefaultGCSFTDeletionTimeout {
		t.Errorf("unreadable annotation: got %v", got)
	}
}

// The controller clamps a timeout stored above the bound (admission refuses a new one).
func TestGCSFTDeletionTimeoutBound(t *testing.T) {
	for _, in := range []string{"3601", "1h0m1s", "87600h", "4611686018", "9223372036"} {
		if got := GCSFTDeletionTimeout(map[string]string{rayv1.GCSFTDeletionTimeoutKey: in}); got != MaxGCSFTDeletionTimeout {
			t.Errorf("%q stored: the controller waits %v, want the bound", in, got)
		}
	}
	if got := GCSFTDeletionTimeout(map[string]string{rayv1.GCSFTDeletionTimeoutKey: "90s"}); got != 90*time.Second {
		t.Errorf("90s: got %v", got)
	}
}

func TestRedisCleanupJobName(t *testing.T) {
	if got := RedisCleanupJobName("raycluster-ha"); got != "raycluster-ha-redis-cleanup" {
		t.Errorf("got %q", got)
	}
	long := strings.Repeat("a", 49) + "-" + strings.Repeat("b", 10)
	got := RedisCleanupJobName(long)
	if len(got) != 63 || !strings.HasSuffix(got, "-redis-cleanup") || got[0] == '-' {
		t.Errorf("got %q (%d)", got, len(got))
	}
}

func TestGCSFaultToleranceEnabled(t *testing.T) {
	spec := &rayv1.RayClusterSpec{}
	if GCSFaultToleranceEnabled(spec, map[string]string{rayv1.FTEnabledKey: "false"}) {
		t.Error("false annotation enables it")
	}
	if !GCSFaultToleranceEnabled(spec, map[string]string{rayv1.FTEnabledKey: "True"}) {
		t.Error("annotation ignored")
	}
	spec.GcsFaultToleranceOptions = &rayv1.GcsFaultToleranceOptions{}
	if !GCSFaultToleranceEnabled(spec, nil) {
		t.Error("options ignored")
	}
}
