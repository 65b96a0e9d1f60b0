package webhooks

import (
	"context"

	admissionv1 "k8s.io/api/admission/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	raygatev1alpha1 "github.com/raygate/raygate/apis/raygate/v1alpha1"
	"github.com/raygate/raygate/internal/validation"
)

// +kubebuilder:webhook:path=/validate-raygate-ray-io-v1alpha1-upgradepolicy,mutating=false,failurePolicy=fail,sideEffects=None,groups=raygate.ray.io,resources=upgradepolicies,verbs=create;update,versions=v1alpha1,name=vupgradepolicy.raygate.ray.io,admissionReviewVersions=v1,timeoutSeconds=5,matchPolicy=Equivalent

// ValidateUpgradePolicyPath is where the UpgradePolicy validating webhook is served.
const ValidateUpgradePolicyPath = "/validate-raygate-ray-io-v1alpha1-upgradepolicy"

type upgradePolicyValidator struct {
	decoder objectDecoder
}

func (v *upgradePolicyValidator) Handle(ctx context.Context, req admission.Request) admission.Response {
	obj, old := &raygatev1alpha1.UpgradePolicy{}, &raygatev1alpha1.UpgradePolicy{}
	if resp, ok := decode(v.decoder, req, obj, old); !ok {
		return resp
	}
	if req.Operation != admissionv1.Update {
		old = nil
	}
	errs := validation.UpgradePolicy(old, obj)
	if len(errs) == 0 {
		return admission.Allowed("")
	}
	status := apierrors.NewInvalid(raygatev1alpha1.Kind(raygatev1alpha1.UpgradePolicyKind), nameOf(obj.Name, obj.GenerateName), errs).Status()
	return admission.Response{AdmissionResponse: admissionv1.AdmissionResponse{Allowed: false, Result: &status}}
}

func nameOf(name, generateName string) string {
	if name == "" {
		return generateName
	}
	return name
}
