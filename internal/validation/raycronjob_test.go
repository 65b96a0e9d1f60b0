package validation

import (
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/defaulting"
	"github.com/raygate/raygate/internal/features"
	"github.com/raygate/raygate/test/builders"
)

var cronGateOn = features.Static{features.RayCronJob: true}

// cronJob is a valid, defaulted RayCronJob after mutate.
func cronJob(mutate func(*rayv1.RayCronJob)) *rayv1.RayCronJob {
	cj := builders.RayCronJob("nightly", "ns").Obj()
	if mutate != nil {
		mutate(cj)
	}
	defaulting.RayCronJob(cj)
	return cj
}

func withSchedule(s string) func(*rayv1.RayCronJob) {
	return func(cj *rayv1.RayCronJob) { cj.Spec.Schedule = s }
}

func withTimeZone(tz string) func(*rayv1.RayCronJob) {
	return func(cj *rayv1.RayCronJob) { cj.Spec.TimeZone = &tz }
}

// TestRayCronJobKubeRayCases follows KubeRay v1.7's TestValidateRayCronJobSpec: where
// KubeRay refuses, raygate refuses at the field paths below; where it accepts, raygate
// accepts.
func TestRayCronJobKubeRayCases(t *testing.T) {
	cases := map[string]struct {
		mutate func(*rayv1.RayCronJob)
		want   field.ErrorList
	}{
		"valid schedule and RayJob spec":  {mutate: withSchedule("*/5 * * * *")},
		"invalid cron schedule":           {mutate: withSchedule("invalid cron"), want: field.ErrorList{field.Invalid(p("spec.schedule"), "", "")}},
		"valid schedule with a time zone": {mutate: func(cj *rayv1.RayCronJob) { withSchedule("0 9 * * *")(cj); withTimeZone("Asia/Taipei")(cj) }},
		"valid schedule in UTC":           {mutate: func(cj *rayv1.RayCronJob) { withSchedule("0 0 * * *")(cj); withTimeZone("UTC")(cj) }},
		"invalid time zone":               {mutate: withTimeZone("Invalid/Zone"), want: field.ErrorList{field.Invalid(p("spec.timeZone"), "", "")}},
		"TZ= in the schedule":             {mutate: withSchedule("TZ=UTC */5 * * * *"), want: field.ErrorList{field.Invalid(p("spec.schedule"), "", "")}},
		"CRON_TZ= in the schedule":        {mutate: withSchedule("CRON_TZ=UTC */5 * * * *"), want: field.ErrorList{field.Invalid(p("spec.schedule"), "", "")}},
		"empty time zone":                 {mutate: withTimeZone(""), want: field.ErrorList{field.Invalid(p("spec.timeZone"), "", "")}},
		"name too long": {
			mutate: func(cj *rayv1.RayCronJob) { cj.Name = strings.Repeat("a", 37) },
			want:   field.ErrorList{field.Invalid(p("metadata.name"), "", "")},
		},
		"longest name": {mutate: func(cj *rayv1.RayCronJob) { cj.Name = strings.Repeat("a", 36) }},
		"template without containers": {
			mutate: func(cj *rayv1.RayCronJob) {
				cj.Spec.JobTemplate.RayClusterSpec.HeadGroupSpec.Template.Spec.Containers = nil
			},
			want: field.ErrorList{field.Required(p("spec.jobTemplate.rayClusterSpec.headGroupSpec.template.spec.containers"), "")},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			errs, _ := Validator{Gates: cronGateOn}.RayCronJob(cronJob(tc.mutate))
			diffErrors(t, tc.want, errs)
		})
	}
}

