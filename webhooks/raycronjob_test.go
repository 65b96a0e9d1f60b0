package webhooks_test

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	admissionv1 "k8s.io/api/admission/v1"

	"github.com/raygate/raygate/internal/defaulting"
	"github.com/raygate/raygate/internal/features"
	"github.com/raygate/raygate/test/builders"
	"github.com/raygate/raygate/webhooks"
)

var cronOn = webhooks.Options{Gates: features.Static{features.RayCronJob: true}}

func TestRayCronJobMutatorDefaultsTheTemplate(t *testing.T) {
	cj := builders.RayCronJob("nightly", "ns").Obj()
	cj.Spec.JobTemplate.SubmissionMode, cj.Spec.JobTemplate.BackoffLimit = "", nil
	resp := webhooks.Handlers(cronOn)[webhooks.MutateRayCronJobPath].Handle(context.Background(), request(admissionv1.Create, raw(t, cj), nil))
	if !resp.Allowed {
		t.Fatalf("denied: %v", resp.Result)
	}
	var paths []string
	for _, p := range resp.Patches {
		paths = append(paths, p.Operation+" "+p.Path)
	}
	slices.Sort(paths)
	if diff := cmp.Diff([]string{"add /spec/jobTemplate/backoffLimit", "add /spec/jobTemplate/submissionMode"}, paths); diff != "" {
		t.Errorf("patch operations (-want +got):\n%s", diff)
	}
}

func TestRayCronJobValidator(t *testing.T) {
	bad := builders.RayCronJob("nightly", "ns").Schedule("61 * * * *").TimeZone("Moon/Tranquility").Obj()
	bad.Spec.JobTemplate.SubmissionMode = "ByPigeon"
	defaulting.RayCronJob(bad)
	h := webhooks.Handlers(cronOn)[webhooks.ValidateRayCronJobPath]
	resp := h.Handle(context.Background(), request(admissionv1.Create, raw(t, bad), nil))
	if resp.Allowed || resp.Result.Code != http.StatusUnprocessableEntity {
		t.Fatalf("want 422, got allowed=%v %+v", resp.Allowed, resp.Result)
	}
	var causes []string
	for _, c := range resp.Result.Details.Causes {
		causes = append(causes, c.Field)
	}
	if diff := cmp.Diff([]string{"spec.schedule", "spec.timeZone", "spec.jobTemplate.submissionMode"}, causes); diff != "" {
		t.Errorf("causes (-want +got):\n%s", diff)
	}
	if !strings.HasPrefix(resp.Result.Message, `RayCronJob.ray.io "nightly" is invalid: [`) {
		t.Errorf("message: %s", resp.Result.Message)
	}

	good := builders.RayCronJob("nightly", "ns").Obj()
	defaulting.RayCronJob(good)
	if resp := h.Handle(context.Background(), request(admissionv1.Create, raw(t, good), nil)); !resp.Allowed || len(resp.Warnings) != 0 {
		t.Errorf("a valid RayCronJob: allowed=%v warnings=%v %v", resp.Allowed, resp.Warnings, resp.Result)
	}

	// The gate off: a new RayCronJob is refused with the gate's name; a stored one can
	// still be changed (suspended, fixed, its finalizers removed).
	off := webhooks.Handlers(webhooks.Options{Gates: features.Static{}})[webhooks.ValidateRayCronJobPath]
	resp = off.Handle(context.Background(), request(admissionv1.Create, raw(t, good), nil))
	if resp.Allowed || !strings.Contains(resp.Result.Message, "spec: Forbidden: RayCronJob is behind the feature gate RayCronJob (Alpha, off by default): "+
		"enable it with --feature-gates=RayCronJob=true on the manager, or the Helm value featureGates.RayCronJob=true") {
		t.Errorf("gate off: allowed=%v %v", resp.Allowed, resp.Result)
	}
	suspended := good.DeepCopy()
	suspended.Spec.Suspend = new(true)
	if resp := off.Handle(context.Background(), request(admissionv1.Update, raw(t, suspended), raw(t, good))); !resp.Allowed {
		t.Errorf("suspending with the gate off was denied: %v", resp.Result)
	}
}
