package v1

// Keys and names of GCS fault tolerance (KubeRay's, so clusters move between operators).
const (
	// ExternalStorageNamespaceKey names the cluster's key namespace in the external Redis:
	// on a RayCluster (legacy form, without gcsFaultToleranceOptions) it chooses it, on the
	// head pod and the cleanup Job it records it.
	ExternalStorageNamespaceKey = "ray.io/external-storage-namespace"
	// GCSFTDeletionTimeoutKey bounds how long deleting a fault-tolerant cluster waits for its
	// Redis cleanup (a Go duration such as "10m", or whole seconds); then the finalizer is
	// released anyway.
	GCSFTDeletionTimeoutKey = "ray.io/gcs-ft-deletion-timeout"
	// GCSFTRedisCleanupFinalizer keeps a fault-tolerant cluster until its Redis keys are
	// deleted (or the deletion timeout passed).
	GCSFTRedisCleanupFinalizer = "ray.io/gcs-ft-redis-cleanup-finalizer"
)
