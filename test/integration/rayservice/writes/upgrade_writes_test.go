package writes

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/testenv/framework"
	"github.com/raygate/raygate/test/builders"
	"github.com/raygate/raygate/test/integration/internal/rstest"
	"github.com/raygate/raygate/test/integration/rayservice/internal/rsenv"
)

// The fleet benchmark's pacing (test/bench/upgradefleet.go): a step as large as the surge,
// five steps, four seconds apart, and the old cluster deleted five seconds after promotion.
const (
	maxSurge      = 20
	step          = 20
	interval      = 4
	deletionDelay = 5
)

var _ = Describe("Writes of one incremental upgrade", func() {
	It("stay within the budget per kind, from the spec change to the old cluster's deletion", func(ctx context.Context) {
		const name = "llm"
		k8s := world.Client
		ns := rstest.NewNamespace(ctx, k8s, "rs-writes-")
		world.WatchInvariants(ctx, ns)
		Expect(k8s.Create(ctx, builders.RayService(name, ns).Incremental(maxSurge, step, interval, rsenv.GatewayClass).DeletionDelay(deletionDelay).Obj())).To(Succeed())
		blue := rstest.WaitServing(ctx, k8s, ns, name)
		writes := world.Manager.Writes
		waitQuiet(writes, ns)

		writes.Reset()
		writes.Trace(true)
		DeferCleanup(func() { writes.Trace(false) })
		started := time.Now()
		rstest.Update(ctx, k8s, ns, name, func(s *rayv1.RayService) { rstest.SetImage(s, "rayproject/ray:2.53.0") })
		Eventually(rstest.ActiveName(ctx, k8s, ns, name), time.Minute).ShouldNot(Equal(blue))
		green := rstest.WaitServing(ctx, k8s, ns, name)
		// The benchmark's window ends half a second after the promotion is seen.
		time.Sleep(500 * time.Millisecond)
		toPromotion := writes.SnapshotIn(ns)
		promotedAfter := time.Since(started)

		Eventually(rstest.ClusterNames(ctx, k8s, ns), time.Minute).Should(Equal([]string{green}))
		waitQuiet(writes, ns)
		all := writes.SnapshotIn(ns)
		report(writes.Traced(ns), started, promotedAfter, toPromotion, all)

		for kind, n := range all {
			Expect(n).To(BeNumerically("<=", upgradeWriteBudget[kind]), "%s: %d writes, budget %d (all: %v)", kind, n, upgradeWriteBudget[kind], all)
		}
		Expect(total(all)).To(BeNumerically("<=", upgradeWriteTotal), "all: %v", all)
	})
})

// upgradeWriteBudget is, per "verb resource", the most writes the manager may make in the
// namespace of one incremental upgrade of the builders' RayService (one worker group at
// minReplicas 0, the autoscaler on) with the pacing above, from the spec change until the
// old cluster is deleted and the manager is quiet: the measured figures (the comments) plus
// a small margin where a busy machine can split a pass in two. A kind not listed may not be
// written. docs/benchmarks.md ("Writes of one incremental upgrade") lists what each is for
// and the minimum a correct operator must write.
var upgradeWriteBudget = map[string]int{
	"create rayclusters":       1,
	"create pods":              1, // the head; the workers start at minReplicas 0
	"create services":          2, // head Service, per-cluster serve Service
	"create serviceaccounts":   1, // the autoscaler's RBAC
	"create roles":             1,
	"create rolebindings":      1,
	"create configmaps":        1,  // the serve config record
	"patch pods":               1,  // the head's ray.io/serve label
	"patch rayclusters/status": 3,  // 2
	"patch rayclusters":        3,  // 2: the accepted config's hash, the old cluster's deletion time
	"update httproutes":        8,  // 7
	"update services":          2,  // the RayService's head and serve Services follow the promotion
	"patch rayservices/status": 20, // 19; 22 while the copies of the clusters' statuses and the endpoint count were written at once
	"create events":            14, // 13
	"delete rayclusters":       1,
	"delete services":          1,
}

// upgradeWriteTotal bounds all of them together: measured 56; 59 while the copies of the
// clusters' statuses and the serve endpoint count did not wait with the progress messages,
// and 86 before the writes per upgrade were cut (target capacity changes recorded on the
// RayClusters and announced by events of their own, a status write per step for the wait's
// message, three events for the autoscaler's RBAC).
const upgradeWriteTotal = 58

