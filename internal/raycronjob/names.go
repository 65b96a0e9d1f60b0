// Package raycronjob holds what the RayCronJob controller and admission share: how a
// schedule is read and how the RayJob of each run is named.
package raycronjob

import (
	"strconv"
	"strings"
	"time"

	"github.com/robfig/cron/v3"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
)

// maxRunSuffix is the longest run suffix: "-" and the scheduled minute since the epoch,
// ten digits until the year 20989. KubeRay keeps RayCronJob names 11 characters shorter
// than RayJob names for the same reason.
const maxRunSuffix = "-9999999999"

// RunName is the name of the RayJob for a run scheduled at t: the RayCronJob's name and the
// minute of t since the epoch (KubeRay's naming). The same run always gets the same name,
// so a run created before an operator restart is found, not created again.
func RunName(cronJob string, t time.Time) string {
	return cronJob + "-" + strconv.FormatInt(t.Unix()/60, 10)
}

// LongestRunName is the longest name RunName gives a RayCronJob's runs.
func LongestRunName(cronJob string) string {
	return cronJob + maxRunSuffix
}

// Parse reads a RayCronJob's schedule in its time zone as KubeRay does: the standard
// five-field syntax and descriptors of robfig/cron, in spec.timeZone, else in local (the
// operator's local time zone). Validation refuses TZ= and CRON_TZ= in the schedule itself.
func Parse(spec *rayv1.RayCronJobSpec, local *time.Location) (cron.Schedule, error) {
	if strings.Contains(spec.Schedule, "TZ") {
		return nil, errTZInSchedule
	}
	sched, err := cron.ParseStandard(spec.Schedule)
	if err != nil {
		return nil, err
	}
	loc := local
	if spec.TimeZone != nil {
		if loc, err = time.LoadLocation(*spec.TimeZone); err != nil {
			return nil, err
		}
	}
	if s, ok := sched.(*cron.SpecSchedule); ok {
		s.Location = loc
	}
	return sched, nil
}

type scheduleError string

func (e scheduleError) Error() string { return string(e) }

const errTZInSchedule = scheduleError("cannot use TZ or CRON_TZ in schedule, use the timeZone field instead")

// FiresWithinAMinute reports whether a schedule can fire twice in one minute (only
// "@every" with less than a minute can: the standard syntax has no seconds).
func FiresWithinAMinute(s cron.Schedule) bool {
	d, ok := s.(cron.ConstantDelaySchedule)
	return ok && d.Delay < time.Minute
}
