// Package defaulting sets the defaults of RayCluster and RayService objects. The mutating
// webhook and both controllers call it; it is idempotent.
package defaulting

import rayv1 "github.com/raygate/raygate/apis/ray/v1"

// RayCluster defaults a RayCluster in place.
func RayCluster(rc *rayv1.RayCluster) { RayClusterSpec(&rc.Spec) }

// RayClusterSpec defaults a cluster spec in place (also the rayClusterConfig of a RayService).
func RayClusterSpec(spec *rayv1.RayClusterSpec) { _ = spec } // TODO(admission): implement

// RayService defaults a RayService in place.
func RayService(svc *rayv1.RayService) { RayClusterSpec(&svc.Spec.RayClusterSpec) }
