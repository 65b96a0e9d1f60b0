package plan

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/rayspec"
	"github.com/raygate/raygate/test/builders"
)

// FuzzPlan drives plan through a simulated world, pass after pass, with the integers of the
// spec (pacing, deletion delay, replicas) chosen by the fuzzer and a script of spec changes
// and faults: image and serve config changes (including going back and a third spec
// mid-upgrade, suspend and resume), head restarts, dashboards down or refusing configs, applications failing,
// actions failing, status writes conflicting, the gateway controller stalling, clusters
// deleted by hand. Every pass is judged on the upgrade invariants; a status edited by hand
// with extreme integers is planned for too. At the end, with the faults gone, the world must
// converge: one cluster, running the spec, serving. The seeds run as tests under go test.
func FuzzPlan(f *testing.F) {
	const (
		newCluster  = uint8(0)
		incremental = uint8(1)
		none        = uint8(2)
	)
	// Scripts: per pass, the bytes perturb reads, then the one wait reads; 127 means
	// "nothing" to both, so quiet passes let the upgrade progress.
	quiet := func(passes int) []byte { return slices.Repeat([]byte{127, 127}, passes) }
	script := func(parts ...[]byte) []byte { return slices.Concat(parts...) }
	var (
		upgrade    = []byte{0, 1, 127}  // image 2.53
		third      = []byte{0, 2, 127}  // image 2.54
		rollback   = []byte{3, 127}     // back to the active cluster's spec
		brokenApps = []byte{6, 2, 127}  // a serve config whose applications fail
		restart    = []byte{12, 0, 127} // the head of the first cluster restarts
		refuse     = []byte{21, 0, 127} // dashboards refuse (bad request)
		failAction = []byte{24, 1, 127} // the second action fails
		conflict   = []byte{27, 127}    // the status write conflicts
		hang       = []byte{45, 0, 127} // the first cluster's dashboard hangs (or stops hanging)
		restartOp  = []byte{48, 127}    // the operator restarts: the dashboard pool forgets
		legacy     = []byte{51, 0, 127} // the first cluster recorded its config as an older raygate did
		podsRefuse = []byte{54, 1, 127} // the second cluster's pods are refused (or admitted again)
		suspend    = []byte{57, 0, 127} // spec.suspend flips
	)
	f.Add(int32(20), int32(5), int32(10), int32(60), int32(1), incremental, script(quiet(10), upgrade, quiet(120)))
	f.Add(int32(50), int32(25), int32(1), int32(1), int32(1), incremental, script(quiet(10), upgrade, quiet(8), rollback, quiet(60)))
	f.Add(int32(50), int32(50), int32(1), int32(1), int32(2), incremental, script(quiet(10), upgrade, quiet(6), third, quiet(60)))
	f.Add(int32(100), int32(100), int32(0), int32(0), int32(1), incremental, script(quiet(10), upgrade, restart, refuse, conflict, quiet(4), failAction, quiet(40)))
	f.Add(int32(40), int32(20), int32(1), int32(2), int32(1), incremental, script(quiet(10), upgrade, quiet(4), brokenApps, quiet(20)))
	f.Add(int32(20), int32(5), int32(1), int32(3), int32(1), newCluster, script(quiet(10), upgrade, quiet(3), third, quiet(30)))
	f.Add(int32(20), int32(5), int32(1), int32(3), int32(1), newCluster, script(quiet(5), upgrade, conflict, rollback, quiet(30)))
	f.Add(int32(20), int32(5), int32(1), int32(0), int32(1), none, script(quiet(10), upgrade, brokenApps, quiet(20)))
	f.Add(int32(30), int32(10), int32(2), int32(5), int32(3), incremental, []byte("a script of faults: restarts, refusals, conflicts, stalls"))
	f.Add(int32(50), int32(25), int32(1), int32(2), int32(1), incremental, script(quiet(10), legacy, upgrade, quiet(3), hang, quiet(6), hang, restartOp, podsRefuse, quiet(8), restartOp, quiet(60)))
	f.Add(int32(20), int32(5), int32(1), int32(3), int32(1), newCluster, script(quiet(10), upgrade, restartOp, hang, quiet(10), podsRefuse, quiet(30)))
	f.Add(int32(50), int32(25), int32(1), int32(2), int32(1), incremental, script(quiet(10), upgrade, quiet(4), suspend, quiet(3), suspend, quiet(60)))
	f.Add(int32(20), int32(5), int32(1), int32(3), int32(1), newCluster, script(quiet(10), suspend, conflict, failAction, suspend, quiet(40)))
	// Extreme integers: zero, negative, the largest and smallest int32.
	f.Add(int32(0), int32(0), int32(0), int32(0), int32(0), incremental, script(quiet(5), upgrade, quiet(40)))
	f.Add(int32(-1), int32(-1), int32(-1), int32(-1), int32(-1), incremental, script(quiet(5), upgrade, quiet(40)))
	f.Add(int32(math.MaxInt32), int32(math.MaxInt32), int32(math.MaxInt32), int32(math.MaxInt32), int32(math.MaxInt32), incremental, script(quiet(5), upgrade, quiet(40)))
	f.Add(int32(math.MinInt32), int32(math.MinInt32), int32(math.MinInt32), int32(math.MinInt32), int32(math.MinInt32), incremental, script(quiet(5), upgrade, quiet(40)))
	f.Add(int32(1), int32(1), int32(math.MaxInt32), int32(math.MaxInt32), int32(math.MaxInt32), newCluster, script(quiet(5), upgrade, quiet(40)))

	f.Fuzz(func(t *testing.T, maxSurge, stepSize, interval, deletionDelay, replicas int32, strategy uint8, script []byte) {
		s := scenario{maxSurge: maxSurge, stepSize: stepSize, interval: interval, deletionDelay: deletionDelay, replicas: replicas, strategy: strategy % 3}
		s.run(t, newDice(script, maxSurge, stepSize, interval, deletionDelay, replicas, strategy))
	})
}

