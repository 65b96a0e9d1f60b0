package webhooks

import (
	"context"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/validation"
)

// rayJobValidator admits RayJobs: every rule of internal/validation, with the Pod Security
// and quotas of the namespace for the pods the job would create (its cluster's and its
// submitter's), and cert-manager's API for a cluster with mutual TLS.
type rayJobValidator struct {
	decoder     objectDecoder
	validator   validation.Validator
	namespaces  namespaceLookup
	certManager certManagerLookup
	dryRun      podDryRun
	budget      time.Duration
}

func (v *rayJobValidator) Handle(ctx context.Context, req admission.Request) admission.Response {
	if unchangedUpdate(req) {
		return admission.Allowed("")
	}
	obj, old := &rayv1.RayJob{}, &rayv1.RayJob{}
	if resp, ok := decode(v.decoder, req, obj, old); !ok {
		return resp
	}
	if req.Operation != admissionv1.Update {
		old = nil
	}
	ctx, cancel := withBudget(ctx, v.budget)
	defer cancel()
	ns := namespaceOf(req, &obj.ObjectMeta)
	if obj.Namespace == "" {
		obj.Namespace = ns // the namespace of the objects it creates
	}
	errs, warnings := v.validator.AdmitRayJob(v.namespaces.facts(ctx, ns), old, obj)
	if path, ok := validation.TLSClusterPath(obj); ok {
		var oldSpec *rayv1.RayClusterSpec
		if old != nil {
			oldSpec = old.Spec.RayClusterSpec
		}
		errs = append(errs, validation.CertManagerErrors(oldSpec, path, v.certManager.state(ctx, ns))...)
	}
	errs, warnings = v.dryRun.rayJob(ctx, ns, old, obj, errs, warnings)
	return respond(ctx, rayv1.RayJobKind, &obj.ObjectMeta, errs, warnings)
}
