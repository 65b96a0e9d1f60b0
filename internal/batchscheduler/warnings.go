package batchscheduler

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/raygate/raygate/internal/batchscheduler/kai"
	"github.com/raygate/raygate/internal/batchscheduler/schedulerplugins"
	"github.com/raygate/raygate/internal/batchscheduler/volcano"
	"github.com/raygate/raygate/internal/batchscheduler/yunikorn"
)

// SchedulerNameLabelKey is the label KubeRay's samples put on clusters meant for a batch
// scheduler; the operator's --batch-scheduler decides, the label only documents intent.
const SchedulerNameLabelKey = "ray.io/scheduler-name"

// labelScheduler says which --batch-scheduler acts on a label of a RayCluster. The gang
// label is used by both scheduler-plugins and YuniKorn (see gangSchedulers).
var labelScheduler = map[string]string{
	volcano.QueueLabelKey:                      volcano.Name,
	volcano.PriorityClassLabelKey:              volcano.Name,
	volcano.NetworkTopologyModeLabelKey:        volcano.Name,
	volcano.NetworkTopologyHighestTierLabelKey: volcano.Name,
	kai.QueueLabelKey:                          kai.Name,
	yunikorn.QueueLabelKey:                     yunikorn.Name,
	yunikorn.AppIDLabelKey:                     yunikorn.Name,
}

// gangSchedulers act on ray.io/gang-scheduling-enabled.
var gangSchedulers = []string{schedulerplugins.Name, yunikorn.Name}

// LabelWarnings are admission warnings about the batch-scheduler labels of a RayCluster
// (or of a RayService, whose clusters get its labels) given the operator's
// --batch-scheduler (configured): a label no running integration acts on, and a label the
// running one cannot use. labelsPath is the labels' field path.
func LabelWarnings(labels map[string]string, labelsPath *field.Path, configured string) []string {
	var warnings []string
	for _, k := range schedulerLabelsOf(labels) {
		want, ok := labelScheduler[k]
		switch k {
		case SchedulerNameLabelKey:
			want, ok = labels[k], labels[k] != ""
		case schedulerplugins.GangLabelKey:
			want, ok = strings.Join(gangSchedulers, " or "), !slices.Contains(gangSchedulers, configured)
		}
		if !ok || want == configured {
			continue
		}
		p := labelsPath.Key(k).String()
		switch {
		case k == SchedulerNameLabelKey && !Valid(want):
			warnings = append(warnings, fmt.Sprintf("%s: raygate has no %s integration; the label is ignored", p, want))
		case configured == "":
			warnings = append(warnings, fmt.Sprintf("%s is for the %s batch scheduler, but raygate runs without one (--batch-scheduler is not set); the label is ignored", p, want))
		default:
			warnings = append(warnings, fmt.Sprintf("%s is for the %s batch scheduler, but raygate runs with --batch-scheduler=%s; the label is ignored", p, want, configured))
		}
	}
	if configured == volcano.Name {
		if tier, ok := labels[volcano.NetworkTopologyHighestTierLabelKey]; ok {
			if _, err := strconv.Atoi(tier); err != nil {
				warnings = append(warnings, fmt.Sprintf("%s: %q is not an integer; raygate cannot create the cluster's PodGroup, so no pods are created until it is fixed",
					labelsPath.Key(volcano.NetworkTopologyHighestTierLabelKey), tier))
			}
		}
	}
	if configured == kai.Name && labels[kai.QueueLabelKey] == "" {
		warnings = append(warnings, fmt.Sprintf("%s is not set: raygate runs with --batch-scheduler=%s, which schedules pods only in a queue; the pods will stay Pending",
			labelsPath.Key(kai.QueueLabelKey), kai.Name))
	}
	return warnings
}

// schedulerLabelsOf returns the keys of labels that name a batch scheduler, sorted (for
// warnings in a stable order); nil, without sorting, when there are none, as for most pods.
func schedulerLabelsOf(labels map[string]string) []string {
	for k := range labels {
		if _, ok := labelScheduler[k]; ok || k == SchedulerNameLabelKey || k == schedulerplugins.GangLabelKey {
			return slices.Sorted(maps.Keys(labels))
		}
	}
	return nil
}
