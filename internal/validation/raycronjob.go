package validation

import (
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
	"k8s.io/apimachinery/pkg/util/validation/field"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/defaulting"
	"github.com/raygate/raygate/internal/features"
	"github.com/raygate/raygate/internal/raycronjob"
	"github.com/raygate/raygate/internal/rayjob"
)

var (
	jobTemplatePath = specPath.Child("jobTemplate")
	schedulePath    = specPath.Child("schedule")
	timeZonePath    = specPath.Child("timeZone")
)

// Bounds on a RayCronJob's strings: far above any real schedule or IANA zone name, low
// enough that parsing them costs nothing.
const (
	MaxScheduleLength = 256
	MaxTimeZoneLength = 64
)

// Warnings about legal but surprising RayCronJobs.
const (
	// WarnSubMinuteSchedule: runs are named by the minute of their scheduled time (as in
	// KubeRay), so a second run in the same minute finds its name taken and is skipped.
	WarnSubMinuteSchedule = "%s: %q fires more than once a minute; each run's RayJob is named by the minute of its scheduled time, so at most one RayJob per minute is created"
)

// RayCronJobGateMessage is the refusal of a new RayCronJob while the RayCronJob gate is off.
var RayCronJobGateMessage = fmt.Sprintf("RayCronJob is behind the feature gate %s (Alpha, off by default): %s",
	features.RayCronJob, GateHint(string(features.RayCronJob)))

// RayCronJob validates a (defaulted) RayCronJob on create.
func (v Validator) RayCronJob(cj *rayv1.RayCronJob) (field.ErrorList, []string) {
	return v.AdmitRayCronJob(nil, nil, cj)
}

// RayCronJobUpdate validates an update of a (defaulted) RayCronJob, ratcheted against old.
func (v Validator) RayCronJobUpdate(old, cj *rayv1.RayCronJob) (field.ErrorList, []string) {
	return v.AdmitRayCronJob(nil, old, cj)
}

// AdmitRayCronJob validates a (defaulted) RayCronJob on create (old nil) or update: the
// RayCronJob gate (on create only: a stored RayCronJob is never frozen by turning it off),
// the name (every name derived from its runs' RayJobs must fit), the schedule and time zone
// as KubeRay reads them, and the job template with every RayJob rule, at
// spec.jobTemplate's paths, with what the webhook knows of the namespace (ns, may be nil).
func (v Validator) AdmitRayCronJob(ns *Namespace, old, cj *rayv1.RayCronJob) (field.ErrorList, []string) {
	if cj == nil || cj.DeletionTimestamp != nil {
		return nil, nil
	}
	c := v.check(onCreate)
	var errs field.ErrorList
	if old == nil && !c.gates.Enabled(features.RayCronJob) {
		errs = append(errs, field.Forbidden(specPath, RayCronJobGateMessage))
	}
	errs = append(errs, validateName(&cj.ObjectMeta, cronJobNames)...)
	e, warnings := scheduleErrors(&cj.Spec)
	errs = append(errs, e...)
	var oldJob *rayv1.RayJob
	if old != nil {
		if len(errs) > 0 {
			// Only what the update changed counts, so a RayCronJob made invalid by a newer
			// rule can still be suspended, relabelled or fixed.
			errs = v.check(onUpdate).ratchet(errs, defaultedCronJob(old), cj)
		}
		oldJob = templateJob(defaultedCronJob(old))
	}
	// The template's errors are ratcheted by the RayJob rules themselves.
	jobErrs, jobWarnings := v.AdmitRayJob(ns, oldJob, templateJob(cj))
	errs = append(errs, underTemplate(jobErrs)...)
	warnings = append(warnings, templateWarnings(jobWarnings)...)
	return capped(errs, warnings)
}

// StoredRayCronJob validates a RayCronJob already stored, for the controller (after
// defaulting a copy in memory): the name, schedule and time zone, and the template as
// StoredRayJob checks a RayJob. Not the gate: the controller runs only with it on.
func (v Validator) StoredRayCronJob(cj *rayv1.RayCronJob) field.ErrorList {
	if cj == nil || cj.DeletionTimestamp != nil {
		return nil
	}
	errs := validateName(&cj.ObjectMeta, cronJobNames)
	e, _ := scheduleErrors(&cj.Spec)
	errs = append(errs, e...)
	errs = append(errs, underTemplate(v.StoredRayJob(templateJob(cj)))...)
	errs, _ = capped(errs, nil)
	return errs
}

