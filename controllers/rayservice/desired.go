package rayservice

import (
	"k8s.io/apimachinery/pkg/util/validation/field"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/defaulting"
	"github.com/raygate/raygate/internal/features"
	"github.com/raygate/raygate/internal/validation"
)

// desired is the RayService's spec as the plan reads it: defaulted, validated as the
// admission webhook would, and digested into what the decisions compare.
type desired struct {
	// Service is the RayService with its spec defaulted (its status is left empty: the plan
	// gets the stored status separately).
	Service *rayv1.RayService
	// Invalid, when set, is why the spec is rejected; nothing below is set, and nothing is
	// created or deleted for the RayService until the spec is fixed.
	Invalid  string
	Goal     goal
	Strategy rayv1.RayServiceUpgradeType
	Pacing   pacing
	Serve    *serveConfig
	// Version is this raygate's version, stamped on the clusters it creates.
	Version string
}

// admit defaults a copy of the RayService and validates it as the admission webhook would,
// so a spec stored while the webhook was off cannot make the controller misbehave.
func admit(svc *rayv1.RayService, gates features.Gates, version string) *desired {
	s := svc.DeepCopy()
	s.Status = rayv1.RayServiceStatuses{}
	defaulting.RayService(s)
	want := &desired{Service: s, Version: version}
	errs, _ := validation.RayService(s, gates)
	if len(errs) == 0 {
		var err error
		if want.Serve, err = parseServeConfig(s.Spec.ServeConfigV2); err != nil {
			errs = append(errs, field.Invalid(field.NewPath("spec", "serveConfigV2"), "", err.Error()))
		} else if want.Goal, err = newGoal(s.Spec.RayClusterSpec); err != nil {
			errs = append(errs, field.InternalError(field.NewPath("spec", "rayClusterConfig"), err))
		}
	}
	if len(errs) > 0 {
		return &desired{Service: s, Version: version, Invalid: errs.ToAggregate().Error()}
	}
	want.Strategy, want.Pacing = strategyOf(&s.Spec), pacingOf(&s.Spec)
	return want
}

func (d *desired) incremental() bool { return d.Strategy == rayv1.NewClusterWithIncrementalUpgrade }

// deletionDelay is rayClusterDeletionDelaySeconds with its default, never negative.
func (d *desired) deletionDelay() int32 { return deletionDelaySeconds(&d.Service.Spec) }

// gatewayClassName is the GatewayClass of the RayService's Gateway.
func (d *desired) gatewayClassName() string {
	if o := d.Service.Spec.UpgradeStrategy; o != nil && o.ClusterUpgradeOptions != nil {
		return o.ClusterUpgradeOptions.GatewayClassName
	}
	return ""
}
