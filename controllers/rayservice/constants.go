package rayservice

import "github.com/raygate/raygate/controllers/rayservice/plan"

const (
	// serveConfigRecordSuffix names the ConfigMap (`<cluster>-serve-configs`, owned by the
	// cluster) that keeps, by hash, the serve configs the cluster was given. It is written
	// before a config is submitted, so an operator restart never loses the config a frozen
	// cluster must be sent again (during an upgrade the active cluster's config is no longer
	// in the spec), and read only when sending it.
	serveConfigRecordSuffix = "-serve-configs"

	// rayServiceKind is the value of ray.io/originated-from-crd on the RayService's objects.
	rayServiceKind = plan.RayServiceKind

	// LegacyServeConfigKey is the annotation older raygate versions recorded a cluster's
	// serve config in; the plan still reads it (plan.LegacyServeConfigKey).
	LegacyServeConfigKey = plan.LegacyServeConfigKey
)