// scenario is one fuzz input's RayService.
type scenario struct {
	maxSurge, stepSize, interval, deletionDelay, replicas int32
	strategy                                              uint8
}

// How many passes the script's perturbations run for; the world then calms down.
const (
	scriptedPasses = 120
	calmPasses     = 6000
)

var images = []string{builders.DefaultImage, "rayproject/ray:2.53.0", "rayproject/ray:2.54.0"}

var serveConfigs = []string{
	builders.DefaultServeConfig,
	strings.Replace(builders.DefaultServeConfig, "num_replicas: 2", "num_replicas: 3", 1),
	strings.Replace(builders.DefaultServeConfig, "fruit.deployment_graph", brokenImportPath, 1),
	builders.DefaultServeConfig + "  - name: veggie\n    route_prefix: /veggie\n    import_path: veggie.deployment_graph\n",
}

func (s scenario) service() *rayv1.RayService {
	b := builders.RayService("svc", "ns").DeletionDelay(s.deletionDelay)
	switch s.strategy {
	case 1:
		b = b.Incremental(s.maxSurge, s.stepSize, s.interval, "gw")
	case 2:
		b = b.Strategy(rayv1.None)
	}
	svc := b.Obj()
	svc.Spec.RayClusterSpec.WorkerGroupSpecs[0].Replicas = ptr.To(s.replicas)
	return svc
}

func (s scenario) run(t *testing.T, d *dice) {
	w := newWorld(s.service())
	c := newChecker()
	var history []string
	step := func(phase string, i int) *reconciled {
		p, err := w.reconcile()
		if err != nil {
			t.Fatalf("%s pass %d: %v\nhistory:\n%s", phase, i, err, strings.Join(history, "\n"))
		}
		history = append(history, describePass(p))
		if len(history) > 40 {
			history = history[1:]
		}
		if breaches := c.check(p); len(breaches) > 0 {
			t.Fatalf("%s pass %d at %s:\n  %s\nhistory:\n%s", phase, i, p.now.Format(time.RFC3339Nano), strings.Join(breaches, "\n  "), strings.Join(history, "\n"))
		}
		if i%8 == 0 {
			values := []int32{s.maxSurge, s.stepSize, s.interval, s.deletionDelay, s.replicas, 0, -1, 101, math.MaxInt32, math.MinInt32}
			probeExtremeStatus(t, p, values[i/8%len(values)], values[(i/8+3)%len(values)])
		}
		return p
	}
	for i := range scriptedPasses {
		history = append(history, perturb(w, d))
		p := step("scripted", i)
		w.advance(w.untilNext(wait(d, p)))
	}
	calm(w)
	history = append(history, "calm: faults cleared")
	for i := range calmPasses {
		if converged(w) {
			return
		}
		p := step("calm", i)
		w.advance(w.untilNext(p.out.Wake.After(w.now, time.Second, time.Minute)))
	}
	var clusters []string
	for _, n := range slices.Sorted(maps.Keys(w.clusters)) {
		c := w.clusters[n]
		clusters = append(clusters, fmt.Sprintf("%s: ready=%v apps=%v broken=%v runs=%+v pool=%+v", n, c.ready(w.now), c.reportedApps(), c.brokenConfig, submittedOn(c.rc), c.pool.snap.Submission))
	}
	t.Fatalf("did not converge after the faults were cleared: status %+v\nclusters:\n%s\nhistory:\n%s",
		w.svc.Status, strings.Join(clusters, "\n"), strings.Join(history, "\n"))
}

