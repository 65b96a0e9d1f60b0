// Package validation checks RayCluster and RayService objects. The validating webhook and
// both controllers call it. Every function returns all problems at once as a field.ErrorList
// with exact paths, plus warnings for legal-but-risky specs.
package validation

import (
	"k8s.io/apimachinery/pkg/util/validation/field"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/features"
)

// RayCluster validates a (defaulted) RayCluster on create.
func RayCluster(rc *rayv1.RayCluster, gates features.Gates) (field.ErrorList, []string) {
	return nil, nil // TODO(admission): implement
}

// RayClusterUpdate validates an update of a RayCluster.
func RayClusterUpdate(old, rc *rayv1.RayCluster, gates features.Gates) (field.ErrorList, []string) {
	return RayCluster(rc, gates)
}

// RayService validates a (defaulted) RayService on create.
func RayService(svc *rayv1.RayService, gates features.Gates) (field.ErrorList, []string) {
	return nil, nil // TODO(admission): implement
}

// RayServiceUpdate validates an update of a RayService.
func RayServiceUpdate(old, svc *rayv1.RayService, gates features.Gates) (field.ErrorList, []string) {
	return RayService(svc, gates)
}
