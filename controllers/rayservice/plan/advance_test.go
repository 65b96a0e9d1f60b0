package plan

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/test/builders"
)

// Upgrades, rollbacks and restarts, driven through the simulated world.

func TestPlanNewClusterUpgrade(t *testing.T) {
	w := newWorld(builders.RayService("svc", "ns").DeletionDelay(30).Obj())
	settle(t, w)
	blue := w.svc.Status.ActiveServiceStatus.RayClusterName
	w.updateSpec(func(s *rayv1.RayService) {
		setTestImage(s, "rayproject/ray:2.53.0")
		s.Spec.ServeConfigV2 = serveConfigs[1]
	})
	p, _ := w.reconcile()
	created := actionsOf[CreateCluster](p.out)
	if len(created) != 1 || created[0].Done.Reason != EventUpgradeStarted {
		t.Fatalf("upgrade start: %v", created)
	}
	green := created[0].Cluster.Name

	p = stepUntil(t, w, "the switch", func(p *reconciled) bool { return p.out.Status.ActiveServiceStatus.RayClusterName == green })
	if es := eventsOf(p.out, EventPromoted); len(es) != 1 || !strings.Contains(es[0].Note, "is deleted after 30s") {
		t.Errorf("promotion events %+v", es)
	}
	if p.out.Metrics.Finished == nil || p.out.Metrics.Finished.Result != ResultPromoted {
		t.Errorf("finished %+v", p.out.Metrics.Finished)
	}
	for _, s := range p.submits {
		if s.Cluster.Name == blue {
			t.Errorf("the old cluster got a config during the upgrade: %s", s)
		}
	}
	if len(actionsOf[AnnotateCluster](p.out)) != 0 {
		t.Error("the old cluster was retired in the pass that demoted it, before the demotion was stored")
	}
	w.advance(time.Second)

	// The pass after: retired, with its deletion time recorded on it.
	p, _ = w.reconcile()
	retired := actionsOf[AnnotateCluster](p.out)
	at := p.now.Add(30 * time.Second)
	if at.Truncate(time.Second) != at {
		at = at.Truncate(time.Second).Add(time.Second)
	}
	if len(retired) != 1 || retired[0].Annotations[rayv1.DeleteAfterKey] != at.UTC().Format(time.RFC3339) || !p.out.Wake.At.Equal(at) {
		t.Fatalf("retired %v, wake %+v; want deletion at %v", retired, p.out.Wake, at)
	}
	w.advance(at.Sub(w.now) - time.Millisecond)
	if p, _ = w.reconcile(); len(actionsOf[DeleteCluster](p.out)) != 0 {
		t.Fatal("deleted before its time")
	}
	w.advance(time.Millisecond)
	if p, _ = w.reconcile(); len(actionsOf[DeleteCluster](p.out)) != 1 {
		t.Fatal("not deleted when due")
	}
}

func TestPlanRequeuesExactlyWhenTheNextStepIsDue(t *testing.T) {
	w := newWorld(incrementalService(20, 5, 10))
	settle(t, w)
	w.updateSpec(func(s *rayv1.RayService) { setTestImage(s, "rayproject/ray:2.53.0") })
	first := stepUntil(t, w, "a traffic step", func(p *reconciled) bool { return len(eventsOf(p.out, EventTrafficShifted)) == 1 })
	if !first.out.Wake.Soon {
		t.Error("a recorded step is carried out at once")
	}
	p := stepUntil(t, w, "waiting for the interval", func(p *reconciled) bool { return !p.out.Wake.At.IsZero() })
	last := p.out.Status.PendingServiceStatus.LastTrafficMigratedTime.Time
	if !p.out.Wake.At.Equal(last.Add(10*time.Second)) || p.out.Wake.Soon {
		t.Fatalf("wake %+v, want at %v (10 s after the step recorded at %v)", p.out.Wake, last.Add(10*time.Second), last)
	}
	w.advance(p.out.Wake.At.Sub(w.now) - time.Millisecond)
	if p, _ = w.reconcile(); len(eventsOf(p.out, EventTrafficShifted)) != 0 {
		t.Fatal("traffic moved before the interval")
	}
	w.advance(time.Millisecond)
	// Due now: the pending cluster's dashboard is read again first (the step goes on a read
	// made after it came due), and the step follows that read.
	if p, _ = w.reconcile(); len(p.out.Refresh) != 1 {
		t.Fatalf("no fresh read asked for when the step came due: %+v", p.out.Refresh)
	}
	due := w.now
	p = stepUntil(t, w, "the step after the read", func(p *reconciled) bool { return len(eventsOf(p.out, EventTrafficShifted)) == 1 })
	if p.now.Sub(due) > 2*dashLatency {
		t.Fatalf("the step went %v after it came due", p.now.Sub(due))
	}
	if es := eventsOf(p.out, EventTrafficShifted); !strings.Contains(es[0].Note, "pending svc-00002 10%") {
		t.Errorf("event %q", es[0].Note)
	}
}

