package webhooks_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/defaulting"
	"github.com/raygate/raygate/test/builders"
	"github.com/raygate/raygate/webhooks"
)

// The benchmarks time what the API server waits for: an AdmissionReview is decoded, the
// object defaulted or validated, and the response encoded, through the same http.Handler
// the webhook server mounts. Besides ns/op and allocs/op they report the p50 and p99 of the
// per-request latency.

// productionService is builders.ProductionRayService: a head and three worker groups with
// probes, env, volumes and resources, two Serve applications.
func productionService() *rayv1.RayService { return builders.ProductionRayService() }

func review(b testing.TB, op admissionv1.Operation, obj, old k8sruntime.Object) []byte {
	b.Helper()
	req := &admissionv1.AdmissionRequest{
		UID: "bench", Operation: op, Namespace: "ml-prod", Name: "llm-serving",
		Kind:     metav1.GroupVersionKind{Group: "ray.io", Version: "v1", Kind: obj.GetObjectKind().GroupVersionKind().Kind},
		Resource: metav1.GroupVersionResource{Group: "ray.io", Version: "v1", Resource: "rayservices"},
	}
	req.Object.Raw = raw(b, obj)
	if old != nil {
		req.OldObject.Raw = raw(b, old)
	}
	return raw(b, &admissionv1.AdmissionReview{TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"}, Request: req})
}

// serve runs one AdmissionReview through the handler b.N times and reports latency
// percentiles; check inspects the first response.
func serve(b *testing.B, path string, body []byte, check func(*admissionv1.AdmissionResponse)) {
	serveEach(b, path, func(int) []byte { return body }, check)
}

// serveEach is serve with the i-th request's body given by body(i) (built before timing).
func serveEach(b *testing.B, path string, body func(i int) []byte, check func(*admissionv1.AdmissionResponse)) {
	istio := &gatewayv1.GatewayClass{ObjectMeta: metav1.ObjectMeta{Name: "istio"}}
	h := &webhook.Admission{Handler: handlers(fake.NewClientBuilder().WithScheme(scheme()).WithObjects(istio).Build())[path]}

	post := func(body []byte) *http.Request {
		r := httptest.NewRequest(http.MethodPost, path, bytes.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		return r
	}
	first0 := body(-1)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, post(first0))
	var first admissionv1.AdmissionReview
	if err := json.Unmarshal(rec.Body.Bytes(), &first); err != nil || first.Response == nil {
		b.Fatalf("bad response %q: %v", rec.Body.String(), err)
	}
	check(first.Response)

	// Wall time includes waiting for a CPU, which on a busy machine dominates the tail; the
	// thread's CPU time per request is what the request itself costs.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	wall := make([]time.Duration, 0, b.N)
	onCPU := make([]time.Duration, 0, b.N)
	b.ReportAllocs()
	b.SetBytes(int64(len(first0)))
	bodies := make([][]byte, b.N)
	for i := range bodies {
		bodies[i] = body(i)
	}
	b.ResetTimer()
	for i := range b.N {
		start, startCPU := time.Now(), threadCPU()
		h.ServeHTTP(httptest.NewRecorder(), post(bodies[i]))
		wall = append(wall, time.Since(start))
		onCPU = append(onCPU, threadCPU()-startCPU)
	}
	b.StopTimer()
	for _, m := range []struct {
		name string
		d    []time.Duration
	}{{"wall", wall}, {"cpu", onCPU}} {
		slices.Sort(m.d)
		b.ReportMetric(float64(m.d[len(m.d)*50/100].Nanoseconds()), "p50-"+m.name+"-ns")
		b.ReportMetric(float64(m.d[len(m.d)*99/100].Nanoseconds()), "p99-"+m.name+"-ns")
	}
}

func threadCPU() time.Duration {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		panic(err)
	}
	return time.Duration(ts.Nano())
}

func allowed(wantPatch bool) func(*admissionv1.AdmissionResponse) {
	return func(r *admissionv1.AdmissionResponse) {
		if !r.Allowed || (len(r.Patch) > 0) != wantPatch {
			panic(fmt.Sprintf("allowed=%v patch=%s result=%v", r.Allowed, r.Patch, r.Result))
		}
	}
}

func BenchmarkMutateRayServiceCreate(b *testing.B) {
	svc := productionService()
	svc.Spec.UpgradeStrategy.ClusterUpgradeOptions.MaxSurgePercent = nil
	for i := range svc.Spec.RayClusterSpec.WorkerGroupSpecs {
		svc.Spec.RayClusterSpec.WorkerGroupSpecs[i].RayStartParams = nil
	}
	serve(b, webhooks.MutateRayServicePath, review(b, admissionv1.Create, svc, nil), allowed(true))
}

func BenchmarkMutateRayServiceUpdateNoChange(b *testing.B) {
	svc := productionService()
	defaulting.RayService(svc)
	serve(b, webhooks.MutateRayServicePath, review(b, admissionv1.Update, svc, svc), allowed(false))
}

func BenchmarkValidateRayServiceCreate(b *testing.B) {
	svc := productionService()
	defaulting.RayService(svc)
	serve(b, webhooks.ValidateRayServicePath, review(b, admissionv1.Create, svc, nil), allowed(false))
}

// unseen numbers requests so that no two in the test binary's life are alike: the benchmark
// framework calls a benchmark several times with growing b.N, and a value repeated from an
// earlier call could be found in a cache.
var unseen atomic.Int64

// BenchmarkValidateRayServiceCreateColdServeConfig: every request has a serve config the
// webhook has not seen (a comment line differs), so its verdict is never in the cache.
func BenchmarkValidateRayServiceCreateColdServeConfig(b *testing.B) {
	svc := productionService()
	defaulting.RayService(svc)
	config := svc.Spec.ServeConfigV2
	serveEach(b, webhooks.ValidateRayServicePath, func(int) []byte {
		svc.Spec.ServeConfigV2 = config + fmt.Sprintf("# request %d\n", unseen.Add(1))
		return review(b, admissionv1.Create, svc, nil)
	}, allowed(false))
}

// BenchmarkValidateRayServiceCreateColdTemplates: every request's four pod templates differ
// from all seen before (an environment value), so none is in the table of decoded templates
// (admissionjson.SharingDecoder) and each is decoded.
func BenchmarkValidateRayServiceCreateColdTemplates(b *testing.B) {
	svc := productionService()
	defaulting.RayService(svc)
	serveEach(b, webhooks.ValidateRayServicePath, func(int) []byte {
		return review(b, admissionv1.Create, withUnseenTemplates(svc), nil)
	}, allowed(false))
}

// withUnseenTemplates is a copy of svc whose four pod templates differ from all made before.
func withUnseenTemplates(svc *rayv1.RayService) *rayv1.RayService {
	s := svc.DeepCopy()
	spec := &s.Spec.RayClusterSpec
	templates := []*corev1.PodTemplateSpec{&spec.HeadGroupSpec.Template}
	for i := range spec.WorkerGroupSpecs {
		templates = append(templates, &spec.WorkerGroupSpecs[i].Template)
	}
	for _, t := range templates {
		c := &t.Spec.Containers[0]
		c.Env = append(c.Env, corev1.EnvVar{Name: "REQUEST", Value: fmt.Sprint(unseen.Add(1))})
	}
	return s
}

// productionCluster is the RayCluster of productionService.
func productionCluster() *rayv1.RayCluster {
	svc := productionService()
	return &rayv1.RayCluster{
		TypeMeta:   metav1.TypeMeta{APIVersion: "ray.io/v1", Kind: "RayCluster"},
		ObjectMeta: metav1.ObjectMeta{Name: "llm", Namespace: "ml-prod", Labels: svc.Labels},
		Spec:       svc.Spec.RayClusterSpec,
	}
}

func BenchmarkMutateRayClusterCreate(b *testing.B) {
	rc := productionCluster()
	for i := range rc.Spec.WorkerGroupSpecs {
		rc.Spec.WorkerGroupSpecs[i].RayStartParams = nil
	}
	serve(b, webhooks.MutateRayClusterPath, review(b, admissionv1.Create, rc, nil), allowed(true))
}

// A hostile object: thousands of empty worker groups, each given five defaults. The patch
// must cost one scan of the object: when each operation scanned from the top, 3,000 groups
// outlasted the API server's webhook timeout.
func BenchmarkMutateRayClusterThousandsOfGroups(b *testing.B) {
	rc := builders.RayCluster("many", "ns").Obj()
	rc.Spec.WorkerGroupSpecs = append(rc.Spec.WorkerGroupSpecs, make([]rayv1.WorkerGroupSpec, 3000)...)
	serve(b, webhooks.MutateRayClusterPath, review(b, admissionv1.Create, rc, nil), allowed(true))
}

func BenchmarkValidateRayClusterCreate(b *testing.B) {
	rc := productionCluster()
	defaulting.RayCluster(rc)
	serve(b, webhooks.ValidateRayClusterPath, review(b, admissionv1.Create, rc, nil), allowed(false))
}

func BenchmarkValidateRayServiceUpdate(b *testing.B) {
	old := productionService()
	defaulting.RayService(old)
	svc := old.DeepCopy()
	svc.Spec.RayClusterSpec.HeadGroupSpec.Template.Spec.Containers[0].Image = "rayproject/ray:2.53.0"
	serve(b, webhooks.ValidateRayServicePath, review(b, admissionv1.Update, svc, old), allowed(false))
}

func BenchmarkValidateRayServiceReject(b *testing.B) {
	svc := productionService()
	defaulting.RayService(svc)
	svc.Spec.RayClusterSpec.AuthOptions = &rayv1.AuthOptions{}
	svc.Spec.UpgradeStrategy.ClusterUpgradeOptions.StepSizePercent = ptr.To[int32](0)
	serve(b, webhooks.ValidateRayServicePath, review(b, admissionv1.Create, svc, nil), func(r *admissionv1.AdmissionResponse) {
		if r.Allowed || r.Result.Code != http.StatusUnprocessableEntity {
			panic(fmt.Sprintf("want 422, got %v", r.Result))
		}
	})
}

// maxServeConfigService is productionService with a serveConfigV2 of the largest size
// admission accepts (256 KiB): the most a single request can make the webhooks parse.
func maxServeConfigService() *rayv1.RayService {
	svc := productionService()
	svc.Spec.ServeConfigV2 = builders.ServeConfigOfSize(256 << 10)
	return svc
}

func BenchmarkMutateRayServiceCreateMaxServeConfig(b *testing.B) {
	svc := maxServeConfigService()
	svc.Spec.UpgradeStrategy.ClusterUpgradeOptions.MaxSurgePercent = nil
	serve(b, webhooks.MutateRayServicePath, review(b, admissionv1.Create, svc, nil), allowed(true))
}

func BenchmarkValidateRayServiceCreateMaxServeConfig(b *testing.B) {
	svc := maxServeConfigService()
	defaulting.RayService(svc)
	serve(b, webhooks.ValidateRayServicePath, review(b, admissionv1.Create, svc, nil), allowed(false))
}

func BenchmarkValidateRayServiceUpdateMaxServeConfig(b *testing.B) {
	old := maxServeConfigService()
	defaulting.RayService(old)
	svc := old.DeepCopy()
	svc.Spec.RayClusterSpec.HeadGroupSpec.Template.Spec.Containers[0].Image = "rayproject/ray:2.53.0"
	serve(b, webhooks.ValidateRayServicePath, review(b, admissionv1.Update, svc, old), allowed(false))
}

// BenchmarkValidateRayServiceDensestServeConfig: the costliest serve config to parse, a
// 256 KiB flow list of 131,070 numbers (refused: too many applications).
func BenchmarkValidateRayServiceDensestServeConfig(b *testing.B) {
	svc := productionService()
	svc.Spec.ServeConfigV2 = "applications: [" + strings.Repeat("0,", (256<<10-20)/2) + "0]\n"
	defaulting.RayService(svc)
	serve(b, webhooks.ValidateRayServicePath, review(b, admissionv1.Create, svc, nil), func(r *admissionv1.AdmissionResponse) {
		if r.Allowed || r.Result.Code != http.StatusUnprocessableEntity {
			panic(fmt.Sprintf("want 422, got %v", r.Result))
		}
	})
}

// BenchmarkValidateRayServiceUpdateNoChange: an update that changes nothing, as a GitOps tool
// re-applying an unchanged manifest sends.
func BenchmarkValidateRayServiceUpdateNoChange(b *testing.B) {
	svc := productionService()
	defaulting.RayService(svc)
	serve(b, webhooks.ValidateRayServicePath, review(b, admissionv1.Update, svc, svc), allowed(false))
}

// BenchmarkValidateRayServiceUpdateStatusOnly: an update of the main resource whose object
// differs from the stored one only in status (the API server keeps the stored status).
func BenchmarkValidateRayServiceUpdateStatusOnly(b *testing.B) {
	old := productionService()
	defaulting.RayService(old)
	svc := old.DeepCopy()
	svc.Status.ObservedGeneration = 7
	svc.Status.ServiceStatus = rayv1.Running
	serve(b, webhooks.ValidateRayServicePath, review(b, admissionv1.Update, svc, old), allowed(false))
}

func BenchmarkMutateRayServiceUpdateStatusOnly(b *testing.B) {
	old := productionService()
	defaulting.RayService(old)
	svc := old.DeepCopy()
	svc.Status.ObservedGeneration = 7
	svc.Status.ServiceStatus = rayv1.Running
	serve(b, webhooks.MutateRayServicePath, review(b, admissionv1.Update, svc, old), allowed(false))
}
