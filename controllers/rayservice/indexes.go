package rayservice

import (
	"context"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/controllers/raycluster"
	"github.com/raygate/raygate/controllers/rayservice/plan"
)

// Every pass lists a RayService's clusters and each cluster's pods from the cache. A label
// selector makes the cache match every RayCluster and pod of the namespace against it, so a
// pass cost grew with the namespace: with fifty RayServices upgrading in one namespace the
// label matching was about a tenth of the operator's CPU. Indexes find them directly.

// clusterServiceIndex indexes cached RayClusters by the RayService that made them (its
// ray.io/originated-from-* labels, as the pass's selector had it).
const clusterServiceIndex = "raygate.ray.io/rayservice"

// podClusterIndex is the RayCluster controller's index of cached pods by their
// ray.io/cluster label, which this controller reads too.
const podClusterIndex = raycluster.PodClusterIndex

// serviceOfCluster is the clusterServiceIndex key of a RayCluster.
func serviceOfCluster(o client.Object) []string {
	l := o.GetLabels()
	if l[rayv1.OriginatedFromCRDLabelKey] != plan.RayServiceKind || l[rayv1.OriginatedFromCRNameLabelKey] == "" {
		return nil
	}
	return []string{l[rayv1.OriginatedFromCRNameLabelKey]}
}

// indexer registers cache indexes (a manager's field indexer).
type indexer interface {
	IndexField(ctx context.Context, obj client.Object, field string, extract client.IndexerFunc) error
}

// addIndexes registers both indexes. The RayCluster controller, set up first in the same
// manager, registers the pod index already: that conflict is the index wanted.
func addIndexes(ctx context.Context, ix indexer) error {
	if err := ix.IndexField(ctx, &rayv1.RayCluster{}, clusterServiceIndex, serviceOfCluster); err != nil {
		return err
	}
	if err := ix.IndexField(ctx, &corev1.Pod{}, podClusterIndex, raycluster.ClusterOfPod); err != nil && !strings.Contains(err.Error(), "indexer conflict") {
		return err
	}
	return nil
}
