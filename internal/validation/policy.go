package validation

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/raypod"
)

// Policy is what a cluster admin allows tenants, beyond the rules every object follows
// (manager flags --allowed-*, --pod-security-*). The zero value allows everything but
// dashboard Ingresses and checks Pod Security as the API server would: the controllers
// validate with it, so a policy never stops them serving objects stored before it applied
// (the Ingress policy is the exception: the RayCluster controller enforces it on its own).
// Admission only (create and update, ratcheted by field path).
type Policy struct {
	// AllowedGatewayClasses are the GatewayClasses an incremental upgrade may use; empty: any.
	AllowedGatewayClasses []string
	// AllowedSharedGateways are the Gateways ("<namespace>/<name>" or "<namespace>/*") a
	// RayService may attach its routes to with raygate.ray.io/gateway; empty: none (the
	// feature is off).
	AllowedSharedGateways []string
	// Ingress is the policy for the dashboard Ingress of headGroupSpec.enableIngress; the
	// zero value allows none (ingresspolicy.go). The controller enforces it too.
	Ingress raypod.IngressPolicy
	// AllowedServiceTypes are the Service types headGroupSpec.serviceType,
	// headGroupSpec.headService and a RayService's serveService may ask for; empty: any
	// (ExternalName is never allowed).
	AllowedServiceTypes []corev1.ServiceType
	// AllowedImageRegistries are the registry hosts images may come from; empty: any.
	AllowedImageRegistries []string
	// PodSecurity says what admission does with the Pod Security of the pods raygate would
	// create; the zero value is PodSecurityEnforce.
	PodSecurity PodSecurityMode
	// PodSecurityExemptNamespaces are not checked for Pod Security, like the namespaces the
	// API server's PodSecurity configuration exempts (which raygate cannot read).
	PodSecurityExemptNamespaces []string
	// BatchScheduler is the operator's --batch-scheduler (empty: none); a RayCluster or
	// RayService with labels for another batch scheduler gets a warning.
	BatchScheduler string
	// TokenAuthenticationOff is an operator without --token-authentication: it may not get or
	// create Secrets, so authOptions.mode token is refused. The zero value allows it.
	TokenAuthenticationOff bool
	// PodSettings are what the operator's configuration and environment change in the pods
	// it builds (the admin's sidecars, labels, annotations, environment; KubeRay's
	// switches): admission checks the pods it would create with them. A template container
	// named like one of the admin's sidecars is refused.
	PodSettings raypod.Settings
}

// PodSecurityMode is how admission treats the Pod Security of the pods raygate would create.
type PodSecurityMode string

const (
	// PodSecurityEnforce rejects what the namespace's enforce level would refuse at pod
	// creation, and warns for its warn and audit levels.
	PodSecurityEnforce PodSecurityMode = "enforce"
	// PodSecurityWarn only warns, for every level.
	PodSecurityWarn PodSecurityMode = "warn"
	// PodSecurityOff does not check.
	PodSecurityOff PodSecurityMode = "off"
)

// DefaultAllowedServiceTypes is the manager's default: Services stay inside the cluster.
var DefaultAllowedServiceTypes = []corev1.ServiceType{corev1.ServiceTypeClusterIP}

// Where each admin setting is changed, for error messages.
const (
	gatewayClassesSetting = "the manager's --allowed-gateway-classes, Helm value policy.allowedGatewayClasses"
	serviceTypesSetting   = "the manager's --allowed-service-types, Helm value policy.allowedServiceTypes"
	registriesSetting     = "the manager's --allowed-image-registries, Helm value policy.allowedImageRegistries"
)

// policyCluster checks a cluster spec against the admin's Service types and registries.
func (c *check) policyCluster(spec *rayv1.RayClusterSpec, path *field.Path) field.ErrorList {
	if !c.admission() {
		return nil
	}
	head := &spec.HeadGroupSpec
	// Paths are built only for an error.
	headPath := func() *field.Path { return path.Child("headGroupSpec") }
	templatePath := func(i int) func() *field.Path {
		return func() *field.Path { return path.Child("workerGroupSpecs").Index(i).Child("template", "spec") }
	}
	var errs field.ErrorList
	// Without a list every Service type but ExternalName (its own rule) and every registry
	// is allowed: the paths are not built for nothing.
	if len(c.policy.AllowedServiceTypes) > 0 {
		errs = append(errs, c.serviceType(head.ServiceType, headPath().Child("serviceType"))...)
		if head.HeadService != nil {
			errs = append(errs, c.serviceType(head.HeadService.Spec.Type, headPath().Child("headService", "spec", "type"))...)
		}
	}
	if len(c.policy.AllowedImageRegistries) > 0 {
		errs = append(errs, c.registries(&head.Template.Spec, headPath().Child("template", "spec"))...)
		for i := range spec.WorkerGroupSpecs {
			errs = append(errs, c.registries(&spec.WorkerGroupSpecs[i].Template.Spec, path.Child("workerGroupSpecs").Index(i).Child("template", "spec"))...)
		}
	}
	if o := spec.AutoscalerOptions; o != nil && o.Image != nil {
		errs = append(errs, c.registry(*o.Image, path.Child("autoscalerOptions", "image"))...)
	}
	// The history server collector runs in every Ray pod: its image (the default one when
	// collectorOptions.image is unset) is held to the allow-list like the templates' images.
	if raypod.WantsHistoryCollector(spec) {
		image := raypod.DefaultCollectorImage
		if o := spec.HistoryServerOptions.CollectorOptions; o.Image != nil && *o.Image != "" {
			image = *o.Image
		}
		errs = append(errs, c.registry(image, path.Child("historyServerOptions", "collectorOptions", "image"))...)
	}
	d := c.policy.PodSettings.Defaults
	errs = append(errs, sidecarNameClashes(&head.Template.Spec, d.HeadSidecars, "headSidecarContainers",
		func() *field.Path { return headPath().Child("template", "spec") })...)
	for i := range spec.WorkerGroupSpecs {
		errs = append(errs, sidecarNameClashes(&spec.WorkerGroupSpecs[i].Template.Spec, d.WorkerSidecars, "workerSidecarContainers", templatePath(i))...)
	}
	return errs
}

