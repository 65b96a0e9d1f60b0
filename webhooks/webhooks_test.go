package webhooks_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"

	jsonpatchapply "github.com/evanphx/json-patch/v5"
	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"
	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/defaulting"
	"github.com/raygate/raygate/internal/features"
	"github.com/raygate/raygate/internal/validation"
	"github.com/raygate/raygate/test/builders"
	"github.com/raygate/raygate/webhooks"
)

func TestMain(m *testing.M) {
	logf.SetLogger(logr.Discard())
	os.Exit(m.Run())
}

func scheme() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	utilruntime.Must(rayv1.AddToScheme(s))
	utilruntime.Must(gatewayv1.Install(s))
	return s
}

var gateOn = features.Static{features.RayServiceIncrementalUpgrade: true}

func handlers(reader client.Reader) map[string]admission.Handler {
	return webhooks.Handlers(webhooks.Options{Reader: reader, Gates: gateOn})
}

func raw(t testing.TB, obj any) []byte {
	t.Helper()
	b, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func request(op admissionv1.Operation, obj, old []byte) admission.Request {
	req := admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{UID: "uid", Operation: op}}
	req.Object.Raw, req.OldObject.Raw = obj, old
	return req
}

func TestMutatorPatchesOnlyWhatDefaultingChanged(t *testing.T) {
	svc := builders.RayService("svc", "ns").Obj()
	g := &svc.Spec.RayClusterSpec.WorkerGroupSpecs[0]
	g.Replicas, g.NumOfHosts, g.RayStartParams = nil, 0, nil
	// "1000m" is printed as "1" after a decode/encode round trip; that is not a default and
	// must not be patched.
	body := strings.Replace(string(raw(t, svc)), `"cpu":"1"`, `"cpu":"1000m"`, 1)
	if !strings.Contains(body, "1000m") {
		t.Fatal("test setup: no CPU quantity to rewrite")
	}

	resp := handlers(nil)[webhooks.MutateRayServicePath].Handle(context.Background(), request(admissionv1.Create, []byte(body), nil))
	if !resp.Allowed {
		t.Fatalf("denied: %v", resp.Result)
	}
	var paths []string
	for _, p := range resp.Patches {
		paths = append(paths, p.Operation+" "+p.Path)
	}
	slices.Sort(paths)
	want := []string{
		"add /spec/rayClusterConfig/workerGroupSpecs/0/numOfHosts",
		"add /spec/rayClusterConfig/workerGroupSpecs/0/replicas",
		"add /spec/rayClusterDeletionDelaySeconds",
		"add /spec/upgradeStrategy",
		"replace /spec/rayClusterConfig/workerGroupSpecs/0/rayStartParams", // null -> {}
	}
	if diff := cmp.Diff(want, paths); diff != "" {
		t.Fatalf("patch operations (-want +got):\n%s", diff)
	}

	// Applied to what the user sent, the patch gives the defaulted object and keeps "1000m".
	patch, err := jsonpatchapply.DecodePatch(raw(t, resp.Patches))
	if err != nil {
		t.Fatal(err)
	}
	patched, err := patch.Apply([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(patched), `"cpu":"1000m"`) {
		t.Error("the patch rewrote a value defaulting did not touch")
	}
	var got rayv1.RayService
	if err := json.Unmarshal(patched, &got); err != nil {
		t.Fatal(err)
	}
	want2 := svc.DeepCopy()
	defaulting.RayService(want2)
	if !equality.Semantic.DeepEqual(want2.Spec, got.Spec) {
		t.Errorf("patched object is not the defaulted one:\n%s", cmp.Diff(want2.Spec, got.Spec))
	}
}

func TestMutatorLeavesStoredAndDeletingObjectsAlone(t *testing.T) {
	stored := builders.RayService("svc", "ns").Obj()
	defaulting.RayService(stored)
	deleting := builders.RayCluster("rc", "ns").Obj()
	deleting.Spec.HeadGroupSpec.RayStartParams = nil // would be defaulted if not being deleted
	deleting.DeletionTimestamp = ptr.To(metav1.Now())
	deleting.Finalizers = []string{"example.com/keep"}
	for name, tc := range map[string]struct {
		path string
		obj  any
	}{
		"stored RayService":   {webhooks.MutateRayServicePath, stored},
		"RayCluster deleting": {webhooks.MutateRayClusterPath, deleting},
	} {
		t.Run(name, func(t *testing.T) {
			resp := handlers(nil)[tc.path].Handle(context.Background(), request(admissionv1.Update, raw(t, tc.obj), raw(t, tc.obj)))
			if !resp.Allowed || len(resp.Patches) != 0 {
				t.Errorf("want allowed without patch, got allowed=%v patches=%v", resp.Allowed, resp.Patches)
			}
		})
	}
}

// kubectl's client-side apply resends a whole list without the defaults of its items; the
// patch must put them back, or the stored spec (and its generation) would change.
func TestMutatorRestoresDefaultsAnUpdateDropped(t *testing.T) {
	stored := builders.RayService("svc", "ns").Obj()
	defaulting.RayService(stored)
	sent := stored.DeepCopy()
	sent.Spec.RayClusterSpec.WorkerGroupSpecs[0].RayStartParams = nil
	body := strings.Replace(string(raw(t, sent)), `"rayStartParams":null,`, "", 1)

	resp := handlers(nil)[webhooks.MutateRayServicePath].Handle(context.Background(), request(admissionv1.Update, []byte(body), raw(t, stored)))
	if !resp.Allowed || len(resp.Patches) != 1 || resp.Patches[0].Path != "/spec/rayClusterConfig/workerGroupSpecs/0/rayStartParams" {
		t.Fatalf("want one patch restoring rayStartParams, got allowed=%v %v", resp.Allowed, resp.Patches)
	}
}

func TestValidatorRejectsWithEveryCause(t *testing.T) {
	svc := builders.RayService("svc", "ns").Incremental(40, 0, 30, "istio").Obj()
	svc.Spec.RayClusterSpec.TLSOptions = &rayv1.TLSOptions{}
	svc.Spec.ServiceUnhealthySecondThreshold = ptr.To[int32](60)
	defaulting.RayService(svc)

	resp := handlers(nil)[webhooks.ValidateRayServicePath].Handle(context.Background(), request(admissionv1.Create, raw(t, svc), nil))
	if resp.Allowed {
		t.Fatal("allowed an invalid RayService")
	}
	st := resp.Result
	if st.Code != http.StatusUnprocessableEntity || st.Reason != metav1.StatusReasonInvalid {
		t.Errorf("status %d %s, want 422 Invalid", st.Code, st.Reason)
	}
	wantMsg := `RayService.ray.io "svc" is invalid: [` +
		`spec.upgradeStrategy.clusterUpgradeOptions.stepSizePercent: Invalid value: 0: must be between 1 and maxSurgePercent (40): 0 would never move traffic, and a step larger than the surge outruns the new cluster's capacity, ` +
		`spec.rayClusterConfig.tlsOptions: Forbidden: the RayClusterMTLS feature gate is off; enable it with --feature-gates=RayClusterMTLS=true on the manager, or the Helm value featureGates.RayClusterMTLS=true]`
	if st.Message != wantMsg {
		t.Errorf("message\n got: %s\nwant: %s", st.Message, wantMsg)
	}
	var causes []string
	for _, c := range st.Details.Causes {
		causes = append(causes, c.Field)
	}
	if diff := cmp.Diff([]string{"spec.upgradeStrategy.clusterUpgradeOptions.stepSizePercent", "spec.rayClusterConfig.tlsOptions"}, causes); diff != "" {
		t.Errorf("causes (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"spec.serviceUnhealthySecondThreshold is deprecated and ignored; remove it"}, resp.Warnings); diff != "" {
		t.Errorf("warnings must come with a rejection too (-want +got):\n%s", diff)
	}
}

func TestRayClusterValidator(t *testing.T) {
	rc := builders.RayCluster("rc", "ns").Obj()
	rc.Spec.WorkerGroupSpecs[0].MinReplicas = ptr.To[int32](-1)
	defaulting.RayCluster(rc)
	h := handlers(nil)[webhooks.ValidateRayClusterPath]
	resp := h.Handle(context.Background(), request(admissionv1.Create, raw(t, rc), nil))
	if resp.Allowed || resp.Result.Code != http.StatusUnprocessableEntity ||
		!strings.HasPrefix(resp.Result.Message, `RayCluster.ray.io "rc" is invalid: spec.workerGroupSpecs[0].minReplicas: Invalid value: -1`) {
		t.Fatalf("got allowed=%v %+v", resp.Allowed, resp.Result)
	}
	// The same invalid object passes once it is being deleted, so its finalizers can go.
	deleting := rc.DeepCopy()
	deleting.DeletionTimestamp = ptr.To(metav1.Now())
	if resp := h.Handle(context.Background(), request(admissionv1.Update, raw(t, deleting), raw(t, rc))); !resp.Allowed {
		t.Fatalf("an update of an object being deleted was denied: %v", resp.Result)
	}
	good := builders.RayCluster("rc", "ns").Obj()
	defaulting.RayCluster(good)
	if resp := h.Handle(context.Background(), request(admissionv1.Update, raw(t, good), raw(t, rc))); !resp.Allowed {
		t.Fatalf("a valid update was denied: %v", resp.Result)
	}
}

func TestValidatorIgnoresOtherOperationsAndRejectsGarbage(t *testing.T) {
	h := handlers(nil)[webhooks.ValidateRayServicePath]
	for _, op := range []admissionv1.Operation{admissionv1.Delete, admissionv1.Connect} {
		if resp := h.Handle(context.Background(), request(op, nil, nil)); !resp.Allowed {
			t.Errorf("%s denied", op)
		}
	}
	resp := h.Handle(context.Background(), request(admissionv1.Create, []byte(`{"spec": 7`), nil))
	if resp.Allowed || resp.Result.Code != http.StatusBadRequest {
		t.Errorf("garbage: want 400, got allowed=%v %+v", resp.Allowed, resp.Result)
	}
}

type errReader struct{ err error }

func (r errReader) Get(context.Context, client.ObjectKey, client.Object, ...client.GetOption) error {
	return r.err
}
func (r errReader) List(context.Context, client.ObjectList, ...client.ListOption) error { return r.err }

func TestGatewayClassWarnings(t *testing.T) {
	istio := &gatewayv1.GatewayClass{ObjectMeta: metav1.ObjectMeta{Name: "istio"}, Spec: gatewayv1.GatewayClassSpec{ControllerName: "istio.io/gateway-controller"}}
	const path = "spec.upgradeStrategy.clusterUpgradeOptions.gatewayClassName"
	cases := map[string]struct {
		reader client.Reader
		want   []string
	}{
		"exists":    {reader: fake.NewClientBuilder().WithScheme(scheme()).WithObjects(istio).Build()},
		"missing":   {reader: fake.NewClientBuilder().WithScheme(scheme()).Build(), want: []string{path + `: GatewayClass "istio" does not exist yet; an incremental upgrade cannot route traffic until it is created`}},
		"no CRDs":   {reader: errReader{&meta.NoKindMatchError{GroupKind: schema.GroupKind{Group: "gateway.networking.k8s.io", Kind: "GatewayClass"}}}, want: []string{path + ": the Gateway API CRDs (gateway.networking.k8s.io) are not installed in this cluster; incremental upgrades need them and a Gateway controller"}},
		"forbidden": {reader: errReader{errors.New("forbidden")}},
		"no reader": {},
	}
	svc := builders.RayService("svc", "ns").Incremental(40, 10, 30, "istio").Obj()
	defaulting.RayService(svc)
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			resp := handlers(tc.reader)[webhooks.ValidateRayServicePath].Handle(context.Background(), request(admissionv1.Create, raw(t, svc), nil))
			if !resp.Allowed {
				t.Fatalf("denied: %v", resp.Result)
			}
			if diff := cmp.Diff(tc.want, resp.Warnings); diff != "" {
				t.Errorf("warnings (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRatchetingThroughTheHandler(t *testing.T) {
	old := builders.RayService("svc", "ns").Incremental(40, 10, 30, "istio").Obj()
	defaulting.RayService(old)
	h := webhooks.Handlers(webhooks.Options{Gates: features.Static{features.RayServiceIncrementalUpgrade: false}})[webhooks.ValidateRayServicePath]

	relabelled := old.DeepCopy()
	relabelled.Labels = map[string]string{"team": "ml"}
	if resp := h.Handle(context.Background(), request(admissionv1.Update, raw(t, relabelled), raw(t, old))); !resp.Allowed {
		t.Errorf("unrelated update denied after the gate was turned off: %v", resp.Result)
	}
	retuned := old.DeepCopy()
	retuned.Spec.UpgradeStrategy.ClusterUpgradeOptions.StepSizePercent = ptr.To[int32](20)
	resp := h.Handle(context.Background(), request(admissionv1.Update, raw(t, retuned), raw(t, old)))
	if resp.Allowed || !strings.Contains(resp.Result.Message, "--feature-gates=RayServiceIncrementalUpgrade=true") {
		t.Errorf("changing the gated strategy with the gate off: want a rejection naming the flag, got allowed=%v %v", resp.Allowed, resp.Result)
	}
}

func TestHandlersApplyTheLimits(t *testing.T) {
	rc := builders.RayCluster("rc", "ns").Obj()
	rc.Spec.WorkerGroupSpecs[0].Replicas = ptr.To[int32](8)
	defaulting.RayCluster(rc)
	for _, tc := range []struct {
		limits validation.Limits
		allow  bool
	}{
		{limits: validation.Limits{}, allow: true}, // the defaults
		{limits: validation.Limits{MaxPodsPerGroup: 8, MaxPodsPerCluster: 9}, allow: true},
		{limits: validation.Limits{MaxPodsPerGroup: 7, MaxPodsPerCluster: 100}},
		{limits: validation.Limits{MaxPodsPerGroup: 8, MaxPodsPerCluster: 8}},
	} {
		h := webhooks.Handlers(webhooks.Options{Gates: gateOn, Limits: tc.limits})[webhooks.ValidateRayClusterPath]
		if resp := h.Handle(context.Background(), request(admissionv1.Create, raw(t, rc), nil)); resp.Allowed != tc.allow {
			t.Errorf("limits %+v: allowed %v, want %v (%v)", tc.limits, resp.Allowed, tc.allow, resp.Result)
		}
	}
}
