package validation

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
)

// Why the Service overrides may not point outside the cluster's own pods. The rest of an
// override (ports, annotations, labels, ClusterIP/NodePort/LoadBalancer, headless) stays legal.
const (
	headServiceWhy  = "raygate calls the Ray dashboard through the head Service, so it would call an address the cluster's author chooses"
	serveServiceWhy = "raygate and the Gateway send Serve traffic through this Service, so it would go to an address the RayService's author chooses"
	externalIPsWhy  = "not allowed: every node sends traffic for a Service's external IPs to the Service (CVE-2020-8554), so it would intercept traffic meant for those addresses"
)

// validateHeadServiceOverride: neither headGroupSpec.serviceType nor the headService
// override may make the head Service an ExternalName or give it external IPs.
func validateHeadServiceOverride(head *rayv1.HeadGroupSpec, headPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if head.ServiceType == corev1.ServiceTypeExternalName {
		errs = append(errs, field.Forbidden(headPath.Child("serviceType"), "ExternalName is not allowed: "+headServiceWhy))
	}
	return append(errs, validateServiceOverride(head.HeadService, headPath.Child("headService"), headServiceWhy)...)
}

// validateServiceOverride rejects what would make a Service raygate creates resolve to an
// address outside the cluster's pods: type ExternalName, externalName, externalIPs.
func validateServiceOverride(svc *corev1.Service, path *field.Path, why string) field.ErrorList {
	if svc == nil {
		return nil
	}
	var errs field.ErrorList
	specPath := path.Child("spec")
	if svc.Spec.Type == corev1.ServiceTypeExternalName {
		errs = append(errs, field.Forbidden(specPath.Child("type"), "ExternalName is not allowed: "+why))
	}
	if svc.Spec.ExternalName != "" {
		errs = append(errs, field.Forbidden(specPath.Child("externalName"), "not allowed: "+why))
	}
	if len(svc.Spec.ExternalIPs) > 0 {
		errs = append(errs, field.Forbidden(specPath.Child("externalIPs"), externalIPsWhy))
	}
	return errs
}
