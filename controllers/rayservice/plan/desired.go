package plan

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/defaulting"
	"github.com/raygate/raygate/internal/features"
	"github.com/raygate/raygate/internal/validation"
)

// Desired is the RayService's spec as the plan reads it: defaulted, validated with the rules
// for stored objects, and digested into what the decisions compare.
type Desired struct {
	// Service is the RayService with its spec defaulted (its status is left empty: the plan
	// gets the stored status separately).
	Service *rayv1.RayService
	// Invalid, when set, is why the spec is rejected; nothing below is set, and nothing is
	// created or deleted for the RayService until the spec is fixed.
	Invalid  string
	Goal     goal
	Strategy rayv1.RayServiceUpgradeType
	Pacing   pacing
	Serve    *ServeConfig
	// Version is this raygate's version, stamped on the clusters it creates.
	Version string
	// Fallback, when set, says why the strategy the spec asks for is not the one used.
	Fallback string
	// Route is where the routes attach and what they match (the route annotations).
	Route validation.RouteAttachment
	// Capped says which worker groups were lowered to the admin's pod bounds ("": none).
	Capped string
}

// Admit defaults a copy of the RayService and validates it with the rules for stored
// objects, so a spec stored while the webhook was off cannot make the controller
// misbehave, while one admitted under older rules or gates keeps being served: a strategy
// whose gate is off falls back to NewCluster, and clusters are capped at the pod bounds.
func Admit(svc *rayv1.RayService, gates features.Gates, limits validation.Limits, version string) *Desired {
	s := svc.DeepCopy()
	s.Status = rayv1.RayServiceStatuses{}
	defaulting.RayService(s)
	want := &Desired{Service: s, Version: version}
	errs := validation.Validator{Gates: gates, Limits: limits}.StoredRayService(s)
	errs = append(errs, unsafeOverrides(s)...)
	route, routeErrs := validation.ParseRouteAttachment(s.Annotations)
	errs = append(errs, routeErrs...)
	want.Route = route
	if len(errs) == 0 {
		var err error
		if want.Serve, err = ParseServeConfig(s.Spec.ServeConfigV2); err != nil {
			errs = append(errs, field.Invalid(field.NewPath("spec", "serveConfigV2"), "", err.Error()))
		} else if want.Goal, err = newGoal(svc.Spec.RayClusterSpec, s.Spec.RayClusterSpec); err != nil {
			errs = append(errs, field.InternalError(field.NewPath("spec", "rayClusterConfig"), err))
		}
	}
	if len(errs) > 0 {
		return &Desired{Service: s, Version: version, Invalid: errs.ToAggregate().Error()}
	}
	want.Strategy, want.Pacing = strategyOf(&s.Spec), pacingOf(&s.Spec)
	if want.Strategy == rayv1.NewClusterWithIncrementalUpgrade && !gates.Enabled(features.RayServiceIncrementalUpgrade) {
		want.Strategy = rayv1.NewCluster
		want.Fallback = fmt.Sprintf("spec.upgradeStrategy.type is %s, but the %s feature gate is off: the RayService keeps serving and upgrades with %s (%s)",
			rayv1.NewClusterWithIncrementalUpgrade, features.RayServiceIncrementalUpgrade, rayv1.NewCluster, validation.GateHint(string(features.RayServiceIncrementalUpgrade)))
	}
	// The hash leaves replica counts out, so capping never looks like a spec change.
	want.Capped = strings.Join(validation.CapPods(&want.Goal.Spec, limits), "; ")
	return want
}

// unsafeOverrides refuses, whatever validation let through, Service overrides that could
// send traffic outside the cluster's pods: a serve or head Service of type ExternalName, or
// with an externalName or external IPs.
func unsafeOverrides(s *rayv1.RayService) field.ErrorList {
	var errs field.ErrorList
	if o := s.Spec.ServeService; o != nil {
		errs = append(errs, unsafeSpec(field.NewPath("spec", "serveService", "spec"), string(o.Spec.Type), o.Spec.ExternalName, len(o.Spec.ExternalIPs))...)
	}
	head := s.Spec.RayClusterSpec.HeadGroupSpec
	hp := field.NewPath("spec", "rayClusterConfig", "headGroupSpec")
	errs = append(errs, unsafeSpec(hp, string(head.ServiceType), "", 0)...)
	if o := head.HeadService; o != nil {
		errs = append(errs, unsafeSpec(hp.Child("headService", "spec"), string(o.Spec.Type), o.Spec.ExternalName, len(o.Spec.ExternalIPs))...)
	}
	return errs
}

func unsafeSpec(p *field.Path, typ, externalName string, externalIPs int) field.ErrorList {
	var errs field.ErrorList
	if typ == "ExternalName" {
		errs = append(errs, field.Forbidden(p.Child("type"), "ExternalName is not allowed: raygate creates only Services that select the cluster's pods"))
	}
	if externalName != "" {
		errs = append(errs, field.Forbidden(p.Child("externalName"), "not allowed: raygate creates only Services that select the cluster's pods"))
	}
	if externalIPs > 0 {
		errs = append(errs, field.Forbidden(p.Child("externalIPs"), "not allowed: every node would intercept traffic meant for those addresses"))
	}
	return errs
}

// RestrictSharedGateway rejects a RayService whose shared Gateway the admin does not allow
// (admission refuses it; this covers objects stored past the webhook): nothing is then
// written for it, so no route attaches where it must not.
func RestrictSharedGateway(want *Desired, allowed []string) *Desired {
	if want.Invalid != "" || want.Route.Gateway == nil || !want.incremental() {
		return want
	}
	if (validation.Policy{AllowedSharedGateways: allowed}).AllowsSharedGateway(*want.Route.Gateway) {
		return want
	}
	return &Desired{Service: want.Service, Version: want.Version, Invalid: fmt.Sprintf(
		"metadata.annotations[%s]: Forbidden: Gateway %s is not in the manager's --allowed-shared-gateways", rayv1.SharedGatewayKey, want.Route.Gateway)}
}

func (d *Desired) incremental() bool { return d.Strategy == rayv1.NewClusterWithIncrementalUpgrade }

// deletionDelay is rayClusterDeletionDelaySeconds with its default, never negative.
func (d *Desired) deletionDelay() int32 { return deletionDelaySeconds(&d.Service.Spec) }

// gatewayClassName is the GatewayClass of the RayService's Gateway.
func (d *Desired) gatewayClassName() string {
	if o := d.Service.Spec.UpgradeStrategy; o != nil && o.ClusterUpgradeOptions != nil {
		return o.ClusterUpgradeOptions.GatewayClassName
	}
	return ""
}
