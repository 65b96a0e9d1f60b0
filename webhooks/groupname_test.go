package webhooks_test

import (
	"context"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"

	"github.com/raygate/raygate/internal/defaulting"
	"github.com/raygate/raygate/test/builders"
	"github.com/raygate/raygate/webhooks"
)

// Worker group names with upper-case letters are admitted, as by KubeRay (pod names are
// lower-cased); a name that is no DNS label even lower-cased is still refused.
func TestUpperCaseWorkerGroupNamesAreAdmitted(t *testing.T) {
	h := handlers(nil)[webhooks.ValidateRayClusterPath]
	rc := builders.RayCluster("rc", "ns").WorkerGroups(builders.WorkerGroup("GPU-Workers", 1)).Obj()
	defaulting.RayCluster(rc)
	if resp := h.Handle(context.Background(), request(admissionv1.Create, raw(t, rc), nil)); !resp.Allowed {
		t.Fatalf("GPU-Workers was refused: %v", resp.Result)
	}

	rc.Spec.WorkerGroupSpecs[0].GroupName = "GPU_Workers"
	resp := h.Handle(context.Background(), request(admissionv1.Create, raw(t, rc), nil))
	if resp.Allowed || !strings.Contains(resp.Result.Message, `spec.workerGroupSpecs[0].groupName: Invalid value: "GPU_Workers"`) ||
		!strings.Contains(resp.Result.Message, "upper-case letters are allowed: pod names use the name lower-cased") {
		t.Fatalf("GPU_Workers: allowed=%v %+v", resp.Allowed, resp.Result)
	}
}
