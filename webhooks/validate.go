package webhooks

import (
	"context"
	"fmt"
	"net/http"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/validation"
)

// rayAdmission is what the ray.io validating handlers share: the decoder, the rules, what
// they look up (the namespace, cert-manager's API), the pod dry run and the time budget.
type rayAdmission struct {
	decoder     objectDecoder
	validator   validation.Validator
	namespaces  namespaceLookup
	certManager certManagerLookup
	dryRun      podDryRun
	budget      time.Duration
}

// certManagerErrors: a cluster with mutual TLS (obj, path as TLSClusterPath finds it) needs
// cert-manager's API in namespace ns, unless the stored cluster (oldSpec, nil on create) had
// it already.
func (a rayAdmission) certManagerErrors(ctx context.Context, ns string, obj any, oldSpec *rayv1.RayClusterSpec) field.ErrorList {
	path, ok := validation.TLSClusterPath(obj)
	if !ok {
		return nil
	}
	return validation.CertManagerErrors(oldSpec, path, a.certManager.state(ctx, ns))
}

type rayClusterValidator struct {
	rayAdmission
}

func (v *rayClusterValidator) Handle(ctx context.Context, req admission.Request) admission.Response {
	return validateRay(ctx, req, v.decoder, v.budget, rayv1.RayClusterKind, v.admit)
}

func (v *rayClusterValidator) admit(ctx context.Context, ns string, old, obj *rayv1.RayCluster) (field.ErrorList, []string) {
	errs, warnings := v.validator.AdmitRayCluster(v.namespaces.facts(ctx, ns), old, obj)
	var oldSpec *rayv1.RayClusterSpec
	if old != nil {
		oldSpec = &old.Spec
	}
	errs = append(errs, v.certManagerErrors(ctx, ns, obj, oldSpec)...)
	return v.dryRun.rayCluster(ctx, ns, old, obj, errs, warnings)
}

type rayServiceValidator struct {
	rayAdmission
	gatewayClasses gatewayClassLookup
	sharedGateways sharedGatewayLookup
}

func (v *rayServiceValidator) Handle(ctx context.Context, req admission.Request) admission.Response {
	return validateRay(ctx, req, v.decoder, v.budget, rayv1.RayServiceKind, v.admit)
}

func (v *rayServiceValidator) admit(ctx context.Context, namespace string, old, obj *rayv1.RayService) (field.ErrorList, []string) {
	ns := v.namespaces.facts(ctx, namespace)
	errs, warnings := v.validator.AdmitRayService(ns, old, obj)
	// A shared Gateway the policy forbids is an error already.
	if a, ok := validation.SharedGatewayToCheck(obj); ok && v.validator.Policy.AllowsSharedGateway(*a.Gateway) {
		state, gw := v.sharedGateways.get(ctx, *a.Gateway)
		if obj.Namespace == "" {
			obj.Namespace = namespace
		}
		warnings = append(warnings, validation.SharedGatewayWarnings(obj, a, state, gw, ns)...)
	}
	if e, w := validation.UpgradePolicyAnnotation(old, obj); len(e)+len(w) > 0 {
		errs, warnings = append(errs, e...), append(warnings, w...)
	}
	// A GatewayClass the policy forbids is an error already; whether it exists is beside the point.
	if name, ok := validation.GatewayClassToCheck(obj); ok && v.validator.Policy.AllowsGatewayClass(name) {
		warnings = append(warnings, validation.GatewayClassWarnings(name, v.gatewayClasses.state(ctx, name))...)
	}
	var oldSpec *rayv1.RayClusterSpec
	if old != nil {
		oldSpec = &old.Spec.RayClusterSpec
	}
	errs = append(errs, v.certManagerErrors(ctx, namespace, obj, oldSpec)...)
	return v.dryRun.rayService(ctx, namespace, old, obj, errs, warnings)
}

// rayObject is a ray.io kind under review, as a pointer to T.
type rayObject[T any] interface {
	*T
	runtime.Object
	metav1.Object
}

