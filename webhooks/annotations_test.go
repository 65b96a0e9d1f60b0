package webhooks_test

import (
	"context"
	"net/http"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"

	"github.com/raygate/raygate/internal/defaulting"
	"github.com/raygate/raygate/internal/validation"
	"github.com/raygate/raygate/test/builders"
	"github.com/raygate/raygate/webhooks"
)

func TestValidatorChecksTheInitializingTimeoutAnnotation(t *testing.T) {
	h := handlers(nil)[webhooks.ValidateRayServicePath]
	for value, want := range map[string]string{
		"10m":  "",
		"1800": "",
		"soon": `RayService.ray.io "svc" is invalid: metadata.annotations[ray.io/initializing-timeout]: Invalid value: "soon": ` +
			"must be a positive Go duration (e.g. 30m, 1h30m) or a positive whole number of seconds",
		"-5m": `RayService.ray.io "svc" is invalid: metadata.annotations[ray.io/initializing-timeout]: Invalid value: "-5m": ` +
			"must be a positive Go duration (e.g. 30m, 1h30m) or a positive whole number of seconds",
	} {
		svc := builders.RayService("svc", "ns").Obj()
		svc.Annotations = map[string]string{validation.InitializingTimeoutAnnotation: value}
		defaulting.RayService(svc)
		resp := h.Handle(context.Background(), request(admissionv1.Create, raw(t, svc), nil))
		switch {
		case want == "" && !resp.Allowed:
			t.Errorf("%q refused: %v", value, resp.Result)
		case want != "" && (resp.Allowed || resp.Result.Code != http.StatusUnprocessableEntity || resp.Result.Message != want):
			t.Errorf("%q: allowed=%v %+v\nwant: %s", value, resp.Allowed, resp.Result, want)
		}
	}
}
