package plan

import (
	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/defaulting"
)

// WithUpgradeDefault is the RayService to plan for: itself, or, when zero-downtime upgrades
// are off on the operator (ENABLE_ZERO_DOWNTIME=false) and its spec sets no upgrade
// strategy type, a copy with the None strategy, as KubeRay decides it at every pass.
func WithUpgradeDefault(svc *rayv1.RayService, zeroDowntime bool) *rayv1.RayService {
	if defaulting.UpgradeTypeOf(&svc.Spec, zeroDowntime) != rayv1.None || hasUpgradeType(svc) {
		return svc
	}
	c := svc.DeepCopy()
	if c.Spec.UpgradeStrategy == nil {
		c.Spec.UpgradeStrategy = &rayv1.RayServiceUpgradeStrategy{}
	}
	none := rayv1.None
	c.Spec.UpgradeStrategy.Type = &none
	return c
}

func hasUpgradeType(svc *rayv1.RayService) bool {
	return svc.Spec.UpgradeStrategy != nil && svc.Spec.UpgradeStrategy.Type != nil
}
