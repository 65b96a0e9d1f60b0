package webhooks_test

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/raygate/raygate/internal/defaulting"
	"github.com/raygate/raygate/webhooks"
)

// TestAdmissionAllocationBudget pins the allocations of one create review through the
// handler (request decoding, defaulting or validation, response encoding), so they cannot
// grow unnoticed. 375 of them are the JSON decoder's for the object itself (one per
// string, pointer, map and slice growth of its pod templates); the budgets leave ~10% over
// what was measured (mutate 521, validate 575 with the serve config's verdict cached).
// Allocation counts do not depend on machine load.
func TestAdmissionAllocationBudget(t *testing.T) {
	if testing.Short() {
		t.Skip("counts allocations over many reviews")
	}
	mutated := productionService()
	mutated.Spec.UpgradeStrategy.ClusterUpgradeOptions.MaxSurgePercent = nil
	for i := range mutated.Spec.RayClusterSpec.WorkerGroupSpecs {
		mutated.Spec.RayClusterSpec.WorkerGroupSpecs[i].RayStartParams = nil
	}
	validated := productionService()
	defaulting.RayService(validated)

	istio := &gatewayv1.GatewayClass{ObjectMeta: metav1.ObjectMeta{Name: "istio"}}
	hs := handlers(fake.NewClientBuilder().WithScheme(scheme()).WithObjects(istio).Build())
	for _, tt := range []struct {
		path   string
		body   []byte
		budget float64
	}{
		{webhooks.MutateRayServicePath, review(t, admissionv1.Create, mutated, nil), 580},
		{webhooks.ValidateRayServicePath, review(t, admissionv1.Create, validated, nil), 640},
	} {
		h := &webhook.Admission{Handler: hs[tt.path]}
		var failed bool
		got := testing.AllocsPerRun(100, func() {
			r := httptest.NewRequest(http.MethodPost, tt.path, bytes.NewReader(tt.body))
			r.Header.Set("Content-Type", "application/json")
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, r)
			failed = failed || rec.Code != http.StatusOK || !bytes.Contains(rec.Body.Bytes(), []byte(`"allowed":true`))
		})
		if failed {
			t.Fatalf("%s: review not allowed", tt.path)
		}
		t.Logf("%s: %.0f allocations per review (budget %.0f)", tt.path, got, tt.budget)
		if got > tt.budget {
			t.Errorf("%s: %.0f allocations per review, budget %.0f", tt.path, got, tt.budget)
		}
	}
}
