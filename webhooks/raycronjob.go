package webhooks

import (
	"context"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/defaulting"
	"github.com/raygate/raygate/internal/validation"
)

// +kubebuilder:webhook:path=/mutate-ray-io-v1-raycronjob,mutating=true,failurePolicy=fail,sideEffects=None,groups=ray.io,resources=raycronjobs,verbs=create;update,versions=v1,name=mraycronjob.ray.io,admissionReviewVersions=v1,timeoutSeconds=5,matchPolicy=Equivalent
// +kubebuilder:webhook:path=/validate-ray-io-v1-raycronjob,mutating=false,failurePolicy=fail,sideEffects=None,groups=ray.io,resources=raycronjobs,verbs=create;update,versions=v1,name=vraycronjob.ray.io,admissionReviewVersions=v1,timeoutSeconds=5,matchPolicy=Equivalent

// Paths of the RayCronJob webhooks.
const (
	MutateRayCronJobPath   = "/mutate-ray-io-v1-raycronjob"
	ValidateRayCronJobPath = "/validate-ray-io-v1-raycronjob"
)

// rayCronJobMutator defaults a RayCronJob's job template as a RayJob's spec.
func rayCronJobMutator() admission.Handler {
	return &mutator[*rayv1.RayCronJob]{newObj: func() *rayv1.RayCronJob { return &rayv1.RayCronJob{} }, apply: defaulting.RayCronJob}
}

// rayCronJobValidator admits RayCronJobs: the RayCronJob gate on create, the schedule and
// time zone, and the job template with every RayJob rule (its pods' Pod Security and quotas
// included), at spec.jobTemplate's paths.
type rayCronJobValidator struct {
	decoder    objectDecoder
	validator  validation.Validator
	namespaces namespaceLookup
	budget     time.Duration
}

func (v *rayCronJobValidator) Handle(ctx context.Context, req admission.Request) admission.Response {
	if unchangedUpdate(req) {
		return admission.Allowed("")
	}
	obj, old := &rayv1.RayCronJob{}, &rayv1.RayCronJob{}
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
		obj.Namespace = ns // the namespace of the RayJobs it creates
	}
	errs, warnings := v.validator.AdmitRayCronJob(v.namespaces.facts(ctx, ns), old, obj)
	return respond(ctx, rayv1.RayCronJobKind, &obj.ObjectMeta, errs, warnings)
}