// wait is how long the clock moves after a pass: usually until the plan's wakeup, sometimes
// less (a watch event comes first) or a little more (the operator is slow).
func wait(d *dice, p *reconciled) time.Duration {
	want := p.out.Wake.After(p.now, time.Second, time.Minute)
	switch d.intn(8) {
	case 0:
		return 0
	case 1:
		return time.Duration(d.intn(5000)) * time.Millisecond
	case 2:
		return want + time.Duration(d.intn(3000))*time.Millisecond
	}
	return want
}

// perturb applies the script's next change to the world and says what it was.
func perturb(w *world, d *dice) string {
	names := slices.Sorted(maps.Keys(w.clusters))
	pick := func() string {
		if len(names) == 0 {
			return ""
		}
		return names[d.intn(len(names))]
	}
	switch d.intn(128) / 3 {
	case 0:
		img := images[d.intn(len(images))]
		w.updateSpec(func(s *rayv1.RayService) { setTestImage(s, img) })
		return "spec: image " + img
	case 1:
		// Back to the active cluster's spec, if there is one (a rollback).
		if c := w.clusters[w.svc.Status.ActiveServiceStatus.RayClusterName]; c != nil {
			w.updateSpec(func(s *rayv1.RayService) { s.Spec.RayClusterSpec = *c.rc.Spec.DeepCopy() })
			return "spec: back to the active cluster's"
		}
	case 2:
		cfg := serveConfigs[d.intn(len(serveConfigs))]
		w.updateSpec(func(s *rayv1.RayService) { s.Spec.ServeConfigV2 = cfg })
		return "spec: serve config " + cfg[strings.LastIndex(cfg, "import_path"):]
	case 3:
		w.updateSpec(func(s *rayv1.RayService) {
			groups := &s.Spec.RayClusterSpec.WorkerGroupSpecs
			if len(*groups) > 1 {
				*groups = (*groups)[:1]
			} else {
				*groups = append(*groups, builders.WorkerGroup("gpu", 1))
			}
		})
		return "spec: worker group added or removed"
	case 4:
		n := pick()
		w.restartHead(n)
		return "fault: head of " + n + " restarted"
	case 5:
		if n := pick(); n != "" {
			w.clusters[n].dashboardDown = !w.clusters[n].dashboardDown
			return fmt.Sprintf("fault: dashboard of %s down=%v", n, w.clusters[n].dashboardDown)
		}
	case 6:
		if n := pick(); n != "" {
			w.clusters[n].unhealthy = !w.clusters[n].unhealthy
			return fmt.Sprintf("fault: applications of %s unhealthy=%v", n, w.clusters[n].unhealthy)
		}
	case 7:
		w.refuseNext, w.badRequest = 2, d.intn(2) == 0
		return "fault: dashboards refuse the next serve configs"
	case 8:
		w.failAction = d.intn(6)
		return fmt.Sprintf("fault: action %d fails", w.failAction)
	case 9:
		w.conflictStatus = true
		return "fault: the status write conflicts"
	case 10:
		w.gatewayPaused = !w.gatewayPaused
		return fmt.Sprintf("fault: gateway controller paused=%v", w.gatewayPaused)
	case 11:
		// The webhook rejects a strategy change during an upgrade; between upgrades it is legal.
		if w.svc.Status.PendingServiceStatus.RayClusterName == "" {
			types := []rayv1.RayServiceUpgradeType{rayv1.NewCluster, rayv1.NewClusterWithIncrementalUpgrade, rayv1.None}
			to := types[d.intn(len(types))]
			w.updateSpec(func(s *rayv1.RayService) {
				if s.Spec.UpgradeStrategy == nil {
					s.Spec.UpgradeStrategy = &rayv1.RayServiceUpgradeStrategy{}
				}
				s.Spec.UpgradeStrategy.Type = ptr.To(to)
				if to == rayv1.NewClusterWithIncrementalUpgrade && s.Spec.UpgradeStrategy.ClusterUpgradeOptions == nil {
					s.Spec.UpgradeStrategy.ClusterUpgradeOptions = &rayv1.ClusterUpgradeOptions{
						MaxSurgePercent: ptr.To[int32](50), StepSizePercent: ptr.To[int32](25), IntervalSeconds: ptr.To[int32](1), GatewayClassName: "gw",
					}
					s.Spec.RayClusterSpec.EnableInTreeAutoscaling = ptr.To(true)
				}
			})
			return "spec: strategy " + string(to)
		}
	case 12:
		if n := pick(); n != "" && d.intn(4) == 0 {
			delete(w.clusters, n)
			delete(w.services, rayspec.ClusterServeServiceName(n))
			return "fault: RayCluster " + n + " deleted by hand"
		}
	case 14:
		// A cluster stamped by another raygate version, whose hash may be computed otherwise.
		if n := pick(); n != "" {
			setAnnotations(w.clusters[n].rc, map[string]string{rayv1.HashWithoutReplicasAndWorkersToDeleteKey: "older-hash", rayv1.KubeRayVersionKey: "v0"})
			w.clusters[n].changed()
			return "fault: " + n + " stamped by an older raygate"
		}
	case 15:
		if n := pick(); n != "" {
			w.clusters[n].dashboardHung = !w.clusters[n].dashboardHung
			return fmt.Sprintf("fault: dashboard of %s hung=%v (accepts connections, never answers)", n, w.clusters[n].dashboardHung)
		}
	case 16:
		w.restartOperator()
		return "fault: the operator restarts (the dashboard pool forgets everything)"
	case 17:
		// A cluster made by an older raygate: its config recorded in an annotation, no
		// ConfigMap (and nothing on its way to the dashboard: an older raygate had no pool).
		if n := pick(); n != "" {
			c := w.clusters[n]
			acc := c.pool.snap.Accepted
			settled := c.pool.inflight == nil && c.pool.wantSubmit == nil && (acc == nil || acc.ID == submissionID(submittedOn(c.rc).Hash, submittedOn(c.rc).TargetCapacity))
			if cfg := w.records[n][submittedOn(c.rc).Hash]; cfg != nil && settled {
				b, _ := json.Marshal(cfg.doc)
				setAnnotations(c.rc, map[string]string{LegacyServeConfigKey: string(b)})
				delete(w.records, n)
				c.changed()
				return "fault: " + n + " recorded its config as an older raygate did"
			}
		}
	case 18:
		// The platform refuses (or lets through again) a cluster's pods.
		if n := pick(); n != "" {
			rc := w.clusters[n].rc
			if len(rc.Status.Conditions) > 0 {
				rc.Status.Conditions = nil
				return "fault: pods of " + n + " admitted again"
			}
			rc.Status.Conditions = []metav1.Condition{{Type: string(rayv1.RayClusterReplicaFailure), Status: metav1.ConditionTrue,
				Reason: rayv1.FailedCreateWorkerPod, Message: `creating worker pods: pods "` + n + `-w-x" is forbidden: exceeded quota`}}
			return "fault: pods of " + n + " refused"
		}
	case 19:
		if d.intn(3) == 0 {
			w.updateSpec(func(s *rayv1.RayService) { s.Spec.Suspend = !s.Spec.Suspend })
			return fmt.Sprintf("spec: suspend=%v", w.svc.Spec.Suspend)
		}
	case 13:
		r := []int32{0, 1, 5, math.MaxInt32, -3}[d.intn(5)]
		w.updateSpec(func(s *rayv1.RayService) { s.Spec.RayClusterSpec.WorkerGroupSpecs[0].Replicas = ptr.To(r) })
		return fmt.Sprintf("spec: replicas %d", r)
	}
	return "-"
}

