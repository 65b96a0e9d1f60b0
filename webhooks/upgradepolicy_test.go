package webhooks_test

import (
	"context"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	raygatev1alpha1 "github.com/raygate/raygate/apis/raygate/v1alpha1"
	"github.com/raygate/raygate/test/builders"
	"github.com/raygate/raygate/webhooks"
)

// TestUpgradePolicyRejection checks the text kubectl prints after
// `Error from server (Invalid): error when creating "policy.yaml": admission webhook
// "vupgradepolicy.raygate.ray.io" denied the request: `.
func TestUpgradePolicyRejection(t *testing.T) {
	bad := &raygatev1alpha1.UpgradePolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: "raygate.ray.io/v1alpha1", Kind: "UpgradePolicy"},
		ObjectMeta: metav1.ObjectMeta{Name: "canary", Namespace: "ml"},
		Spec: raygatev1alpha1.UpgradePolicySpec{
			Gates:         []raygatev1alpha1.Gate{{Name: "error-rate", Query: `sum(rate(errors{namespace="{{tenant}}"}[1m]))`}},
			SettleSeconds: ptr.To[int32](-1),
		},
	}
	h := handlers(nil)[webhooks.ValidateUpgradePolicyPath]
	resp := h.Handle(context.Background(), request(admissionv1.Create, raw(t, bad), nil))
	want := `UpgradePolicy.raygate.ray.io "canary" is invalid: [` +
		`spec.gates[0].query: Invalid value: "sum(rate(errors{namespace=\"{{tenant}}\"}[1m]))": unknown placeholders {{tenant}}: only {{namespace}}, {{rayservice}}, {{pending}}, {{active}} may be used, ` +
		`spec.gates[0].max: Required value: set max, min or both: the bounds the value must stay within, ` +
		`spec.settleSeconds: Invalid value: -1: must be between 0 and 3600]`
	if resp.Allowed || resp.Result == nil || resp.Result.Code != 422 || resp.Result.Message != want {
		t.Fatalf("got allowed=%v %+v\nwant message %s", resp.Allowed, resp.Result, want)
	}

	good := bad.DeepCopy()
	good.Spec.Gates[0].Query, good.Spec.Gates[0].Max, good.Spec.SettleSeconds = `sum(rate(errors{namespace="{{namespace}}"}[1m]))`, "0.05", nil
	if resp := h.Handle(context.Background(), request(admissionv1.Create, raw(t, good), nil)); !resp.Allowed {
		t.Errorf("a valid policy is refused: %+v", resp.Result)
	}
	// Ratcheting: a label change on a policy stored with the bad gate is allowed.
	relabelled := bad.DeepCopy()
	relabelled.Labels = map[string]string{"team": "ml"}
	relabelled.Spec.SettleSeconds = nil
	if resp := h.Handle(context.Background(), request(admissionv1.Update, raw(t, relabelled), raw(t, bad))); !resp.Allowed {
		t.Errorf("an update that leaves the invalid gate alone is refused: %+v", resp.Result)
	}
}

func TestRayServiceUpgradePolicyAnnotation(t *testing.T) {
	svc := builders.RayService("gated", "ml").Obj() // NewCluster: nothing to gate
	svc.Annotations = map[string]string{raygatev1alpha1.UpgradePolicyAnnotation: "Canary Gates"}
	h := handlers(nil)[webhooks.ValidateRayServicePath]
	resp := h.Handle(context.Background(), request(admissionv1.Create, raw(t, svc), nil))
	if resp.Allowed || resp.Result == nil {
		t.Fatalf("an invalid policy name is allowed")
	}
	const field = "metadata.annotations[raygate.ray.io/upgrade-policy]: Invalid value: \"Canary Gates\""
	if !strings.Contains(resp.Result.Message, field) {
		t.Errorf("message %q lacks %q", resp.Result.Message, field)
	}
	svc.Annotations[raygatev1alpha1.UpgradePolicyAnnotation] = "canary"
	resp = h.Handle(context.Background(), request(admissionv1.Create, raw(t, svc), nil))
	if !resp.Allowed || len(resp.Warnings) == 0 || !strings.Contains(strings.Join(resp.Warnings, "\n"), "NewCluster upgrade switches all traffic at once") {
		t.Errorf("allowed %v warnings %v", resp.Allowed, resp.Warnings)
	}
}
