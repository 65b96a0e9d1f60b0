// Package raycronjob is the RayCronJob controller: it creates a RayJob from a RayCronJob's
// template at each time of its cron schedule (KubeRay v1.6+, gate RayCronJob).
//
// A pass reads the RayCronJob (the status last written, never an older one), checks it as
// admission would (defaulted in memory), decides with the pure Decide what run is due, and
// creates that run's RayJob under a name derived from its scheduled time, so a run created
// before an operator restart or a lost status write is found, not created again. Then one
// status write (status.lastScheduleTime), the events, and a requeue at the next due time.
package raycronjob

// +kubebuilder:rbac:groups=ray.io,resources=raycronjobs,verbs=get;list;watch
// +kubebuilder:rbac:groups=ray.io,resources=raycronjobs/status,verbs=get;update;patch
// The RayJobs of the runs carry a controller reference with blockOwnerDeletion.
// +kubebuilder:rbac:groups=ray.io,resources=raycronjobs/finalizers,verbs=update
// +kubebuilder:rbac:groups=ray.io,resources=rayjobs,verbs=get;create
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
