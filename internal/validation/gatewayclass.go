package validation

import (
	"fmt"

	utilvalidation "k8s.io/apimachinery/pkg/util/validation"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
)

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