func TestPlanAnnouncesDecisionsOnlyWithTheStatus(t *testing.T) {
	w := newWorld(incrementalService(50, 50, 1))
	settle(t, w)
	w.updateSpec(func(s *rayv1.RayService) { setTestImage(s, "rayproject/ray:2.53.0") })
	stepUntil(t, w, "traffic on the pending cluster", func(p *reconciled) bool {
		return ptr.Deref(p.out.Status.PendingServiceStatus.TrafficRoutedPercent, 0) > 0
	})
	w.updateSpec(func(s *rayv1.RayService) { setTestImage(s, builders.DefaultImage) })
	seen := map[string]bool{}
	stepUntil(t, w, "the rollback to finish", func(p *reconciled) bool {
		for _, e := range actionEvents(p.out) {
			if e.Reason == EventPromoted || e.Reason == EventTrafficShifted || e.Reason == EventRollback {
				t.Fatalf("%s announced by an action, before the status is stored", e.Reason)
			}
		}
		for _, e := range p.out.Events {
			seen[e.Reason] = true
		}
		return p.out.Status.PendingServiceStatus.RayClusterName == ""
	})
	if !seen[EventRollback] || !seen[EventTrafficShifted] {
		t.Errorf("events seen: %v", seen)
	}
}

func TestPlanRollsBackStepByStep(t *testing.T) {
	w := newWorld(incrementalService(50, 25, 1))
	settle(t, w)
	blue := w.svc.Status.ActiveServiceStatus.RayClusterName
	w.updateSpec(func(s *rayv1.RayService) { setTestImage(s, "rayproject/ray:2.53.0") })
	stepUntil(t, w, "half the traffic moved", func(p *reconciled) bool {
		return ptr.Deref(p.out.Status.PendingServiceStatus.TrafficRoutedPercent, 0) >= 50
	})
	green := w.svc.Status.PendingServiceStatus.RayClusterName
	w.updateSpec(func(s *rayv1.RayService) { setTestImage(s, builders.DefaultImage) })
	rollbackEvents, traffic := 0, []int32{}
	p := stepUntil(t, w, "the rollback to finish", func(p *reconciled) bool {
		rollbackEvents += len(eventsOf(p.out, EventRollback))
		if v := p.out.Status.PendingServiceStatus.TrafficRoutedPercent; v != nil && p.written && (len(traffic) == 0 || traffic[len(traffic)-1] != *v) {
			traffic = append(traffic, *v)
		}
		return p.out.Status.PendingServiceStatus.RayClusterName == ""
	})
	if got := condition(w.svc.Status, rayv1.RollbackInProgress); got != "False/NoRollback" {
		t.Errorf("RollbackInProgress %s", got)
	}
	if rollbackEvents != 2 || !strings.Contains(eventsOf(p.out, EventRollback)[0].Note, "rollback complete") {
		t.Errorf("%d rollback events (want the start and the end)", rollbackEvents)
	}
	if p.out.Metrics.Finished == nil || p.out.Metrics.Finished.Result != ResultRolledBack {
		t.Errorf("finished %+v", p.out.Metrics.Finished)
	}
	if fmt.Sprint(traffic) != "[50 25 0]" {
		t.Errorf("pending traffic on the way back: %v, want 50 25 0", traffic)
	}
	if w.svc.Status.ActiveServiceStatus.RayClusterName != blue || len(actionsOf[DeleteCluster](p.out)) != 0 {
		t.Fatal("the rollback must keep the active cluster and not delete the pending one at once")
	}
	w.advance(time.Second)
	if p, _ = w.reconcile(); len(actionsOf[AnnotateCluster](p.out)) != 1 || actionsOf[AnnotateCluster](p.out)[0].Cluster.Name != green {
		t.Errorf("the dropped pending cluster is retired with the deletion delay: %v", p.out.Actions)
	}
}