// runDerivedNames are the names derived from a RayCronJob's name: those of the RayJob of a
// run (the longest run name) and everything derived from that.
func runDerivedNames(name string) []string {
	return rayjob.DerivedNames(raycronjob.LongestRunName(name))
}

// scheduleErrors checks spec.schedule and spec.timeZone with the cron library KubeRay uses.
func scheduleErrors(spec *rayv1.RayCronJobSpec) (field.ErrorList, []string) {
	var errs field.ErrorList
	var warnings []string
	switch s := spec.Schedule; {
	case s == "":
		errs = append(errs, field.Required(schedulePath, "a cron schedule, such as \"0 * * * *\""))
	case len(s) > MaxScheduleLength:
		errs = append(errs, field.TooLong(schedulePath, "" /* not printed */, MaxScheduleLength))
	case strings.Contains(s, "TZ"):
		errs = append(errs, field.Invalid(schedulePath, s, "cannot use TZ or CRON_TZ in schedule, use the timeZone field instead"))
	default:
		sched, err := cron.ParseStandard(s)
		if err != nil {
			errs = append(errs, field.Invalid(schedulePath, s, "invalid cron schedule: "+err.Error()))
		} else if raycronjob.FiresWithinAMinute(sched) {
			warnings = append(warnings, fmt.Sprintf(WarnSubMinuteSchedule, schedulePath, s))
		}
	}
	if tz := spec.TimeZone; tz != nil {
		switch {
		case *tz == "":
			errs = append(errs, field.Invalid(timeZonePath, *tz, "must not be empty; omit the field to use the operator's local time zone"))
		case len(*tz) > MaxTimeZoneLength:
			errs = append(errs, field.TooLong(timeZonePath, "" /* not printed */, MaxTimeZoneLength))
		default:
			if _, err := time.LoadLocation(*tz); err != nil {
				errs = append(errs, field.Invalid(timeZonePath, *tz, "unknown time zone: not in the IANA time zone database the operator carries"))
			}
		}
	}
	return errs, warnings
}

// templateJob is the RayJob a run of cj would create, as validation sees it: the longest
// run name (so its derived names are checked at their longest), cj's namespace and the
// template. The spec is shared with cj, for reading only.
func templateJob(cj *rayv1.RayCronJob) *rayv1.RayJob {
	j := &rayv1.RayJob{Spec: cj.Spec.JobTemplate}
	j.Name, j.Namespace = raycronjob.LongestRunName(cj.Name), cj.Namespace
	if cj.Name == "" && cj.GenerateName != "" {
		j.Name = raycronjob.LongestRunName(cj.GenerateName + "xxxxx")
	}
	return j
}

// underTemplate moves a RayJob's errors under spec.jobTemplate. Errors of the RayJob's
// metadata are dropped: its name derives from the RayCronJob's, checked at metadata.name.
func underTemplate(errs field.ErrorList) field.ErrorList {
	out := make(field.ErrorList, 0, len(errs))
	for _, e := range errs {
		rest, ok := strings.CutPrefix(e.Field, specPath.String())
		if !ok || (rest != "" && rest[0] != '.' && rest[0] != '[') {
			continue
		}
		moved := *e
		moved.Field = jobTemplatePath.String() + rest
		out = append(out, &moved)
	}
	return out
}

var specWord = regexp.MustCompile(`\bspec\.`)

// templateWarnings points a RayJob's warnings at spec.jobTemplate.
func templateWarnings(ws []string) []string {
	for i, w := range ws {
		ws[i] = specWord.ReplaceAllLiteralString(w, jobTemplatePath.String()+".")
	}
	return ws
}

// defaultedCronJob returns the stored object of an update defaulted, for ratcheting.
func defaultedCronJob(cj *rayv1.RayCronJob) *rayv1.RayCronJob {
	c := cj.DeepCopy()
	defaulting.RayCronJob(c)
	return c
}
