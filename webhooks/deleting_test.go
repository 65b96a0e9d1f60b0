package webhooks_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/test/builders"
	"github.com/raygate/raygate/webhooks"
)

func TestDeletingWebhook(t *testing.T) {
	old := builders.RayCluster("demo", "ns").Obj()
	now := metav1.Now()
	old.DeletionTimestamp = &now
	old.Finalizers = []string{rayv1.GCSFTRedisCleanupFinalizer}
	h := handlers(nil)[webhooks.ValidateDeletingPath]

	edited := old.DeepCopy()
	edited.Spec.HeadGroupSpec.Template.Spec.Containers[0].Image = "evil.example.com/ray:latest"
	edited.Annotations = map[string]string{rayv1.GCSFTDeletionTimeoutKey: "720h"}
	req := request(admissionv1.Update, raw(t, edited), raw(t, old))
	req.Kind = metav1.GroupVersionKind{Group: "ray.io", Version: "v1", Kind: "RayCluster"}
	resp := h.Handle(context.Background(), req)
	if resp.Allowed || resp.Result.Code != http.StatusUnprocessableEntity {
		t.Fatalf("spec edit of a cluster being deleted: allowed %v, %v", resp.Allowed, resp.Result)
	}
	for _, want := range []string{`RayCluster.ray.io "demo" is invalid`, "spec.headGroupSpec: Forbidden: the object is being deleted",
		"metadata.annotations[ray.io/gcs-ft-deletion-timeout]: Forbidden"} {
		if !strings.Contains(resp.Result.Message, want) {
			t.Errorf("message %q lacks %q", resp.Result.Message, want)
		}
	}

	released := old.DeepCopy()
	released.Finalizers = nil
	released.Labels = map[string]string{"phase": "leaving"}
	if resp := h.Handle(context.Background(), request(admissionv1.Update, raw(t, released), raw(t, old))); !resp.Allowed {
		t.Errorf("finalizer removal and a label: %v", resp.Result)
	}
	if resp := h.Handle(context.Background(), request(admissionv1.Update, []byte("[]"), raw(t, old))); resp.Allowed {
		t.Error("an undecodable object allowed")
	}
}

func TestDeletingWebhookConditions(t *testing.T) {
	if got := webhooks.MatchConditionsFor(webhooks.DeletingWebhookName); len(got) != 2 || !strings.Contains(got[0].Expression, "has(object.metadata.deletionTimestamp)") {
		t.Errorf("deleting webhook: %v", got)
	}
	if got := webhooks.MatchConditionsFor("vraycluster.ray.io"); len(got) != 1 || got[0].Expression != "!has(object.metadata.deletionTimestamp)" {
		t.Errorf("other webhooks: %v", got)
	}
}
