package webhooks

import (
	"context"

	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
)

// rayJobValidator admits RayJobs: every rule of internal/validation, with the Pod Security
// and quotas of the namespace for the pods the job would create (its cluster's and its
// submitter's), and cert-manager's API for a cluster with mutual TLS.
type rayJobValidator struct {
	rayAdmission
}

func (v *rayJobValidator) Handle(ctx context.Context, req admission.Request) admission.Response {
	return validateRay(ctx, req, v.decoder, v.budget, rayv1.RayJobKind, v.admit)
}

func (v *rayJobValidator) admit(ctx context.Context, ns string, old, obj *rayv1.RayJob) (field.ErrorList, []string) {
	if obj.Namespace == "" {
		obj.Namespace = ns // the namespace of the objects it creates
	}
	errs, warnings := v.validator.AdmitRayJob(v.namespaces.facts(ctx, ns), old, obj)
	var oldSpec *rayv1.RayClusterSpec
	if old != nil {
		oldSpec = old.Spec.RayClusterSpec
	}
	errs = append(errs, v.certManagerErrors(ctx, ns, obj, oldSpec)...)
	return v.dryRun.rayJob(ctx, ns, old, obj, errs, warnings)
}
