package defaulting

import (
	rayv1 "github.com/raygate/raygate/apis/ray/v1"
)

// UpgradeTypeOf is a RayService's upgrade strategy as KubeRay decides it: the spec's type
// when set; otherwise NewCluster, or None when zero-downtime upgrades are off (KubeRay's
// ENABLE_ZERO_DOWNTIME=false on the operator, for users without room for two clusters).
func UpgradeTypeOf(spec *rayv1.RayServiceSpec, zeroDowntime bool) rayv1.RayServiceUpgradeType {
	if s := spec.UpgradeStrategy; s != nil && s.Type != nil {
		return *s.Type
	}
	if !zeroDowntime {
		return rayv1.None
	}
	return UpgradeType
}

// RayServiceWith defaults a RayService like RayService, except that with zero-downtime
// upgrades off an unset spec.upgradeStrategy.type stays unset: the stored object keeps
// saying "no strategy chosen", so the controller follows ENABLE_ZERO_DOWNTIME for it at
// every pass, as KubeRay does, and turning the setting back on upgrades it with NewCluster.
func RayServiceWith(svc *rayv1.RayService, zeroDowntime bool) {
	if svc == nil || zeroDowntime || (svc.Spec.UpgradeStrategy != nil && svc.Spec.UpgradeStrategy.Type != nil) {
		RayService(svc)
		return
	}
	hadStrategy := svc.Spec.UpgradeStrategy != nil
	RayService(svc)
	if hadStrategy {
		svc.Spec.UpgradeStrategy.Type = nil
	} else {
		svc.Spec.UpgradeStrategy = nil
	}
}
