package webhooks

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/raygate/raygate/internal/validation"
)

// The deletion window: every other webhook, and the chart's admission policies, skip objects
// being deleted, so that finalizer removal never waits for raygate. This webhook is called
// only for an update of such an object that changes its spec or a ray.io/ annotation
// (DeletingMatchConditions), and refuses it, so what a controller still builds while a
// finalizer holds the object comes from an admitted spec. Finalizer removal and other
// metadata edits never reach it.
//
// +kubebuilder:webhook:path=/validate-ray-io-v1-deleting,mutating=false,failurePolicy=fail,sideEffects=None,groups=ray.io,resources=rayclusters;rayservices;rayjobs;raycronjobs,verbs=update,versions=v1,name=vdeleting.ray.io,admissionReviewVersions=v1,timeoutSeconds=5,matchPolicy=Equivalent

// DeletingWebhookName is the name of the webhook that refuses spec edits of objects being
// deleted; it has its own matchConditions.
const DeletingWebhookName = "vdeleting.ray.io"

// DeletingMatchConditions call the deleting webhook only for an update of an object being
// deleted that changes its spec or an annotation under validation.FrozenAnnotationPrefix
// (both must hold). A finalizer removal matches neither, so it never waits for the webhook.
// A spec change is seen in metadata.generation, which the API server raises for every change
// outside metadata and status before validating admission runs: comparing two numbers costs
// nothing, where comparing two specs costs CEL budget in proportion to their size (a spec
// near the size limit could exhaust it, and an erroring condition fails closed).
var DeletingMatchConditions = []admissionregistrationv1.MatchCondition{
	{Name: "object-being-deleted", Expression: "has(object.metadata.deletionTimestamp) && oldObject != null"},
	{Name: "spec-or-ray-annotations-changed", Expression: `object.metadata.generation != oldObject.metadata.generation ||
(has(object.metadata.annotations) ? object.metadata.annotations : {}).exists(k, k.startsWith('` + validation.FrozenAnnotationPrefix + `') &&
  (!has(oldObject.metadata.annotations) || !(k in oldObject.metadata.annotations) || oldObject.metadata.annotations[k] != object.metadata.annotations[k])) ||
(has(oldObject.metadata.annotations) ? oldObject.metadata.annotations : {}).exists(k, k.startsWith('` + validation.FrozenAnnotationPrefix + `') &&
  (!has(object.metadata.annotations) || !(k in object.metadata.annotations)))`},
}

// deletingValidator refuses spec and ray.io/ annotation edits of objects being deleted
// (validation.DeletingUpdate). The objects are read as JSON maps: the rule compares them and
// needs no kind's Go type.
type deletingValidator struct{}

func (deletingValidator) Handle(ctx context.Context, req admission.Request) admission.Response {
	if req.Operation != admissionv1.Update {
		return admission.Allowed("")
	}
	var obj, old unstructured.Unstructured
	if err := json.Unmarshal(req.Object.Raw, &obj.Object); err != nil {
		return admission.Errored(http.StatusBadRequest, fmt.Errorf("the %s is not a JSON object", req.Kind.Kind))
	}
	if err := json.Unmarshal(req.OldObject.Raw, &old.Object); err != nil {
		return admission.Errored(http.StatusBadRequest, fmt.Errorf("the stored %s is not a JSON object", req.Kind.Kind))
	}
	return respond(ctx, req.Kind.Kind, &obj, validation.DeletingUpdate(&old, &obj), nil)
}
