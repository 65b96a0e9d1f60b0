package webhooks_test

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"

	jsonpatchapply "github.com/evanphx/json-patch/v5"
	"github.com/google/go-cmp/cmp"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/defaulting"
	"github.com/raygate/raygate/internal/features"
	"github.com/raygate/raygate/test/builders"
	"github.com/raygate/raygate/webhooks"
)

func TestRayJobMutatorPatchesTheDefaults(t *testing.T) {
	job := builders.RayJob("job", "ns").Obj()
	job.Spec.SubmissionMode, job.Spec.BackoffLimit = "", nil
	g := &job.Spec.RayClusterSpec.WorkerGroupSpecs[0]
	g.Replicas, g.NumOfHosts = nil, 0
	body := raw(t, job)

	resp := handlers(nil)[webhooks.MutateRayJobPath].Handle(context.Background(), request(admissionv1.Create, body, nil))
	if !resp.Allowed {
		t.Fatalf("denied: %v", resp.Result)
	}
	var paths []string
	for _, p := range resp.Patches {
		paths = append(paths, p.Operation+" "+p.Path)
	}
	slices.Sort(paths)
	want := []string{
		"add /spec/backoffLimit",
		"add /spec/rayClusterSpec/workerGroupSpecs/0/numOfHosts",
		"add /spec/rayClusterSpec/workerGroupSpecs/0/replicas",
		"add /spec/submissionMode",
	}
	if diff := cmp.Diff(want, paths); diff != "" {
		t.Fatalf("patch operations (-want +got):\n%s", diff)
	}
	patch, err := jsonpatchapply.DecodePatch(raw(t, resp.Patches))
	if err != nil {
		t.Fatal(err)
	}
	patched, err := patch.Apply(body)
	if err != nil {
		t.Fatal(err)
	}
	var got rayv1.RayJob
	if err := json.Unmarshal(patched, &got); err != nil {
		t.Fatal(err)
	}
	defaulting.RayJob(job)
	if diff := cmp.Diff(job.Spec, got.Spec); diff != "" {
		t.Errorf("patched object is not the defaulted one (-want +got):\n%s", diff)
	}

	// Defaulted already: nothing to patch.
	if resp := handlers(nil)[webhooks.MutateRayJobPath].Handle(context.Background(), request(admissionv1.Update, raw(t, job), raw(t, job))); !resp.Allowed || len(resp.Patches) != 0 {
		t.Errorf("a defaulted job: allowed=%v patches=%v", resp.Allowed, resp.Patches)
	}
}

func TestRayJobValidator(t *testing.T) {
	bad := builders.RayJob("job", "ns").Obj()
	bad.Spec.Entrypoint = ""
	bad.Spec.TTLSecondsAfterFinished = 30
	bad.Spec.RuntimeEnvYAML = "- pip"
	defaulting.RayJob(bad)
	h := handlers(nil)[webhooks.ValidateRayJobPath]

	resp := h.Handle(context.Background(), request(admissionv1.Create, raw(t, bad), nil))
	if resp.Allowed || resp.Result.Code != http.StatusUnprocessableEntity || resp.Result.Reason != metav1.StatusReasonInvalid {
		t.Fatalf("want 422 Invalid, got allowed=%v %+v", resp.Allowed, resp.Result)
	}
	var causes []string
	for _, c := range resp.Result.Details.Causes {
		causes = append(causes, c.Field)
	}
	if diff := cmp.Diff([]string{"spec.ttlSecondsAfterFinished", "spec.entrypoint", "spec.runtimeEnvYAML"}, causes); diff != "" {
		t.Errorf("causes (-want +got):\n%s", diff)
	}
	if !strings.HasPrefix(resp.Result.Message, `RayJob.ray.io "job" is invalid: [`) {
		t.Errorf("message: %s", resp.Result.Message)
	}

	// Being deleted: never blocked.
	deleting := bad.DeepCopy()
	deleting.DeletionTimestamp = ptr.To(metav1.Now())
	if resp := h.Handle(context.Background(), request(admissionv1.Update, raw(t, deleting), raw(t, bad))); !resp.Allowed {
		t.Errorf("an update of a job being deleted was denied: %v", resp.Result)
	}
	// Stored before a rule: relabelling passes, the mistakes stay until fixed.
	relabelled := bad.DeepCopy()
	relabelled.Labels = map[string]string{"team": "ml"}
	if resp := h.Handle(context.Background(), request(admissionv1.Update, raw(t, relabelled), raw(t, bad))); !resp.Allowed {
		t.Errorf("relabelling a stored job was denied: %v", resp.Result)
	}
	good := builders.RayJob("job", "ns").Obj()
	defaulting.RayJob(good)
	if resp := h.Handle(context.Background(), request(admissionv1.Create, raw(t, good), nil)); !resp.Allowed || len(resp.Warnings) != 0 {
		t.Errorf("a valid job: allowed=%v warnings=%v %v", resp.Allowed, resp.Warnings, resp.Result)
	}
}

func TestRayJobValidatorGateAndNamespace(t *testing.T) {
	job := builders.RayJob("job", "ns").DeletionRule(rayv1.DeleteCluster, rayv1.JobStatusSucceeded, 60).Obj()
	defaulting.RayJob(job)
	off := webhooks.Handlers(webhooks.Options{Gates: features.Static{features.RayJobDeletionPolicy: false}})[webhooks.ValidateRayJobPath]
	resp := off.Handle(context.Background(), request(admissionv1.Create, raw(t, job), nil))
	if resp.Allowed || !strings.Contains(resp.Result.Message, "spec.deletionStrategy: Forbidden: needs the RayJobDeletionPolicy feature gate, which is disabled; "+
		"enable it with --feature-gates=RayJobDeletionPolicy=true on the manager, or the Helm value featureGates.RayJobDeletionPolicy=true") {
		t.Errorf("gate off: allowed=%v %v", resp.Allowed, resp.Result)
	}

	// A baseline namespace refuses a privileged submitter pod.
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ns", Labels: map[string]string{"pod-security.kubernetes.io/enforce": "baseline"}}}
	reader := fake.NewClientBuilder().WithScheme(scheme()).WithObjects(ns).Build()
	h := webhooks.Handlers(webhooks.Options{Gates: features.Static{}, Namespaces: reader, Reader: reader})[webhooks.ValidateRayJobPath]
	priv := builders.RayJob("job", "ns").SubmitterTemplate("rayproject/ray:2.52.0").Obj()
	priv.Spec.SubmitterPodTemplate.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{Privileged: ptr.To(true)}
	defaulting.RayJob(priv)
	req := request(admissionv1.Create, raw(t, priv), nil)
	req.Namespace = "ns"
	resp = h.Handle(context.Background(), req)
	if resp.Allowed || !strings.Contains(resp.Result.Message, `spec.submitterPodTemplate.spec.containers[0].securityContext.privileged: Forbidden: violates PodSecurity "baseline:latest"`) {
		t.Errorf("privileged submitter: allowed=%v %v", resp.Allowed, resp.Result)
	}
}
