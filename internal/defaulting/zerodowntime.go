package defaulting

import (
	"strings"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
)

// EnvEnableZeroDowntime, set to "false" (any case) on the operator, makes a RayService whose
// spec sets no upgrade strategy keep its cluster when rayClusterConfig changes (the None
// strategy), as KubeRay's ENABLE_ZERO_DOWNTIME does for users without room for two
// clusters. spec.upgradeStrategy.type, when set, takes precedence.
const EnvEnableZeroDowntime = "ENABLE_ZERO_DOWNTIME"

// ZeroDowntime reads the operator's ENABLE_ZERO_DOWNTIME value: only "false" turns it off.
func ZeroDowntime(env string) bool { return !strings.EqualFold(env, "false") }

// UpgradeTypeOf is a RayService's upgrade strategy as KubeRay decides it: the spec's type
// when set; otherwise NewCluster, or None when zero-downtime upgrades are off.
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
