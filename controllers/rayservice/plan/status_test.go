package plan

import (
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
)

// A RayService that served is never Initializing again, as in KubeRay: losing its active
// cluster leaves it ZeroServeEndpoints, so an initializing timeout cannot fail it.
func TestServedOnceIsNeverInitializingAgain(t *testing.T) {
	st := &rayv1.RayServiceStatuses{}
	setConditions(st, 1, conditionInputs{ActiveName: "s-1", Endpoints: 2}, metav1.Now())
	setConditions(st, 1, conditionInputs{PendingName: "s-2", FirstClusterMessage: "preparing s-2"}, metav1.Now())
	if got := cond(st, rayv1.RayServiceReady); got != "False/ZeroServeEndpoints" {
		t.Errorf("Ready %s after the active cluster went", got)
	}
	setConditions(st, 1, conditionInputs{PendingName: "s-2"}, metav1.Now())
	if got := cond(st, rayv1.RayServiceReady); got != "False/ZeroServeEndpoints" {
		t.Errorf("Ready %s on the next pass", got)
	}
	// A rejected spec that is fixed before anything served initializes again.
	st = &rayv1.RayServiceStatuses{}
	setConditions(st, 1, conditionInputs{ValidationError: "bad"}, metav1.Now())
	setConditions(st, 2, conditionInputs{PendingName: "s-1"}, metav1.Now())
	if got := cond(st, rayv1.RayServiceReady); got != "False/Initializing" {
		t.Errorf("Ready %s after a fixed spec", got)
	}
}

func TestSetConditions(t *testing.T) {
	type want struct{ ready, upgrading, rollback string }
	cases := []struct {
		name string
		in   conditionInputs
		want want
		msg  string // in some condition message
	}{
		{"initializing", conditionInputs{PendingName: "s-1", FirstClusterMessage: "waiting for the head pod of s-1 to be ready"},
			want{"False/Initializing", "False/NoActiveCluster", "False/NoRollback"}, "waiting for the head pod"},
		{"serving", conditionInputs{ActiveName: "s-1", Endpoints: 3},
			want{"True/NonZeroServeEndpoints", "False/NoPendingCluster", "False/NoRollback"}, "3 serve endpoint"},
		{"no endpoints", conditionInputs{ActiveName: "s-1"},
			want{"False/ZeroServeEndpoints", "False/NoPendingCluster", "False/NoRollback"}, ""},
		{"upgrading", conditionInputs{ActiveName: "s-1", PendingName: "s-2", Endpoints: 3, UpgradeMessage: "upgrading from s-1 to s-2"},
			want{"True/NonZeroServeEndpoints", "True/BothActivePendingClustersExist", "False/NoRollback"}, "upgrading from s-1 to s-2"},
		{"pending unhealthy", conditionInputs{ActiveName: "s-1", PendingName: "s-2", Endpoints: 3, PendingUnhealthy: []string{"fruit (UNHEALTHY: replica crashed)"}},
			want{"True/NonZeroServeEndpoints", "True/PendingApplicationsUnhealthy", "False/NoRollback"}, "fruit (UNHEALTHY: replica crashed)"},
		{"rolling back", conditionInputs{ActiveName: "s-1", PendingName: "s-2", Endpoints: 3, RollingBack: true, RollbackMessage: "the spec went back"},
			want{"True/NonZeroServeEndpoints", "True/BothActivePendingClustersExist", "True/DesiredClusterSpecChanged"}, "the spec went back"},
		{"blocked", conditionInputs{ActiveName: "s-1", Endpoints: 1, Blocked: "needs the Gateway API CRDs"},
			want{"True/NonZeroServeEndpoints", "False/GatewayAPIUnavailable", "False/NoRollback"}, "needs the Gateway API CRDs"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			st := &rayv1.RayServiceStatuses{}
			setConditions(st, 4, tc.in, metav1.Now())
			got := want{cond(st, rayv1.RayServiceReady), cond(st, rayv1.UpgradeInProgress), cond(st, rayv1.RollbackInProgress)}
			if got != tc.want {
				t.Errorf("conditions %+v, want %+v", got, tc.want)
			}
			all := ""
			for _, c := range st.Conditions {
				all += c.Message + "\n"
				if c.ObservedGeneration != 4 {
					t.Errorf("%s observedGeneration %d", c.Type, c.ObservedGeneration)
				}
			}
			if !strings.Contains(all, tc.msg) {
				t.Errorf("messages %q lack %q", all, tc.msg)
			}
			if (st.ServiceStatus == rayv1.Running) != strings.HasPrefix(tc.want.ready, "True") {
				t.Errorf("serviceStatus %q with Ready %s", st.ServiceStatus, tc.want.ready)
			}
		})
	}
}