// waitQuiet waits until the manager has handled every event and has not written in ns for
// a second (the event recorder writes after the status of the same pass).
func waitQuiet(writes *framework.Writes, ns string) {
	GinkgoHelper()
	last, since := -1, time.Now()
	Eventually(func() bool {
		n := total(writes.SnapshotIn(ns))
		if n != last {
			last, since = n, time.Now()
		}
		return world.Idle() && time.Since(since) >= time.Second
	}, time.Minute).Should(BeTrue())
}

func total(counts map[string]int) int {
	n := 0
	for _, c := range counts {
		n += c
	}
	return n
}

// report prints the writes per kind, up to the promotion and in all, and every write in
// order, so a changed count can be explained from the test's output.
func report(trace []framework.Write, started time.Time, promotedAfter time.Duration, toPromotion, all map[string]int) {
	var b strings.Builder
	fmt.Fprintf(&b, "promotion %.1fs after the spec change\n%-32s %12s %6s\n", promotedAfter.Seconds(), "write", "to promotion", "all")
	for _, kind := range slices.Sorted(maps.Keys(all)) {
		fmt.Fprintf(&b, "%-32s %12d %6d\n", kind, toPromotion[kind], all[kind])
	}
	fmt.Fprintf(&b, "%-32s %12d %6d\n", "total", total(toPromotion), total(all))
	AddReportEntry("writes per kind", b.String())
	var prev map[string]string
	for _, w := range trace {
		path := w.Path
		if i := strings.Index(path, "/namespaces/"); i >= 0 {
			path = path[i+len("/namespaces/"):]
			path = path[strings.Index(path, "/")+1:]
		}
		line := summary(w)
		if cur := statusFields(w); cur != nil {
			if prev != nil {
				line += " [changed: " + strings.Join(changedFields(prev, cur), ", ") + "]"
			}
			prev = cur
		}
		GinkgoWriter.Printf("%6.2fs %-24s %-36s %s\n", w.At.Sub(started).Seconds(), w.Key, path, line)
	}
}

// summary says what a traced write changed: a RayService status by its conditions and
// clusters, an Event by its printable fields (they are sent as protobuf), anything else by
// the start of its body.
func summary(w framework.Write) string {
	if w.Key == "patch rayservices/status" {
		var ops []struct {
			Value rayv1.RayServiceStatuses `json:"value"`
		}
		if err := json.Unmarshal([]byte(w.Body), &ops); err == nil && len(ops) == 1 {
			st := ops[0].Value
			var parts []string
			for _, c := range st.Conditions {
				parts = append(parts, fmt.Sprintf("%s=%s/%s %q", c.Type, c.Status, c.Reason, c.Message))
			}
			for _, s := range []struct {
				role string
				st   rayv1.RayServiceStatus
			}{{"active", st.ActiveServiceStatus}, {"pending", st.PendingServiceStatus}} {
				if s.st.RayClusterName != "" {
					parts = append(parts, fmt.Sprintf("%s %s cap %s traffic %s", s.role, s.st.RayClusterName, pct(s.st.TargetCapacity), pct(s.st.TrafficRoutedPercent)))
				}
			}
			return strings.Join(parts, "; ")
		}
	}
	printable := strings.Map(func(r rune) rune {
		if r < 0x20 || r > 0x7e {
			return ' '
		}
		return r
	}, w.Body)
	printable = strings.Join(strings.Fields(printable), " ")
	if len(printable) > 400 {
		printable = printable[:400]
	}
	return printable
}

// statusFields flattens a traced RayService status write into its leaf fields by path (nil
// for other writes), so consecutive status writes can say what each changed.
func statusFields(w framework.Write) map[string]string {
	if w.Key != "patch rayservices/status" {
		return nil
	}
	var ops []struct {
		Value any `json:"value"`
	}
	if err := json.Unmarshal([]byte(w.Body), &ops); err != nil || len(ops) != 1 {
		return nil
	}
	out := map[string]string{}
	var walk func(path string, v any)
	walk = func(path string, v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, e := range v {
				walk(path+"."+k, e)
			}
		case []any:
			for i, e := range v {
				walk(fmt.Sprintf("%s[%d]", path, i), e)
			}
		default:
			out[path] = fmt.Sprint(v)
		}
	}
	walk("", ops[0].Value)
	return out
}

// changedFields are the paths whose values differ between two flattened statuses, the
// status's own lastUpdateTime left out.
func changedFields(prev, cur map[string]string) []string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(cur)) {
		if v, ok := prev[k]; (!ok || v != cur[k]) && k != ".lastUpdateTime" {
			out = append(out, k)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(prev)) {
		if _, ok := cur[k]; !ok {
			out = append(out, k+" (removed)")
		}
	}
	return out
}

func pct(v *int32) string {
	if v == nil {
		return "-"
	}
	return fmt.Sprint(*v)
}