func TestPlanThirdSpecReturnsToTheActiveClusterFirst(t *testing.T) {
	w := newWorld(incrementalService(50, 50, 1))
	settle(t, w)
	w.updateSpec(func(s *rayv1.RayService) { setTestImage(s, "rayproject/ray:2.53.0") })
	stepUntil(t, w, "traffic on the pending cluster", func(p *reconciled) bool {
		return ptr.Deref(p.out.Status.PendingServiceStatus.TrafficRoutedPercent, 0) > 0
	})
	second := w.svc.Status.PendingServiceStatus.RayClusterName
	w.updateSpec(func(s *rayv1.RayService) { setTestImage(s, "rayproject/ray:2.54.0") })
	p, _ := w.reconcile()
	if c := findCondition(p.out.Status.Conditions, rayv1.RollbackInProgress); c == nil || c.Status != metav1.ConditionTrue || !strings.Contains(c.Message, "changed again") {
		t.Fatalf("RollbackInProgress %+v", c)
	}
	if len(actionsOf[CreateCluster](p.out)) != 0 {
		t.Fatal("a third cluster was created before returning to the active one")
	}
	p = stepUntil(t, w, "a new pending cluster", func(p *reconciled) bool {
		n := p.out.Status.PendingServiceStatus.RayClusterName
		return n != "" && n != second
	})
	if created := actionsOf[CreateCluster](p.out); len(created) != 1 || created[0].Cluster.Spec.HeadGroupSpec.Template.Spec.Containers[0].Image != "rayproject/ray:2.54.0" {
		t.Errorf("third cluster: %v", created)
	}
}

func TestPlanMovesNoTrafficToUnhealthyApplications(t *testing.T) {
	w := newWorld(incrementalService(50, 50, 1))
	settle(t, w)
	w.updateSpec(func(s *rayv1.RayService) {
		setTestImage(s, "rayproject/ray:2.53.0")
		s.Spec.ServeConfigV2 = serveConfigs[2] // its applications fail
	})
	warnings := 0
	for range 60 {
		p, err := w.step()
		if err != nil {
			t.Fatal(err)
		}
		warnings += len(eventsOf(p.out, EventPendingUnhealthy))
		if v := ptr.Deref(p.out.Status.PendingServiceStatus.TrafficRoutedPercent, 0); v != 0 {
			t.Fatalf("traffic %d%% moved to a pending cluster whose applications fail", v)
		}
	}
	if got := condition(w.svc.Status, rayv1.UpgradeInProgress); got != "True/PendingApplicationsUnhealthy" {
		t.Errorf("UpgradeInProgress %s", got)
	}
	if warnings != 1 {
		t.Errorf("%d warnings, want one while the condition says so", warnings)
	}
}