func TestValidationFailedKeepsOtherConditions(t *testing.T) {
	st := &rayv1.RayServiceStatuses{}
	setConditions(st, 1, conditionInputs{ActiveName: "s-1", PendingName: "s-2", Endpoints: 2}, metav1.Now())
	setConditions(st, 2, conditionInputs{ValidationError: "spec.upgradeStrategy.type: Forbidden"}, metav1.Now())
	if cond(st, rayv1.RayServiceReady) != "False/ValidationFailed" || cond(st, rayv1.UpgradeInProgress) != "True/BothActivePendingClustersExist" {
		t.Fatalf("%v", st.Conditions)
	}
}

func TestConditionsAreStable(t *testing.T) {
	// Recomputing from the same inputs later changes nothing: no status write at steady state.
	in := conditionInputs{ActiveName: "s-1", Endpoints: 2}
	st := &rayv1.RayServiceStatuses{}
	setConditions(st, 1, in, metav1.NewTime(time.Unix(100, 0)))
	before := st.DeepCopy()
	setConditions(st, 1, in, metav1.NewTime(time.Unix(500, 0)))
	if statusChanged(before, st) {
		t.Fatal("same inputs changed the status")
	}
	st.LastUpdateTime = &metav1.Time{Time: time.Unix(600, 0)}
	if statusChanged(before, st) {
		t.Fatal("lastUpdateTime alone counted as a change")
	}
}

func TestUnhealthyApps(t *testing.T) {
	apps := map[string]rayv1.AppStatus{
		"a": {Status: rayv1.ApplicationStatusRunning},
		"b": {Status: rayv1.ApplicationStatusDeploying},
		"c": {Status: rayv1.ApplicationStatusUnhealthy, Message: "replica crashed"},
		"d": {Status: rayv1.ApplicationStatusDeployFailed},
	}
	got := strings.Join(unhealthyApps(apps), "; ")
	if got != "c (UNHEALTHY: replica crashed); d (DEPLOY_FAILED)" {
		t.Errorf("unhealthy = %q", got)
	}
	if appsRunning(apps, []string{"a"}) != true || appsRunning(apps, []string{"a", "b"}) || appsRunning(apps, []string{"missing"}) {
		t.Error("appsRunning")
	}
}

func TestStampTime(t *testing.T) {
	base := time.Date(2026, 1, 1, 0, 0, 10, 0, time.UTC)
	for offset, want := range map[time.Duration]time.Duration{
		0: 0, 150 * time.Millisecond: 0, 300 * time.Millisecond: time.Second, 999 * time.Millisecond: time.Second,
	} {
		if got := stampTime(base.Add(offset)); !got.Equal(base.Add(want)) {
			t.Errorf("stampTime(+%v) = +%v, want +%v", offset, got.Sub(base), want)
		}
	}
}

func cond(st *rayv1.RayServiceStatuses, t rayv1.RayServiceConditionType) string {
	c := meta.FindStatusCondition(st.Conditions, string(t))
	if c == nil {
		return "missing"
	}
	return string(c.Status) + "/" + c.Reason
}
