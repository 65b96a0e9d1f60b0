package webhooks

import (
	"context"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/raygate/raygate/internal/promgauge"
)

// rejections counts denied admission requests. controller-runtime's own webhook metrics
// count requests by HTTP code, which is 200 for a denial too, so they cannot tell an
// apply that was refused from one that passed.
var rejections = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "raygate_webhook_rejections_total",
	Help: "Admission requests a raygate webhook denied, by webhook path and the denial's reason (Invalid: the object breaks a rule; Forbidden: the admin's policy or a disabled feature gate; BadRequest: not decodable; InternalError).",
}, []string{"webhook", "reason"})

// RegisterMetrics adds the webhook metrics to reg (the manager's registry, served on
// /metrics), replacing those of an earlier manager in the process. The validating
// webhooks' Invalid series start at 0, so a rate over them exists before the first denial.
func RegisterMetrics(reg prometheus.Registerer) error {
	for _, path := range []string{ValidateRayClusterPath, ValidateRayServicePath, ValidateRayJobPath, ValidateRayCronJobPath, ValidateDeletingPath} {
		rejections.WithLabelValues(path, string(metav1.StatusReasonInvalid))
	}
	return promgauge.Register(reg, rejections)
}

// counted is a handler whose denials are counted under its path.
type counted struct {
	path string
	next admission.Handler
}

func (c counted) Handle(ctx context.Context, req admission.Request) admission.Response {
	resp := c.next.Handle(ctx, req)
	if !resp.Allowed {
		rejections.WithLabelValues(c.path, denialReason(resp)).Inc()
	}
	return resp
}

// denialReason is the reason label of a denied response. admission.Errored sets only a
// code: 400 is a BadRequest, other 5xx/4xx codes an InternalError or a Forbidden.
func denialReason(resp admission.Response) string {
	r := resp.Result
	switch {
	case r != nil && r.Reason != "":
		return string(r.Reason)
	case r != nil && r.Code == http.StatusBadRequest:
		return string(metav1.StatusReasonBadRequest)
	case r != nil && r.Code >= http.StatusInternalServerError:
		return string(metav1.StatusReasonInternalError)
	}
	return string(metav1.StatusReasonForbidden)
}