// sidecarNameClashes refuses template containers (or init containers: one namespace in a
// pod) named like a sidecar the operator appends to the pod: the pod would have two
// containers of one name, which the API server refuses when raygate creates it. path is
// the pod spec's, built only for an error.
func sidecarNameClashes(spec *corev1.PodSpec, sidecars []corev1.Container, setting string, path func() *field.Path) field.ErrorList {
	if len(sidecars) == 0 {
		return nil
	}
	var errs field.ErrorList
	for _, list := range []struct {
		field      string
		containers []corev1.Container
	}{{"initContainers", spec.InitContainers}, {"containers", spec.Containers}} {
		for i, ctr := range list.containers {
			if slices.ContainsFunc(sidecars, func(s corev1.Container) bool { return s.Name == ctr.Name }) {
				errs = append(errs, field.Invalid(path().Child(list.field).Index(i).Child("name"), ctr.Name,
					fmt.Sprintf("the operator adds a sidecar of this name to every such pod (%s of its configuration): choose another name", setting)))
			}
		}
	}
	return errs
}

// policyService checks what a RayService adds: its serve Service type and GatewayClass.
func (c *check) policyService(svc *rayv1.RayService) field.ErrorList {
	if !c.admission() {
		return nil
	}
	var errs field.ErrorList
	if s := svc.Spec.ServeService; s != nil {
		errs = append(errs, c.serviceType(s.Spec.Type, specPath.Child("serveService", "spec", "type"))...)
	}
	if name, ok := GatewayClassToCheck(svc); ok && !c.policy.AllowsGatewayClass(name) {
		errs = append(errs, c.related(field.Forbidden(gatewayClassNamePath, fmt.Sprintf("GatewayClass %q is not allowed here; allowed: %s (%s)",
			name, strings.Join(c.policy.AllowedGatewayClasses, ", "), gatewayClassesSetting)), upgradeTypePath))
	}
	return errs
}

// AllowsGatewayClass reports whether an incremental upgrade may use a GatewayClass.
func (p Policy) AllowsGatewayClass(name string) bool {
	return len(p.AllowedGatewayClasses) == 0 || slices.Contains(p.AllowedGatewayClasses, name)
}

// AllowsServiceType reports whether a Service raygate creates may have a type; unset means
// ClusterIP. ExternalName is never allowed (serviceoverrides.go).
func (p Policy) AllowsServiceType(t corev1.ServiceType) bool {
	if t == "" {
		t = corev1.ServiceTypeClusterIP
	}
	return t != corev1.ServiceTypeExternalName && (len(p.AllowedServiceTypes) == 0 || slices.Contains(p.AllowedServiceTypes, t))
}

// serviceType: ExternalName has its own rule and message (serviceoverrides.go).
func (c *check) serviceType(t corev1.ServiceType, path *field.Path) field.ErrorList {
	allowed := c.policy.AllowedServiceTypes
	if t == corev1.ServiceTypeExternalName || c.policy.AllowsServiceType(t) {
		return nil
	}
	names := make([]string, len(allowed))
	for i, a := range allowed {
		names[i] = string(a)
	}
	return field.ErrorList{field.Forbidden(path, fmt.Sprintf("Service type %s is not allowed here; allowed: %s (%s)",
		t, strings.Join(names, ", "), serviceTypesSetting))}
}

// registries checks the images of a pod template's containers and init containers; the
// containers raygate adds run these images too (the autoscaler sidecar the head's Ray image
// unless autoscalerOptions.image is set, wait-gcs-ready the worker's).
func (c *check) registries(spec *corev1.PodSpec, path *field.Path) field.ErrorList {
	if len(c.policy.AllowedImageRegistries) == 0 {
		return nil
	}
	var errs field.ErrorList
	for i := range spec.InitContainers {
		errs = append(errs, c.registry(spec.InitContainers[i].Image, path.Child("initContainers").Index(i).Child("image"))...)
	}
	for i := range spec.Containers {
		errs = append(errs, c.registry(spec.Containers[i].Image, path.Child("containers").Index(i).Child("image"))...)
	}
	return errs
}

func (c *check) registry(image string, path *field.Path) field.ErrorList {
	allowed := c.policy.AllowedImageRegistries
	if image == "" || len(allowed) == 0 {
		return nil // a missing image has its own rule
	}
	reg := ImageRegistry(image)
	if slices.Contains(allowed, reg) {
		return nil
	}
	return field.ErrorList{field.Forbidden(path, fmt.Sprintf("%q is from registry %s, which is not allowed here; allowed: %s (%s)",
		image, reg, strings.Join(allowed, ", "), registriesSetting))}
}

// ImageRegistry is the registry host of an image reference, as container runtimes read it:
// the first part of the name when it looks like a host (it has a dot or a port, or is
// localhost), else Docker Hub (docker.io). The chart's allowed-registries
// ValidatingAdmissionPolicy reads it the same way.
func ImageRegistry(image string) string {
	first, _, found := strings.Cut(image, "/")
	if found && (strings.ContainsAny(first, ".:") || first == "localhost") {
		return first
	}
	return "docker.io"
}