func TestPlanKeepsTheActiveClustersConfig(t *testing.T) {
	w := newWorld(incrementalService(50, 50, 1))
	settle(t, w)
	blue := w.svc.Status.ActiveServiceStatus.RayClusterName
	runs := submittedOn(w.clusters[blue].rc).Hash
	w.updateSpec(func(s *rayv1.RayService) {
		setTestImage(s, "rayproject/ray:2.53.0")
		s.Spec.ServeConfigV2 = serveConfigs[1]
	})
	capacityChanges := 0
	stepUntil(t, w, "promotion", func(p *reconciled) bool {
		for _, s := range p.submits {
			if s.Cluster.Name == blue {
				capacityChanges++
				if s.Hash != runs || s.Config != nil {
					t.Fatalf("the active cluster got config %s (%v) during the upgrade; it runs %s, sent from its record", s.Hash, s.Config, runs)
				}
			}
		}
		return p.out.Status.ActiveServiceStatus.RayClusterName != blue
	})
	if capacityChanges == 0 {
		t.Error("the active cluster's target capacity never changed")
	}

	// Without a record of what it runs, the active cluster gets nothing during an upgrade,
	// and the upgrade says why it waits.
	w = newWorld(incrementalService(50, 50, 1))
	settle(t, w)
	blue = w.svc.Status.ActiveServiceStatus.RayClusterName
	delete(w.records, blue)
	w.updateSpec(func(s *rayv1.RayService) {
		setTestImage(s, "rayproject/ray:2.53.0")
		s.Spec.ServeConfigV2 = serveConfigs[1]
	})
	before := w.clusters[blue].runningTC
	for range 30 {
		if _, err := w.step(); err != nil {
			t.Fatal(err)
		}
	}
	if w.clusters[blue].runningTC != before {
		t.Fatalf("the active cluster whose config is unknown was sent a config")
	}
	if c := findCondition(w.svc.Status.Conditions, rayv1.UpgradeInProgress); c == nil || !strings.Contains(c.Message, "ConfigMap "+blue+recordSuffix+" is missing") {
		t.Errorf("the upgrade should say it waits for the record: %+v", c)
	}

	// A cluster made by an older raygate records its config in an annotation: it is sent
	// from there.
	w = newWorld(incrementalService(50, 50, 1))
	settle(t, w)
	blue = w.svc.Status.ActiveServiceStatus.RayClusterName
	cfg := w.records[blue][submittedOn(w.clusters[blue].rc).Hash]
	legacy, _ := json.Marshal(cfg.doc)
	setAnnotations(w.clusters[blue].rc, map[string]string{LegacyServeConfigKey: string(legacy)})
	delete(w.records, blue)
	w.updateSpec(func(s *rayv1.RayService) {
		setTestImage(s, "rayproject/ray:2.53.0")
		s.Spec.ServeConfigV2 = serveConfigs[1]
	})
	stepUntil(t, w, "promotion", func(p *reconciled) bool { return p.out.Status.ActiveServiceStatus.RayClusterName != blue })
}

func TestPlanResumesAfterACrashBetweenCreateAndStatusWrite(t *testing.T) {
	w := newWorld(builders.RayService("svc", "ns").Obj())
	settle(t, w)
	w.updateSpec(func(s *rayv1.RayService) { setTestImage(s, "rayproject/ray:2.53.0") })
	w.conflictStatus = true
	p, _ := w.reconcile()
	if len(actionsOf[CreateCluster](p.out)) != 1 || w.svc.Status.PendingServiceStatus.RayClusterName != "" {
		t.Fatal("setup: the cluster is created and the status not written")
	}
	created := actionsOf[CreateCluster](p.out)[0].Cluster.Name
	p, _ = w.reconcile()
	if len(actionsOf[CreateCluster](p.out)) != 0 || p.out.Status.PendingServiceStatus.RayClusterName != created {
		t.Fatalf("the next pass created %v; pending %q, want %s adopted", actionsOf[CreateCluster](p.out), p.out.Status.PendingServiceStatus.RayClusterName, created)
	}
}

func TestPlanKeepsAClusterTrafficMayStillReach(t *testing.T) {
	// A pass switched the serve Service to the pending cluster but its status write was
	// lost; then the spec goes back. The pending cluster is not deleted at once.
	w := newWorld(builders.RayService("svc", "ns").DeletionDelay(30).Obj())
	settle(t, w)
	w.updateSpec(func(s *rayv1.RayService) { setTestImage(s, "rayproject/ray:2.53.0") })
	stepUntil(t, w, "the switch", func(p *reconciled) bool {
		if p.out.Status.ActiveServiceStatus.RayClusterName != p.stored.ActiveServiceStatus.RayClusterName {
			return true
		}
		w.conflictStatus = true // the next pass's write is lost
		return false
	})
	w.svc.Status = *w.svc.Status.DeepCopy()
	green := w.svc.Status.PendingServiceStatus.RayClusterName
	if green == "" || w.traffic().serving != green {
		t.Fatalf("setup: pending %q, serving %q", green, w.traffic().serving)
	}
	w.updateSpec(func(s *rayv1.RayService) { setTestImage(s, builders.DefaultImage) })
	p, _ := w.reconcile()
	if len(actionsOf[DeleteCluster](p.out)) != 0 || w.traffic().serving == green {
		t.Fatalf("deleted %v; serving %s", actionsOf[DeleteCluster](p.out), w.traffic().serving)
	}
}
