package webhooks

import (
	"context"
	"errors"
	"net/http"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	admissionv1 "k8s.io/api/admission/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

type fixed admission.Response

func (f fixed) Handle(context.Context, admission.Request) admission.Response {
	return admission.Response(f)
}

func TestRejectionsAreCountedByWebhookAndReason(t *testing.T) {
	if err := RegisterMetrics(prometheus.NewRegistry()); err != nil {
		t.Fatal(err)
	}
	invalid := admission.Response{AdmissionResponse: admissionv1.AdmissionResponse{Allowed: false,
		Result: ptrStatus(apierrors.NewInvalid(schema.GroupKind{Group: "ray.io", Kind: "RayService"}, "s", field.ErrorList{field.Required(field.NewPath("spec"), "")}).Status())}}
	cases := []struct {
		name   string
		resp   admission.Response
		reason string
		counts bool
	}{
		{"allowed", admission.Allowed(""), "", false},
		{"allowed with warnings", admission.Allowed("").WithWarnings("risky"), "", false},
		{"invalid", invalid, "Invalid", true},
		{"denied by policy", admission.Denied("no"), "Forbidden", true},
		{"undecodable", admission.Errored(http.StatusBadRequest, errors.New("bad json")), "BadRequest", true},
		{"internal", admission.Errored(http.StatusInternalServerError, errors.New("boom")), "InternalError", true},
	}
	for _, tc := range cases {
		path := ValidateRayServicePath
		before := map[string]float64{}
		for _, r := range []string{"Invalid", "Forbidden", "BadRequest", "InternalError"} {
			before[r] = testutil.ToFloat64(rejections.WithLabelValues(path, r))
		}
		got := counted{path: path, next: fixed(tc.resp)}.Handle(context.Background(), admission.Request{})
		if got.Allowed != tc.resp.Allowed {
			t.Errorf("%s: the wrapper changed the answer", tc.name)
		}
		for r, b := range before {
			want := b
			if tc.counts && r == tc.reason {
				want++
			}
			if after := testutil.ToFloat64(rejections.WithLabelValues(path, r)); after != want {
				t.Errorf("%s: rejections{reason=%s} = %g, want %g", tc.name, r, after, want)
			}
		}
	}
}

func ptrStatus(s metav1.Status) *metav1.Status { return &s }
