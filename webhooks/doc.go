// Package webhooks holds the admission handlers for RayCluster, RayService and RayJob: thin
// adapters over internal/defaulting and internal/validation, which read the requests' JSON
// with internal/admissionjson (objects decoded without their pod templates, or sharing them
// with earlier requests; the defaulting patch; updates that change nothing).
//
// The mutating webhooks apply the defaults and patch only what defaulting changed. The
// validating webhooks reject with one 422 Invalid status listing every problem by field
// path, and pass warnings through as admission warnings (kubectl prints "Warning: ..."); they
// then ask the API server about the pods the object would get (internal/poddryrun), within
// one time budget per review shared with their lookups (budget.go). Both answer a value of
// the wrong type with its field and expected type, never a Go decoding message
// (typeerrors.go). Neither ever blocks or changes an object that is being deleted; one
// webhook of its own refuses only the spec edits of such objects (deleting.go).
package webhooks

import admissionregistrationv1 "k8s.io/api/admissionregistration/v1"

// The webhook configuration is generated from these markers into config/webhook.
//
// +kubebuilder:webhook:path=/mutate-ray-io-v1-raycluster,mutating=true,failurePolicy=fail,sideEffects=None,groups=ray.io,resources=rayclusters,verbs=create;update,versions=v1,name=mraycluster.ray.io,admissionReviewVersions=v1,timeoutSeconds=5,matchPolicy=Equivalent
// +kubebuilder:webhook:path=/mutate-ray-io-v1-rayservice,mutating=true,failurePolicy=fail,sideEffects=None,groups=ray.io,resources=rayservices,verbs=create;update,versions=v1,name=mrayservice.ray.io,admissionReviewVersions=v1,timeoutSeconds=5,matchPolicy=Equivalent
// +kubebuilder:webhook:path=/validate-ray-io-v1-raycluster,mutating=false,failurePolicy=fail,sideEffects=None,groups=ray.io,resources=rayclusters,verbs=create;update,versions=v1,name=vraycluster.ray.io,admissionReviewVersions=v1,timeoutSeconds=5,matchPolicy=Equivalent
// +kubebuilder:webhook:path=/validate-ray-io-v1-rayservice,mutating=false,failurePolicy=fail,sideEffects=None,groups=ray.io,resources=rayservices,verbs=create;update,versions=v1,name=vrayservice.ray.io,admissionReviewVersions=v1,timeoutSeconds=5,matchPolicy=Equivalent
// +kubebuilder:webhook:path=/mutate-ray-io-v1-rayjob,mutating=true,failurePolicy=fail,sideEffects=None,groups=ray.io,resources=rayjobs,verbs=create;update,versions=v1,name=mrayjob.ray.io,admissionReviewVersions=v1,timeoutSeconds=5,matchPolicy=Equivalent
// +kubebuilder:webhook:path=/validate-ray-io-v1-rayjob,mutating=false,failurePolicy=fail,sideEffects=None,groups=ray.io,resources=rayjobs,verbs=create;update,versions=v1,name=vrayjob.ray.io,admissionReviewVersions=v1,timeoutSeconds=5,matchPolicy=Equivalent

// MatchConditions are added to every webhook of the generated configuration by `make
// manifests` (hack/webhookconditions; controller-gen's markers cannot express them): the
// API server does not call raygate's webhooks for an object that is being deleted, so its
// finalizers can be removed, and its namespace deleted, while the webhooks are down. The
// handlers let such objects through too, for API servers that skip the conditions.
var MatchConditions = []admissionregistrationv1.MatchCondition{{
	Name:       "skip-objects-being-deleted",
	Expression: "!has(object.metadata.deletionTimestamp)",
}}

// MatchConditionsFor are the matchConditions of the webhook named name: the deleting
// webhook's own (deleting.go), MatchConditions for every other.
func MatchConditionsFor(name string) []admissionregistrationv1.MatchCondition {
	if name == DeletingWebhookName {
		return DeletingMatchConditions
	}
	return MatchConditions
}

// Paths the webhook server serves; they match the markers above.
const (
	MutateRayClusterPath   = "/mutate-ray-io-v1-raycluster"
	MutateRayServicePath   = "/mutate-ray-io-v1-rayservice"
	ValidateRayClusterPath = "/validate-ray-io-v1-raycluster"
	ValidateRayServicePath = "/validate-ray-io-v1-rayservice"
	MutateRayJobPath       = "/mutate-ray-io-v1-rayjob"
	ValidateRayJobPath     = "/validate-ray-io-v1-rayjob"
	ValidateDeletingPath   = "/validate-ray-io-v1-deleting"
)