func setTestImage(svc *rayv1.RayService, image string) {
	s := &svc.Spec.RayClusterSpec
	s.HeadGroupSpec.Template.Spec.Containers[0].Image = image
	for i := range s.WorkerGroupSpecs {
		s.WorkerGroupSpecs[i].Template.Spec.Containers[0].Image = image
	}
}

// calm clears every fault and gives the spec a serve config whose applications run. An
// active cluster whose frozen config fails cannot take traffic back, so a user would go
// forward: the spec becomes the pending cluster's.
func calm(w *world) {
	w.gatewayPaused, w.refuseNext = false, 0
	for _, c := range w.clusters {
		c.dashboardDown, c.dashboardHung, c.unhealthy = false, false, false
		c.rc.Status.Conditions = nil
	}
	if strings.Contains(w.svc.Spec.ServeConfigV2, brokenImportPath) {
		w.updateSpec(func(s *rayv1.RayService) { s.Spec.ServeConfigV2 = builders.DefaultServeConfig })
	}
	if w.svc.Spec.Suspend {
		w.updateSpec(func(s *rayv1.RayService) { s.Spec.Suspend = false })
	}
	active, pending := w.clusters[w.svc.Status.ActiveServiceStatus.RayClusterName], w.clusters[w.svc.Status.PendingServiceStatus.RayClusterName]
	if active != nil && pending != nil && active.brokenConfig {
		w.updateSpec(func(s *rayv1.RayService) { s.Spec.RayClusterSpec = *pending.rc.Spec.DeepCopy() })
		// A re-stamp (after the "older raygate" fault) may have given the pending cluster
		// the hash of another spec: stamp it with its own.
		setAnnotations(pending.rc, stampAnnotations(w.desired().Goal, w.version))
		pending.changed()
	}
}

