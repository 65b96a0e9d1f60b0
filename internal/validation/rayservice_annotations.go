package validation

import (
	"strconv"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// InitializingTimeoutAnnotation bounds how long a RayService may stay Initializing (no
// cluster has served yet). Once it passes, the RayService fails for good: its clusters are
// deleted and it must be deleted and created again.
const InitializingTimeoutAnnotation = "ray.io/initializing-timeout"

// errInitializingTimeout is the one reason an invalid value is refused.
const errInitializingTimeout = "must be a positive Go duration (e.g. 30m, 1h30m) or a positive whole number of seconds"

// InitializingTimeout reads the ray.io/initializing-timeout annotation: a Go duration
// ("30m") or whole seconds ("1800"), as KubeRay reads it. ok is false when it is absent or
// empty; valid is false when it is set to anything else than a positive duration.
func InitializingTimeout(annotations map[string]string) (timeout time.Duration, ok, valid bool) {
	v := annotations[InitializingTimeoutAnnotation]
	if v == "" {
		return 0, false, true
	}
	if d, err := time.ParseDuration(v); err == nil {
		if d <= 0 {
			return 0, true, false
		}
		return d, true, true
	}
	if s, err := strconv.Atoi(v); err == nil {
		// Seconds beyond what a Duration holds are no timeout a user means: refuse them
		// rather than wrap around.
		if s <= 0 || int64(s) > int64(time.Duration(1<<63-1)/time.Second) {
			return 0, true, false
		}
		return time.Duration(s) * time.Second, true, true
	}
	return 0, true, false
}

// rayServiceAnnotations checks the annotations of a RayService that the controller reads.
func rayServiceAnnotations(meta *metav1.ObjectMeta) field.ErrorList {
	if _, _, valid := InitializingTimeout(meta.Annotations); !valid {
		path := field.NewPath("metadata", "annotations").Key(InitializingTimeoutAnnotation)
		return field.ErrorList{field.Invalid(path, meta.Annotations[InitializingTimeoutAnnotation], errInitializingTimeout)}
	}
	return nil
}
