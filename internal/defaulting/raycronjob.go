package defaulting

import rayv1 "github.com/raygate/raygate/apis/ray/v1"

// RayCronJob defaults a RayCronJob in place: its job template as a RayJob's spec, so the
// stored template reads as the RayJobs it creates will (they are defaulted again by their
// own admission). The schedule, time zone and suspend have no defaults, as in KubeRay.
func RayCronJob(cj *rayv1.RayCronJob) {
	if cj == nil {
		return
	}
	RayJobSpec(&cj.Spec.JobTemplate)
}
