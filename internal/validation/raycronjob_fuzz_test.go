package validation

import (
	"reflect"
	"testing"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/defaulting"
	"github.com/raygate/raygate/internal/features"
	"github.com/raygate/raygate/internal/validation/fuzzer"
)

// FuzzValidateRayCronJob checks that RayCronJob validation never panics, whatever the
// object, the stored object, the schedule and time zone strings and the gates; that an
// update changing nothing is never refused; and that defaulting is idempotent.
func FuzzValidateRayCronJob(f *testing.F) {
	f.Add([]byte("seed"), "*/5 * * * *", "Asia/Taipei")
	f.Add([]byte{7, 7, 7, 7, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, "@every 1s", "")
	f.Add([]byte("a RayCronJob"), "TZ=UTC 0 0 * * *", "../../etc/passwd")
	f.Add([]byte{1}, "0-59/0 * * * *", "Local")
	f.Add([]byte{2}, "@every -5m", "UTC")
	f.Fuzz(func(t *testing.T, data []byte, schedule, tz string) {
		var old, cj rayv1.RayCronJob
		fill := fuzzer.New(data)
		fill.Fill(&cj)
		fill.Fill(&old)
		cj.Spec.Schedule = schedule
		if len(data)%2 == 0 {
			cj.Spec.TimeZone = &tz
		}
		gates := features.Static{features.RayCronJob: len(data)%3 == 0}
		v := Validator{Gates: gates}
		errs, _ := v.RayCronJob(&cj)
		_ = errs.ToAggregate()
		errs, _ = v.RayCronJobUpdate(&old, &cj)
		_ = errs.ToAggregate()
		_ = v.StoredRayCronJob(&cj).ToAggregate()
		errs, _ = Validator{Gates: gates, Policy: strictPolicy}.AdmitRayCronJob(fuzzNamespace(), &old, &cj)
		_ = errs.ToAggregate()

		defaulted := cj.DeepCopy()
		defaulting.RayCronJob(defaulted)
		again := defaulted.DeepCopy()
		defaulting.RayCronJob(again)
		if !reflect.DeepEqual(defaulted, again) {
			t.Fatal("defaulting a defaulted RayCronJob changed it")
		}
		if errs, _ := v.RayCronJobUpdate(defaulted, defaulted.DeepCopy()); len(errs) > 0 {
			t.Fatalf("an update that changes nothing was refused: %v", errs)
		}
	})
}
