package webhooks_test

import (
	"context"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"

	"github.com/raygate/raygate/test/builders"
	"github.com/raygate/raygate/webhooks"
)

// With ENABLE_ZERO_DOWNTIME=false on the operator the mutating webhook leaves an unset
// upgrade strategy type unset, so the controller follows the setting for the object.
func TestMutatorLeavesTheUpgradeTypeUnsetWithZeroDowntimeOff(t *testing.T) {
	svc := builders.RayService("svc", "ns").Obj()
	svc.Spec.UpgradeStrategy = nil
	for _, tc := range []struct {
		disable bool
		want    bool // a patch adds /spec/upgradeStrategy
	}{{false, true}, {true, false}} {
		h := webhooks.Handlers(webhooks.Options{Gates: gateOn, DisableZeroDowntime: tc.disable})[webhooks.MutateRayServicePath]
		resp := h.Handle(context.Background(), request(admissionv1.Create, raw(t, svc), nil))
		if !resp.Allowed {
			t.Fatalf("denied: %v", resp.Result)
		}
		added := false
		for _, p := range resp.Patches {
			added = added || p.Path == "/spec/upgradeStrategy"
		}
		if added != tc.want {
			t.Errorf("DisableZeroDowntime=%v: upgradeStrategy defaulted %v, want %v (%v)", tc.disable, added, tc.want, resp.Patches)
		}
	}
}
