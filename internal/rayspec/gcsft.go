package rayspec

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
)

// DefaultGCSFTDeletionTimeout is how long deleting a fault-tolerant cluster waits for its
// Redis cleanup when ray.io/gcs-ft-deletion-timeout is not set.
const DefaultGCSFTDeletionTimeout = 5 * time.Minute

// MaxGCSFTDeletionTimeout bounds ray.io/gcs-ft-deletion-timeout: the finalizer holds the
// cluster, and so its namespace, in deletion until then. Admission refuses more; the
// controller counts a larger stored value (KubeRay has no bound) as this.
const MaxGCSFTDeletionTimeout = time.Hour

// GCSFaultToleranceEnabled: the cluster keeps its GCS state outside the head pod, asked for
// with gcsFaultToleranceOptions or, in the legacy form, the ray.io/ft-enabled annotation.
func GCSFaultToleranceEnabled(spec *rayv1.RayClusterSpec, annotations map[string]string) bool {
	return spec.GcsFaultToleranceOptions != nil || strings.EqualFold(annotations[rayv1.FTEnabledKey], "true")
}

// GCSFaultToleranceBackend is the effective backend: redis unless rocksdb is asked for.
func GCSFaultToleranceBackend(o *rayv1.GcsFaultToleranceOptions) rayv1.GcsFaultToleranceBackend {
	if o == nil || o.Backend == "" {
		return rayv1.GcsFTBackendRedis
	}
	return o.Backend
}

// ExternalStorageNamespace is the cluster's key namespace in Redis: the option, else the
// legacy annotation, else the cluster's UID (unique, and stable for the cluster's life).
func ExternalStorageNamespace(rc *rayv1.RayCluster) string {
	if o := rc.Spec.GcsFaultToleranceOptions; o != nil && o.ExternalStorageNamespace != "" {
		return o.ExternalStorageNamespace
	}
	if v, ok := rc.Annotations[rayv1.ExternalStorageNamespaceKey]; ok {
		return v
	}
	return string(rc.UID)
}

// ParseGCSFTDeletionTimeout reads ray.io/gcs-ft-deletion-timeout: a Go duration ("90s",
// "10m") or whole seconds ("600"), greater than zero. The bound, MaxGCSFTDeletionTimeout, is
// admission's (a new value above it is refused) and GCSFTDeletionTimeout's (it clamps).
func ParseGCSFTDeletionTimeout(v string) (time.Duration, error) {
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		switch {
		case n <= 0:
			return 0, fmt.Errorf("must be greater than 0 seconds")
		case n > int64(time.Duration(1<<62)/time.Second):
			return time.Duration(1 << 62), nil // above any bound, without overflowing
		}
		return time.Duration(n) * time.Second, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		return 0, fmt.Errorf("must be a duration such as 10m or 90s, or whole seconds")
	}
	if d <= 0 {
		return 0, fmt.Errorf("must be greater than 0")
	}
	return d, nil
}

// GCSFTDeletionTimeout is the cluster's deletion timeout; an unreadable annotation (stored
// while the webhook was off) counts as the default, and one above the bound (stored before
// the bound, or by KubeRay) as the bound.
func GCSFTDeletionTimeout(annotations map[string]string) time.Duration {
	if v, ok := annotations[rayv1.GCSFTDeletionTimeoutKey]; ok {
		if d, err := ParseGCSFTDeletionTimeout(v); err == nil {
			return min(d, MaxGCSFTDeletionTimeout)
		}
	}
	return DefaultGCSFTDeletionTimeout
}

// RedisCleanupJobName is the name of the Job that deletes a cluster's Redis keys. It is
// also a label value on the Job's pods, so a long one keeps its last 63 characters and a
// leading punctuation mark becomes "r", as KubeRay names it (so either operator finds the
// other's Job).
func RedisCleanupJobName(cluster string) string {
	name := cluster + "-redis-cleanup"
	if len(name) > MaxLabelValueLength {
		name = name[len(name)-MaxLabelValueLength:]
	}
	if name[0] == '-' || name[0] == '.' || name[0] == '_' {
		name = "r" + name[1:]
	}
	return name
}
