package validation

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
)

// Settings that belong to GCS fault tolerance, which KubeRay accepts only through
// gcsFaultToleranceOptions and raygate does not support yet: given any other way, the head
// would keep its state in an external Redis that raygate neither sets up nor cleans up.
const (
	redisAddressEnvVar  = "RAY_REDIS_ADDRESS"
	redisUsernameEnvVar = "REDIS_USERNAME"
	redisUsernameParam  = "redis-username"

	redisUsernameDetail = "a Redis username belongs to GCS fault tolerance (gcsFaultToleranceOptions.redisUsername), which raygate does not support yet; remove it"
)

// gcsSettings rejects what KubeRay rejects outside gcsFaultToleranceOptions (create/update-only):
// RAY_REDIS_ADDRESS in the head's Ray container, and a Redis username in its env or
// rayStartParams.
func gcsSettings(head *rayv1.HeadGroupSpec, headPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if v, ok := head.RayStartParams[redisUsernameParam]; ok && v != "" {
		errs = append(errs, field.Forbidden(headPath.Child("rayStartParams").Key(redisUsernameParam),
			redisUsernameDetail))
	}
	containers := head.Template.Spec.Containers
	if len(containers) == 0 {
		return errs
	}
	envPath := headPath.Child("template", "spec", "containers").Index(rayv1.RayContainerIndex).Child("env")
	for i, e := range containers[rayv1.RayContainerIndex].Env {
		if detail := gcsEnvProblem(e); detail != "" {
			errs = append(errs, field.Forbidden(envPath.Index(i), detail))
		}
	}
	return errs
}

func gcsEnvProblem(e corev1.EnvVar) string {
	switch e.Name {
	case redisAddressEnvVar:
		return redisAddressEnvVar + " keeps the GCS in an external Redis (GCS fault tolerance), which raygate does not support yet: " +
			"it would neither configure the cluster for it nor clean that Redis up when the cluster is deleted; remove it"
	case redisUsernameEnvVar:
		return redisUsernameDetail
	}
	return ""
}
