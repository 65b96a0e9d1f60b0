package webhooks_test

import (
	"context"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/raygate/raygate/internal/defaulting"
	"github.com/raygate/raygate/test/builders"
	"github.com/raygate/raygate/webhooks"
)

// hangingReader is an API server that accepts every read and answers none before the
// caller gives up.
type hangingReader struct{}

func (hangingReader) Get(ctx context.Context, _ client.ObjectKey, _ client.Object, _ ...client.GetOption) error {
	<-ctx.Done()
	return ctx.Err()
}

func (hangingReader) List(ctx context.Context, _ client.ObjectList, _ ...client.ListOption) error {
	<-ctx.Done()
	return ctx.Err()
}

// A RayService review makes several lookups one after the other (the namespace's labels and
// quotas, the GatewayClass...), each bounded by the lookup timeout; they share the review's
// one budget, so an API server that answers none of them costs the review its budget, not
// the sum of their timeouts (which would pass the API server's 5 s webhook timeout).
func TestLookupsShareTheReviewsBudget(t *testing.T) {
	const budget = 300 * time.Millisecond
	h := webhooks.Handlers(webhooks.Options{Gates: gateOn, Reader: hangingReader{}, Namespaces: hangingReader{}, Budget: budget})[webhooks.ValidateRayServicePath]
	svc := builders.RayService("svc", "ns").Incremental(40, 10, 30, "istio").Obj()
	defaulting.RayService(svc)
	req := request(admissionv1.Create, raw(t, svc), nil)
	req.Namespace = "ns"
	start := time.Now()
	resp := h.Handle(context.Background(), req)
	took := time.Since(start)
	if took > budget+time.Second {
		t.Errorf("the review took %s with a budget of %s: its lookups waited %s each (webhooks.DefaultLookupTimeout)", took, budget, webhooks.DefaultLookupTimeout)
	}
	if !resp.Allowed || len(resp.Warnings) != 1 {
		t.Fatalf("allowed=%v, warnings %q", resp.Allowed, resp.Warnings)
	}
	for _, missed := range []string{"the Pod Security labels of the namespace", "the ResourceQuotas of the namespace", `whether GatewayClass "istio" exists`} {
		if !strings.Contains(resp.Warnings[0], missed) {
			t.Errorf("the warning does not name %s: %q", missed, resp.Warnings[0])
		}
	}
}
