package raygatectl

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	raygatev1alpha1 "github.com/raygate/raygate/apis/raygate/v1alpha1"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// checkGolden compares got with testdata/<name>, rewriting the file first under -update.
func checkGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("%s (-want +got):\n%s", name, diff)
	}
}

var now = time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC)

func cond(t rayv1.RayServiceConditionType, status metav1.ConditionStatus, reason, msg string) metav1.Condition {
	return metav1.Condition{Type: string(t), Status: status, Reason: reason, Message: msg}
}

// upgrading is an incremental upgrade 30 s in: 20% of traffic moved, the next step in 4 s.
func upgrading() *rayv1.RayService {
	svc := &rayv1.RayService{
		ObjectMeta: metav1.ObjectMeta{Name: "fruit", Namespace: "ml", Generation: 2},
		Spec: rayv1.RayServiceSpec{UpgradeStrategy: &rayv1.RayServiceUpgradeStrategy{
			Type:                  ptr.To(rayv1.NewClusterWithIncrementalUpgrade),
			ClusterUpgradeOptions: &rayv1.ClusterUpgradeOptions{MaxSurgePercent: ptr.To[int32](20), StepSizePercent: ptr.To[int32](5), IntervalSeconds: ptr.To[int32](10)},
		}},
	}
	last := metav1.NewTime(now.Add(-6 * time.Second))
	svc.Status = rayv1.RayServiceStatuses{
		ObservedGeneration: 2, NumServeEndpoints: 4,
		Conditions: []metav1.Condition{
			cond(rayv1.RayServiceReady, metav1.ConditionTrue, "NonZeroServeEndpoints", "4 serve endpoints"),
			cond(rayv1.UpgradeInProgress, metav1.ConditionTrue, "BothActivePendingClustersExist",
				"upgrading from fruit-kp8ct to fruit-4hw2t: capacity active 80% / pending 40%, traffic active 80% / pending 20%; next traffic step at 2026-11-26T10:00:04Z"),
			cond(rayv1.RollbackInProgress, metav1.ConditionFalse, "NoRollback", ""),
		},
		ActiveServiceStatus: rayv1.RayServiceStatus{
			RayClusterName: "fruit-kp8ct", TargetCapacity: ptr.To[int32](80), TrafficRoutedPercent: ptr.To[int32](80), LastTrafficMigratedTime: &last,
			Applications:     map[string]rayv1.AppStatus{"fruit": {Status: "RUNNING"}, "math": {Status: "RUNNING"}},
			RayClusterStatus: rayv1.RayClusterStatus{ReadyWorkerReplicas: 3, DesiredWorkerReplicas: 3},
		},
		PendingServiceStatus: rayv1.RayServiceStatus{
			RayClusterName: "fruit-4hw2t", TargetCapacity: ptr.To[int32](40), TrafficRoutedPercent: ptr.To[int32](20), LastTrafficMigratedTime: &last,
			Applications:     map[string]rayv1.AppStatus{"fruit": {Status: "RUNNING"}, "math": {Status: "DEPLOYING"}},
			RayClusterStatus: rayv1.RayClusterStatus{ReadyWorkerReplicas: 1, DesiredWorkerReplicas: 2},
		},
	}
	return svc
}

func routeWith(weights map[string]int32) *gwv1.HTTPRoute {
	rt := &gwv1.HTTPRoute{Spec: gwv1.HTTPRouteSpec{Rules: []gwv1.HTTPRouteRule{{}}}}
	for _, name := range []string{"fruit-kp8ct", "fruit-4hw2t"} {
		if w, ok := weights[name]; ok {
			rt.Spec.Rules[0].BackendRefs = append(rt.Spec.Rules[0].BackendRefs, gwv1.HTTPBackendRef{BackendRef: gwv1.BackendRef{
				BackendObjectReference: gwv1.BackendObjectReference{Name: gwv1.ObjectName(name + "-serve-svc")}, Weight: ptr.To(w)}})
		}
	}
	return rt
}

