package plan

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/test/builders"
)

// A cluster whose pods the platform refuses is named in the RayService's conditions, with
// the refusal quoted sanitized, cut and without the refused pod's generated name (so the
// message stays the same while the refusal does), and announced once.
func TestPlanSaysWhenPodsAreRefused(t *testing.T) {
	w := newWorld(builders.RayService("svc", "ns").Obj())
	p, _ := w.reconcile()
	rc := w.clusters[p.out.Status.PendingServiceStatus.RayClusterName].rc
	refuse := func(pod string) {
		rc.Status.Conditions = []metav1.Condition{{
			Type: string(rayv1.RayClusterReplicaFailure), Status: metav1.ConditionTrue, Reason: rayv1.FailedCreateHeadPod,
			Message: `creating head pod: pods "` + pod + `" is forbidden: violates PodSecurity "restricted:latest": ` + "\x1b[31mhostPath\x1b[0m" + strings.Repeat(" volumes", 100),
		}}
	}
	refuse("svc-00001-head-abcde")
	p, _ = w.reconcile()
	msg := findCondition(p.out.Status.Conditions, rayv1.RayServiceReady).Message
	if !strings.Contains(msg, "RayCluster svc-00001 cannot create pods (FailedCreateHeadPod): creating head pod: a pod is forbidden: violates PodSecurity") ||
		strings.ContainsRune(msg, '\x1b') || len(msg) > 600 || strings.Contains(msg, "abcde") {
		t.Fatalf("Ready message %q", msg)
	}
	if len(eventsOf(p.out, EventPodsRefused)) != 1 {
		t.Fatalf("events %v", p.out.Events)
	}
	refuse("svc-00001-head-fghij") // the next attempt, another generated name
	if p, _ = w.reconcile(); len(eventsOf(p.out, EventPodsRefused)) != 0 || findCondition(p.out.Status.Conditions, rayv1.RayServiceReady).Message != msg {
		t.Errorf("the same refusal announced again or reworded: %v", p.out.Events)
	}
	rc.Status.Conditions = nil
	if p, _ = w.reconcile(); strings.Contains(findCondition(p.out.Status.Conditions, rayv1.RayServiceReady).Message, "cannot create pods") {
		t.Error("the refusal outlived the condition")
	}
}
