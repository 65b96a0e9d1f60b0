package webhooks

import (
	"context"

	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/defaulting"
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
// included), at spec.jobTemplate's paths. The RayJobs it creates are admitted again, each
// with its pods' dry run, when the controller creates them.
type rayCronJobValidator struct {
	rayAdmission
}

func (v *rayCronJobValidator) Handle(ctx context.Context, req admission.Request) admission.Response {
	return validateRay(ctx, req, v.decoder, v.budget, rayv1.RayCronJobKind, v.admit)
}

func (v *rayCronJobValidator) admit(ctx context.Context, ns string, old, obj *rayv1.RayCronJob) (field.ErrorList, []string) {
	if obj.Namespace == "" {
		obj.Namespace = ns // the namespace of the RayJobs it creates
	}
	return v.validator.AdmitRayCronJob(v.namespaces.facts(ctx, ns), old, obj)
}