func TestRender(t *testing.T) {
	paused := upgrading()
	paused.Annotations = map[string]string{rayv1.UpgradeActionKey: "pause", rayv1.UpgradeTargetKey: "fruit-4hw2t"}
	paused.Status.Conditions[1].Message = "upgrading from fruit-kp8ct to fruit-4hw2t: capacity active 80% / pending 40%, traffic active 80% / pending 20%; paused by raygate.ray.io/upgrade-action=pause"
	paused.Status.Conditions = append(paused.Status.Conditions, cond(rayv1.UpgradeAction, metav1.ConditionTrue, rayv1.UpgradePaused,
		"the upgrade to RayCluster fruit-4hw2t is paused (raygate.ray.io/upgrade-action=pause): capacity and traffic stay where they are until resume, abort or promote"))

	waiting := upgrading()
	waiting.Status.Conditions[1].Message = "upgrading from fruit-kp8ct to fruit-4hw2t: capacity active 80% / pending 40%, traffic active 80% / pending 20%; " +
		"waiting for the last step to take effect: HTTPRoute fruit-httproute: Accepted not reported for generation 7 yet"
	waiting.Status.PendingServiceStatus.LastTrafficMigratedTime = &metav1.Time{Time: now.Add(-30 * time.Second)}

	gated := upgrading()
	gated.Annotations = map[string]string{raygatev1alpha1.UpgradePolicyAnnotation: "canary", rayv1.UpgradeActionKey: "pause", rayv1.UpgradeTargetKey: "fruit-4hw2t"}
	gated.Status.Conditions = append(slices.Clone(paused.Status.Conditions), cond(rayv1.RayServiceConditionType(raygatev1alpha1.UpgradeGatesCondition), metav1.ConditionFalse, raygatev1alpha1.GateFailed,
		`gate "error-rate" of UpgradePolicy canary failed: query sum(rate(errors{namespace="ml"}[1m])) returned 0.3, above max 0.05`))

	steady := &rayv1.RayService{ObjectMeta: metav1.ObjectMeta{Name: "fruit", Namespace: "ml", Generation: 3}}
	steady.Annotations = map[string]string{rayv1.UpgradeActionKey: "promote", rayv1.UpgradeTargetKey: "fruit-4hw2t"}
	steady.Status = rayv1.RayServiceStatuses{
		ObservedGeneration: 3, NumServeEndpoints: 2,
		Conditions: []metav1.Condition{
			cond(rayv1.RayServiceReady, metav1.ConditionTrue, "NonZeroServeEndpoints", ""),
			cond(rayv1.UpgradeInProgress, metav1.ConditionFalse, "NoPendingCluster", ""),
		},
		ActiveServiceStatus: rayv1.RayServiceStatus{RayClusterName: "fruit-4hw2t", Applications: map[string]rayv1.AppStatus{"fruit": {Status: "RUNNING"}}},
	}

	for _, tc := range []struct {
		golden string
		view   View
		render func(*bytes.Buffer, View) error
	}{
		{"status-incremental.golden", View{Service: upgrading(), Route: routeWith(map[string]int32{"fruit-kp8ct": 80, "fruit-4hw2t": 20}), Now: now}, renderStatus},
		{"status-paused.golden", View{Service: paused, Route: routeWith(map[string]int32{"fruit-kp8ct": 80, "fruit-4hw2t": 20}), Now: now}, renderStatus},
		{"status-steady.golden", View{Service: steady, Now: now}, renderStatus},
		{"why-waiting.golden", View{Service: waiting, Now: now}, renderWhy},
		{"why-paused.golden", View{Service: paused, Now: now}, renderWhy},
		{"why-steady.golden", View{Service: steady, Now: now}, renderWhy},
		{"status-gated.golden", View{Service: gated, Route: routeWith(map[string]int32{"fruit-kp8ct": 80, "fruit-4hw2t": 20}), Now: now}, renderStatus},
		{"why-gated.golden", View{Service: gated, Now: now}, renderWhy},
	} {
		t.Run(tc.golden, func(t *testing.T) {
			var b bytes.Buffer
			if err := tc.render(&b, tc.view); err != nil {
				t.Fatal(err)
			}
			checkGolden(t, tc.golden, b.Bytes())
		})
	}
}

func renderStatus(b *bytes.Buffer, v View) error { return RenderStatus(b, v) }
func renderWhy(b *bytes.Buffer, v View) error    { return RenderWhy(b, v) }

func TestActionPatch(t *testing.T) {
	for _, tc := range []struct{ action, target, want string }{
		{"promote", "fruit-4hw2t", `{"metadata":{"annotations":{"raygate.ray.io/upgrade-action":"promote","raygate.ray.io/upgrade-target":"fruit-4hw2t"}}}`},
		{"resume", "", `{"metadata":{"annotations":{"raygate.ray.io/upgrade-action":"resume","raygate.ray.io/upgrade-target":null}}}`},
	} {
		if got := string(ActionPatch(tc.action, tc.target)); got != tc.want {
			t.Errorf("ActionPatch(%q, %q) = %s, want %s", tc.action, tc.target, got, tc.want)
		}
	}
}