// TestRayCronJobRules covers what raygate checks beyond KubeRay, and the gate.
func TestRayCronJobRules(t *testing.T) {
	cases := map[string]struct {
		mutate       func(*rayv1.RayCronJob)
		gates        features.Gates
		want         field.ErrorList
		wantWarnings []string
	}{
		"the gate off": {
			gates: features.Static{features.RayCronJob: false},
			want:  field.ErrorList{field.Forbidden(p("spec"), "")},
		},
		"no schedule":  {mutate: withSchedule(""), want: field.ErrorList{field.Required(p("spec.schedule"), "")}},
		"a descriptor": {mutate: withSchedule("@daily")},
		"weekdays at nine in New York": {
			mutate: func(cj *rayv1.RayCronJob) { withSchedule("0 9 * * MON-FRI")(cj); withTimeZone("America/New_York")(cj) },
		},
		"a six-field schedule (seconds)": {mutate: withSchedule("0 0 9 * * *"), want: field.ErrorList{field.Invalid(p("spec.schedule"), "", "")}},
		"a schedule too long": {
			mutate: withSchedule(strings.Repeat("1,", MaxScheduleLength) + "2 * * * *"),
			want:   field.ErrorList{field.TooLong(p("spec.schedule"), "", MaxScheduleLength)},
		},
		"a time zone path": {mutate: withTimeZone("../../etc/passwd"), want: field.ErrorList{field.Invalid(p("spec.timeZone"), "", "")}},
		"a time zone too long": {
			mutate: withTimeZone(strings.Repeat("A", MaxTimeZoneLength+1)),
			want:   field.ErrorList{field.TooLong(p("spec.timeZone"), "", MaxTimeZoneLength)},
		},
		"every 30 seconds": {
			mutate:       withSchedule("@every 30s"),
			wantWarnings: []string{fmt.Sprintf(WarnSubMinuteSchedule, "spec.schedule", "@every 30s")},
		},
		"every two minutes": {mutate: withSchedule("@every 2m")},
		"an unknown submission mode in the template": {
			mutate: func(cj *rayv1.RayCronJob) { cj.Spec.JobTemplate.SubmissionMode = "ByPigeon" },
			want:   field.ErrorList{field.NotSupported[string](p("spec.jobTemplate.submissionMode"), "", nil)},
		},
		"a template on an existing cluster": {
			mutate: func(cj *rayv1.RayCronJob) {
				cj.Spec.JobTemplate.RayClusterSpec = nil
				cj.Spec.JobTemplate.ClusterSelector = map[string]string{rayv1.RayJobClusterSelectorKey: "shared"}
			},
		},
		"a template with a deletion strategy behind its gate": {
			gates: features.Static{features.RayCronJob: true, features.RayJobDeletionPolicy: false},
			mutate: func(cj *rayv1.RayCronJob) {
				cj.Spec.JobTemplate.DeletionStrategy = &rayv1.DeletionStrategy{DeletionRules: []rayv1.DeletionRule{
					{Policy: rayv1.DeleteSelf, Condition: rayv1.DeletionCondition{JobStatus: ptr.To(rayv1.JobStatusSucceeded)}}}}
			},
			want: field.ErrorList{field.Forbidden(p("spec.jobTemplate.deletionStrategy"), "")},
		},
		"everything wrong at once": {
			mutate: func(cj *rayv1.RayCronJob) {
				cj.Name = "Bad_Name"
				withSchedule("* * *")(cj)
				withTimeZone("Nowhere/Land")(cj)
				cj.Spec.JobTemplate.SubmissionMode = "ByPigeon"
			},
			want: field.ErrorList{
				field.Invalid(p("metadata.name"), "", ""),
				field.Invalid(p("spec.schedule"), "", ""),
				field.Invalid(p("spec.timeZone"), "", ""),
				field.NotSupported[string](p("spec.jobTemplate.submissionMode"), "", nil),
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			gates := tc.gates
			if gates == nil {
				gates = cronGateOn
			}
			errs, warnings := Validator{Gates: gates}.RayCronJob(cronJob(tc.mutate))
			diffErrors(t, tc.want, errs)
			diffWarnings(t, tc.wantWarnings, warnings)
		})
	}
}

func TestRayCronJobGateMessage(t *testing.T) {
	errs, _ := Validator{Gates: features.Static{}}.RayCronJob(cronJob(nil))
	want := "spec: Forbidden: RayCronJob is behind the feature gate RayCronJob (Alpha, off by default): " +
		"enable it with --feature-gates=RayCronJob=true on the manager, or the Helm value featureGates.RayCronJob=true"
	if len(errs) != 1 || errs[0].Error() != want {
		t.Errorf("got %v\nwant %s", errs, want)
	}
}

func TestRayCronJobUpdate(t *testing.T) {
	bad := cronJob(withTimeZone("Gone/Zone"))
	cases := map[string]struct {
		gates    features.Gates
		old, new *rayv1.RayCronJob
		want     field.ErrorList
	}{
		"suspending with the gate turned off": {
			gates: features.Static{}, old: cronJob(nil), new: cronJob(func(cj *rayv1.RayCronJob) { cj.Spec.Suspend = ptr.To(true) }),
		},
		"relabelling one stored with a zone since removed": {
			old: bad, new: func() *rayv1.RayCronJob { c := bad.DeepCopy(); c.Labels = map[string]string{"team": "a"}; return c }(),
		},
		"changing the schedule to an invalid one": {
			old: cronJob(nil), new: cronJob(withSchedule("99 * * * *")),
			want: field.ErrorList{field.Invalid(p("spec.schedule"), "", "")},
		},
		"breaking the template": {
			old: cronJob(nil), new: cronJob(func(cj *rayv1.RayCronJob) { cj.Spec.JobTemplate.SubmissionMode = "ByPigeon" }),
			want: field.ErrorList{field.NotSupported[string](p("spec.jobTemplate.submissionMode"), "", nil)},
		},
		"being deleted": {
			old: cronJob(nil), new: func() *rayv1.RayCronJob {
				c := cronJob(withSchedule("bad"))
				c.DeletionTimestamp = ptr.To(metav1.Now())
				return c
			}(),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			gates := tc.gates
			if gates == nil {
				gates = cronGateOn
			}
			errs, _ := Validator{Gates: gates}.RayCronJobUpdate(tc.old, tc.new)
			diffErrors(t, tc.want, errs)
		})
	}
}

func TestStoredRayCronJob(t *testing.T) {
	v := Validator{Gates: features.Static{}}
	if errs := v.StoredRayCronJob(cronJob(nil)); len(errs) != 0 {
		t.Errorf("a valid RayCronJob with the gate off: %v", errs)
	}
	errs := v.StoredRayCronJob(cronJob(func(cj *rayv1.RayCronJob) {
		withSchedule("nope")(cj)
		cj.Spec.JobTemplate.RayClusterSpec.HeadGroupSpec.Template.Spec.Containers = []corev1.Container{}
	}))
	diffErrors(t, field.ErrorList{
		field.Invalid(p("spec.schedule"), "", ""),
		field.Required(p("spec.jobTemplate.rayClusterSpec.headGroupSpec.template.spec.containers"), ""),
	}, errs)
}