// converged: one cluster, made for the spec, active and Ready; the route (if any) sends it
// everything.
func converged(w *world) bool {
	want := w.desired()
	st := &w.svc.Status
	active := w.clusters[st.ActiveServiceStatus.RayClusterName]
	if active == nil || st.PendingServiceStatus.RayClusterName != "" || len(w.clusters) != 1 || st.ObservedGeneration != w.svc.Generation {
		return false
	}
	if c := findCondition(st.Conditions, rayv1.RayServiceReady); c == nil || c.Reason != rayv1.NonZeroServeEndpoints {
		return false
	}
	// With None a rayClusterConfig change is never applied to the running cluster.
	if m := matchGoal(stampOf(active.rc), want.Goal); m != matchSame && (want.Strategy != rayv1.None || m != matchChanged) {
		return false
	}
	if want.incremental() && w.gatewayAPI && w.route == nil {
		return false
	}
	return w.route == nil || maps.Equal(rayspec.RouteWeights(w.route), map[string]int32{active.rc.Name: 100})
}

// probeExtremeStatus plans for the pass's inputs with a status edited by hand: the
// capacity and traffic fields set to the given integers. The plan must not panic, and any
// HTTPRoute it writes must have weights within 0-100 that sum to 100.
func probeExtremeStatus(t *testing.T, p *reconciled, v, u int32) {
	if p.want.Invalid != "" || p.stored.PendingServiceStatus.RayClusterName == "" {
		return
	}
	st := p.stored.DeepCopy()
	st.ActiveServiceStatus.TargetCapacity, st.ActiveServiceStatus.TrafficRoutedPercent = ptr.To(v), ptr.To(u)
	st.PendingServiceStatus.TargetCapacity, st.PendingServiceStatus.TrafficRoutedPercent = ptr.To(u), ptr.To(v)
	out := Decide(p.obsCopy, p.want, st, p.now)
	for _, bad := range checkWeights(&reconciled{out: out}) {
		t.Fatalf("status edited to capacity/traffic %d/%d: %s", v, u, bad)
	}
}

func describePass(p *reconciled) string {
	var acts []string
	for _, s := range p.submits {
		acts = append(acts, s.String())
	}
	for _, a := range p.out.Actions {
		acts = append(acts, a.String())
	}
	st := &p.out.Status
	return fmt.Sprintf("%s active=%s(%s/%s) pending=%s(%s/%s) written=%v applied=%v actions=%v",
		p.now.Format("15:04:05.000"),
		st.ActiveServiceStatus.RayClusterName, pct(st.ActiveServiceStatus.TargetCapacity), pct(st.ActiveServiceStatus.TrafficRoutedPercent),
		st.PendingServiceStatus.RayClusterName, pct(st.PendingServiceStatus.TargetCapacity), pct(st.PendingServiceStatus.TrafficRoutedPercent),
		p.written, p.applied, acts)
}

func pct(v *int32) string {
	if v == nil {
		return "-"
	}
	return fmt.Sprint(*v)
}

// dice reads choices from the fuzzer's script, then from a generator seeded by the input.
type dice struct {
	script []byte
	rng    *rand.Rand
}

func newDice(script []byte, ints ...any) *dice {
	h := fnv.New64a()
	fmt.Fprint(h, ints...)
	h.Write(script)
	return &dice{script: script, rng: rand.New(rand.NewPCG(h.Sum64(), uint64(len(script))))}
}

func (d *dice) intn(n int) int {
	if len(d.script) > 0 {
		b := d.script[0]
		d.script = d.script[1:]
		return int(b) % n
	}
	return d.rng.IntN(n)
}