// validateRay is what every ray.io validating handler does around its rules: an update that
// changes nothing is allowed as it is; the object is decoded, and the old one on update (nil on
// create); admit checks it in the namespace under review within the handler's budget; the
// answer lists every error.
func validateRay[T any, P rayObject[T]](ctx context.Context, req admission.Request, d objectDecoder, budget time.Duration, kind string,
	admit func(ctx context.Context, namespace string, old, obj P) (field.ErrorList, []string)) admission.Response {
	if unchangedUpdate(req) {
		return admission.Allowed("")
	}
	obj, old := P(new(T)), P(new(T))
	if resp, ok := decode(d, req, obj, old); !ok {
		return resp
	}
	if req.Operation != admissionv1.Update {
		old = nil
	}
	ctx, cancel := withBudget(ctx, budget)
	defer cancel()
	errs, warnings := admit(ctx, namespaceOf(req, obj), old, obj)
	return respond(ctx, kind, obj, errs, warnings)
}

// namespaceOf is the namespace of the object under review.
func namespaceOf(req admission.Request, obj metav1.Object) string {
	if req.Namespace != "" {
		return req.Namespace
	}
	return obj.GetNamespace()
}

// decode fills obj (and old on update). It returns ok=false with the response to send when
// there is nothing to validate (other operations) or the request cannot be decoded.
func decode(d objectDecoder, req admission.Request, obj, old runtime.Object) (admission.Response, bool) {
	switch req.Operation {
	case admissionv1.Create:
	case admissionv1.Update:
		if err := d.Decode(req.Namespace, req.OldObject.Raw, old); err != nil {
			return notDecoded(req, req.OldObject.Raw, old, err), false
		}
	default:
		return admission.Allowed(""), false
	}
	if err := d.Decode(req.Namespace, req.Object.Raw, obj); err != nil {
		return notDecoded(req, req.Object.Raw, obj, err), false
	}
	return admission.Response{}, true
}

// notDecoded answers for an object that does not decode into its Go type: typeErrors, or a
// 400 naming no Go type when none is found.
func notDecoded(req admission.Request, raw []byte, into runtime.Object, _ error) admission.Response {
	if resp, ok := typeErrorsResponse(req, raw, into); ok {
		return resp
	}
	return admission.Errored(http.StatusBadRequest, fmt.Errorf("the %s does not match its schema", req.Kind.Kind))
}

// typeErrorsResponse is one 422 Invalid status listing each value of raw of the wrong type
// for into at its field (typeErrors), as the API server lists schema violations; ok is false
// when none is found.
func typeErrorsResponse(req admission.Request, raw []byte, into runtime.Object) (admission.Response, bool) {
	errs := typeErrors(raw, into)
	if len(errs) == 0 {
		return admission.Response{}, false
	}
	status := apierrors.NewInvalid(schema.GroupKind{Group: req.Kind.Group, Kind: req.Kind.Kind}, req.Name, errs).Status()
	return admission.Response{AdmissionResponse: admissionv1.AdmissionResponse{Allowed: false, Result: &status}}, true
}

// respond turns validation results into an admission response: allowed with warnings, or
// denied with one 422 Invalid status that lists every error with its field path (kubectl
// prints them all), warnings included.
func respond(ctx context.Context, kind string, obj metav1.Object, errs field.ErrorList, warnings []string) admission.Response {
	warnings = append(warnings, budgetWarnings(ctx)...)
	if len(errs) == 0 {
		return admission.Allowed("").WithWarnings(warnings...)
	}
	name := nameOf(obj.GetName(), obj.GetGenerateName())
	// The request logger already names the object and the user.
	logf.FromContext(ctx).V(1).Info("rejected", "errors", len(errs))
	status := apierrors.NewInvalid(rayv1.Kind(kind), name, errs).Status()
	return admission.Response{AdmissionResponse: admissionv1.AdmissionResponse{
		Allowed:  false,
		Result:   &status,
		Warnings: warnings,
	}}
}
