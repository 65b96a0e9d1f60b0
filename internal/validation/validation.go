// Package validation checks RayCluster and RayService objects. The validating webhook and
// both controllers call it. Every function returns all problems at once as a field.ErrorList
// with exact paths, plus warnings for legal-but-risky specs (see warnings.go).
//
// The functions are pure: anything they cannot know from the object (feature gates, whether
// a GatewayClass exists) is passed in. An object that is being deleted is never rejected,
// so finalizers can always be removed.
package validation

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime/schema"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/features"
	"github.com/raygate/raygate/internal/rayspec"
)

// RayCluster validates a (defaulted) RayCluster on create.
func RayCluster(rc *rayv1.RayCluster, gates features.Gates) (field.ErrorList, []string) {
	if rc == nil || rc.DeletionTimestamp != nil {
		return nil, nil
	}
	errs := validateName(&rc.ObjectMeta, rayspec.ClusterDerivedNames)
	errs = append(errs, unsupportedAnnotations(&rc.ObjectMeta)...)
	errs = append(errs, validateClusterUpgradeStrategy(rc)...)
	specErrs, warnings := validateClusterSpec(&rc.Spec, specPath)
	return append(errs, specErrs...), warnings
}

// RayClusterUpdate validates an update of a RayCluster. No RayCluster rule depends on a
// feature gate today, so an update is checked like a create, except that an object being
// deleted always passes.
func RayClusterUpdate(old, rc *rayv1.RayCluster, gates features.Gates) (field.ErrorList, []string) {
	return RayCluster(rc, gates)
}

// RayService validates a (defaulted) RayService on create.
func RayService(svc *rayv1.RayService, gates features.Gates) (field.ErrorList, []string) {
	if svc == nil || svc.DeletionTimestamp != nil {
		return nil, nil
	}
	return validateRayService(nil, svc, gates)
}

// RayServiceUpdate validates an update of a RayService: the create rules, with gated fields
// that did not change let through (ratcheting), plus no change of upgrade strategy or
// GatewayClass while an upgrade is in progress. An object being deleted always passes.
func RayServiceUpdate(old, svc *rayv1.RayService, gates features.Gates) (field.ErrorList, []string) {
	if old == nil {
		return RayService(svc, gates)
	}
	if svc == nil || svc.DeletionTimestamp != nil {
		return nil, nil
	}
	errs, warnings := validateRayService(old, svc, gates)
	return append(errs, validateNoStrategyChangeDuringUpgrade(old, svc)...), warnings
}

// validateClusterUpgradeStrategy: Recreate or None, and none at all on a cluster that a
// RayService owns (the RayService decides how its clusters are replaced).
func validateClusterUpgradeStrategy(rc *rayv1.RayCluster) field.ErrorList {
	s := rc.Spec.UpgradeStrategy
	if s == nil || s.Type == nil {
		return nil
	}
	path := upgradeTypePath
	if owner := owningRayService(rc); owner != "" {
		return field.ErrorList{field.Forbidden(path, fmt.Sprintf(
			"not allowed on a RayCluster managed by RayService %s; set spec.upgradeStrategy on the RayService instead", owner))}
	}
	switch *s.Type {
	case rayv1.RayClusterRecreate, rayv1.RayClusterUpgradeNone:
		return nil
	default:
		return field.ErrorList{field.NotSupported(path, *s.Type, []string{string(rayv1.RayClusterRecreate), string(rayv1.RayClusterUpgradeNone)})}
	}
}

// owningRayService names the RayService behind a cluster (by owner reference, or by the
// originated-from label KubeRay sets), or returns "".
func owningRayService(rc *rayv1.RayCluster) string {
	for _, ref := range rc.OwnerReferences {
		if gv, err := schema.ParseGroupVersion(ref.APIVersion); err == nil && ref.Kind == rayv1.RayServiceKind && gv.Group == rayv1.GroupVersion.Group {
			return fmt.Sprintf("%q", ref.Name)
		}
	}
	if rc.Labels[rayv1.OriginatedFromCRDLabelKey] == rayv1.RayServiceKind {
		if name := rc.Labels[rayv1.OriginatedFromCRNameLabelKey]; name != "" {
			return fmt.Sprintf("%q", name)
		}
		return "(label " + rayv1.OriginatedFromCRDLabelKey + ")"
	}
	return ""
}

// GatewayClassState is what the caller found when it looked up a RayService's GatewayClass.
type GatewayClassState int

const (
	// GatewayClassUnknown: not looked up, or the lookup failed; no warning.
	GatewayClassUnknown GatewayClassState = iota
	// GatewayClassFound: the GatewayClass exists.
	GatewayClassFound
	// GatewayClassNotFound: the Gateway API is installed but the GatewayClass does not exist.
	GatewayClassNotFound
	// GatewayAPINotInstalled: the cluster has no Gateway API CRDs.
	GatewayAPINotInstalled
)

// GatewayClassToCheck returns the GatewayClass a RayService relies on, if it uses the
// incremental strategy with a well-formed gatewayClassName; the caller looks it up and
// passes the result to GatewayClassWarnings.
func GatewayClassToCheck(svc *rayv1.RayService) (string, bool) {
	if svc == nil || svc.DeletionTimestamp != nil {
		return "", false
	}
	s := effectiveStrategy(&svc.Spec)
	if *s.Type != rayv1.NewClusterWithIncrementalUpgrade || s.ClusterUpgradeOptions == nil {
		return "", false
	}
	name := s.ClusterUpgradeOptions.GatewayClassName
	if name == "" || len(utilvalidation.IsDNS1123Subdomain(name)) > 0 {
		return "", false
	}
	return name, true
}

// GatewayClassWarnings turns the lookup result for GatewayClassToCheck's name into warnings.
func GatewayClassWarnings(name string, state GatewayClassState) []string {
	switch state {
	case GatewayClassNotFound:
		return []string{fmt.Sprintf(WarnGatewayClassNotFound, gatewayClassNamePath, name)}
	case GatewayAPINotInstalled:
		return []string{fmt.Sprintf(WarnGatewayAPINotInstalled, gatewayClassNamePath)}
	default:
		return nil
	}
}
