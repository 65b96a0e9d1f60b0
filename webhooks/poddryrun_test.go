package webhooks_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/defaulting"
	"github.com/raygate/raygate/test/builders"
	"github.com/raygate/raygate/webhooks"
)

// dryRunAPIServer answers dry-run creates: a LimitRange refusal for pods with more than 2
// CPUs, a wait until the caller's deadline when slow. It counts the pods sent.
type dryRunAPIServer struct {
	mu   sync.Mutex
	sent []string
	slow bool
}

func (a *dryRunAPIServer) DryRunCreate(ctx context.Context, pod *corev1.Pod) ([]string, error) {
	a.mu.Lock()
	a.sent = append(a.sent, pod.GenerateName)
	a.mu.Unlock()
	if a.slow {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	if pod.Spec.Containers[0].Resources.Limits.Cpu().Value() > 2 {
		return nil, apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, pod.GenerateName,
			errors.New("maximum cpu usage per Container is 2, but limit is 4"))
	}
	return nil, nil
}

func (a *dryRunAPIServer) calls() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := a.sent
	a.sent = nil
	return out
}

func bigWorker(rc *rayv1.RayCluster) {
	r := &rc.Spec.WorkerGroupSpecs[0].Template.Spec.Containers[0].Resources
	r.Limits[corev1.ResourceCPU], r.Requests[corev1.ResourceCPU] = resource.MustParse("4"), resource.MustParse("4")
}

func TestValidatingWebhookDryRunsThePods(t *testing.T) {
	api := &dryRunAPIServer{}
	h := webhooks.Handlers(webhooks.Options{Gates: gateOn, PodDryRun: api})[webhooks.ValidateRayClusterPath]
	rc := builders.RayCluster("rc", "ns").Obj()
	bigWorker(rc)
	defaulting.RayCluster(rc)
	req := request(admissionv1.Create, raw(t, rc), nil)
	req.Namespace = "ns"
	resp := h.Handle(context.Background(), req)
	want := `RayCluster.ray.io "rc" is invalid: spec.workerGroupSpecs[0].template: Forbidden: the API server refuses the pods of worker group "workers": maximum cpu usage per Container is 2, but limit is 4`
	if resp.Allowed || resp.Result.Message != want {
		t.Errorf("want %q, got allowed=%v %q", want, resp.Allowed, resp.Result.Message)
	}
	if got := len(api.calls()); got != 2 {
		t.Errorf("sent %d pods; want the head and the worker", got)
	}

	// Other errors first: nothing is sent.
	bad := rc.DeepCopy()
	bad.Spec.WorkerGroupSpecs[0].GroupName = ""
	req.Object.Raw = raw(t, bad)
	if resp := h.Handle(context.Background(), req); resp.Allowed || strings.Contains(resp.Result.Message, "maximum cpu") {
		t.Errorf("want raygate's own errors only, got %q", resp.Result.Message)
	}
	if got := api.calls(); len(got) != 0 {
		t.Errorf("sent %v while validation found other errors", got)
	}

	// A scale of a stored cluster sends nothing; a changed template its own pods.
	stored := builders.RayCluster("rc", "ns").Obj()
	defaulting.RayCluster(stored)
	scaled := stored.DeepCopy()
	scaled.Spec.WorkerGroupSpecs[0].Replicas = ptr.To[int32](5)
	update := request(admissionv1.Update, raw(t, scaled), raw(t, stored))
	update.Namespace = "ns"
	if resp := h.Handle(context.Background(), update); !resp.Allowed {
		t.Errorf("scale refused: %v", resp.Result)
	}
	changed := stored.DeepCopy()
	changed.Spec.HeadGroupSpec.Template.Spec.Containers[0].Image = "rayproject/ray:2.53.0"
	update.Object.Raw = raw(t, changed)
	if resp := h.Handle(context.Background(), update); !resp.Allowed {
		t.Errorf("image change refused: %v", resp.Result)
	}
	if d := cmp.Diff([]string{"raygate-dry-run-head-"}, api.calls()); d != "" {
		t.Errorf("sent on update (-want +got):\n%s", d)
	}
}

// Past the budget the object is admitted with a warning, within the budget.
func TestTheBudgetAdmitsWithAWarning(t *testing.T) {
	api := &dryRunAPIServer{slow: true}
	h := webhooks.Handlers(webhooks.Options{Gates: gateOn, PodDryRun: api, Budget: 100 * time.Millisecond})[webhooks.ValidateRayServicePath]
	svc := builders.RayService("svc", "ns").Obj()
	defaulting.RayService(svc)
	req := request(admissionv1.Create, raw(t, svc), nil)
	req.Namespace = "ns"
	start := time.Now()
	resp := h.Handle(context.Background(), req)
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("took %s with a budget of 100ms", took)
	}
	want := []string{`admission's time budget (100ms) ran out before the API server's dry-run of the head pod and the pods of worker group "workers"; it checks them when raygate creates them`}
	if !resp.Allowed || !cmp.Equal(want, resp.Warnings) {
		t.Errorf("allowed=%v, warnings (-want +got):\n%s", resp.Allowed, cmp.Diff(want, resp.Warnings))
	}
}

// A namespace-scoped operator dry-runs pods only in the namespaces it watches: elsewhere it
// may not create pods, so the API server would only refuse it.
func TestValidatingWebhookDryRunsOnlyInWatchedNamespaces(t *testing.T) {
	api := &dryRunAPIServer{}
	h := webhooks.Handlers(webhooks.Options{Gates: gateOn, PodDryRun: api, WatchNamespaces: []string{"team-a"}})[webhooks.ValidateRayClusterPath]
	for ns, wantSent := range map[string]int{"team-a": 2, "team-b": 0} {
		rc := builders.RayCluster("rc", ns).Obj()
		defaulting.RayCluster(rc)
		req := request(admissionv1.Create, raw(t, rc), nil)
		req.Namespace = ns
		if resp := h.Handle(context.Background(), req); !resp.Allowed {
			t.Errorf("%s: refused: %v", ns, resp.Result)
		}
		if got := len(api.calls()); got != wantSent {
			t.Errorf("%s: sent %d pods, want %d", ns, got, wantSent)
		}
	}
}
