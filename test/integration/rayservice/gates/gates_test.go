package gates

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	raygatev1alpha1 "github.com/raygate/raygate/apis/raygate/v1alpha1"
	"github.com/raygate/raygate/test/builders"
	"github.com/raygate/raygate/test/integration/internal/rstest"
	"github.com/raygate/raygate/test/integration/rayservice/internal/rsenv"
)

// scriptedProm implements Prometheus' instant query API (/api/v1/query) on loopback. Each
// namespace's answer is scripted: a value, no data, or an outage (503). The namespace is
// read from the rendered query (every test query filters on namespace="{{namespace}}").
// A stand-in on purpose: these specs test the controller's answer to exact values, empty
// results and 503s per namespace, which a real Prometheus cannot be made to give on cue;
// the documented queries run on the real engine in the gateway suite.
type scriptedProm struct {
	once sync.Once
	srv  *httptest.Server
	mu   sync.Mutex
	// answers by namespace: a number as text, "" (no data) or "down".
	answers map[string]string
	queries map[string][]string
}

var prom = &scriptedProm{answers: map[string]string{}, queries: map[string][]string{}}

var namespaceInQuery = regexp.MustCompile(`namespace="([^"]+)"`)

// URL starts the server once and returns its address.
func (p *scriptedProm) URL() string {
	p.once.Do(func() {
		p.srv = httptest.NewServer(http.HandlerFunc(p.serve))
	})
	return p.srv.URL
}

func (p *scriptedProm) set(ns, answer string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.answers[ns] = answer
}

// seen are the queries asked for a namespace, rendered.
func (p *scriptedProm) seen(ns string) []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.queries[ns]...)
}

func (p *scriptedProm) serve(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/api/v1/query" || r.ParseForm() != nil {
		http.Error(w, `{"status":"error","errorType":"bad_data","error":"bad request"}`, http.StatusBadRequest)
		return
	}
	q := r.Form.Get("query")
	m := namespaceInQuery.FindStringSubmatch(q)
	ns := ""
	if m != nil {
		ns = m[1]
	}
	p.mu.Lock()
	answer, ok := p.answers[ns]
	p.queries[ns] = append(p.queries[ns], q)
	p.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	switch {
	case !ok || answer == "down":
		w.WriteHeader(http.StatusServiceUnavailable)
		fmt.Fprint(w, `{"status":"error","errorType":"unavailable","error":"scripted outage"}`)
	case answer == "":
		fmt.Fprint(w, `{"status":"success","data":{"resultType":"vector","result":[]}}`)
	default:
		fmt.Fprintf(w, `{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[%d,"%s"]}]}}`, time.Now().Unix(), answer)
	}
}

const gateQuery = `sum(rate(ray_serve_num_http_error_requests_total{namespace="{{namespace}}",pod=~"{{pending}}-.*"}[1m]))`

func createPolicy(ctx context.Context, ns string, onFailure raygatev1alpha1.FailureAction, settle int32) {
	Expect(k8s.Create(ctx, &raygatev1alpha1.UpgradePolicy{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "canary"},
		Spec: raygatev1alpha1.UpgradePolicySpec{
			Gates:         []raygatev1alpha1.Gate{{Name: "error-rate", Query: gateQuery, Max: "0.05"}},
			OnFailure:     onFailure,
			SettleSeconds: ptr.To(settle),
		},
	})).To(Succeed())
}

// gatedService creates an incremental RayService that names the policy, waits until it
// serves, and starts an upgrade; it returns the active cluster.
func gatedService(ctx context.Context, ns, name string) string {
	svc := builders.RayService(name, ns).Incremental(50, 50, 1, rsenv.GatewayClass).DeletionDelay(1).Obj()
	svc.Annotations = map[string]string{raygatev1alpha1.UpgradePolicyAnnotation: "canary"}
	Expect(k8s.Create(ctx, svc)).To(Succeed())
	blue := world.WaitServing(ctx, ns, name)
	world.Update(ctx, ns, name, func(s *rayv1.RayService) { rstest.SetImage(s, "rayproject/ray:2.53.0") })
	Eventually(world.PendingName(ctx, ns, name)).ShouldNot(BeEmpty())
	return blue
}

var gatesCondition = rayv1.RayServiceConditionType(raygatev1alpha1.UpgradeGatesCondition)

var _ = Describe("Metric gates", func() {
	const name = "gated"

	It("lets an upgrade whose gates pass complete, after the settle period", func(ctx context.Context) {
		ns := world.NewNamespace(ctx)
		checker := world.WatchInvariants(ctx, ns)
		prom.set(ns, "0.01")
		createPolicy(ctx, ns, raygatev1alpha1.FailurePause, 8)
		blue := gatedService(ctx, ns, name)
		green := world.PendingName(ctx, ns, name)()

		Eventually(world.Condition(ctx, ns, name, gatesCondition)).Should(Equal("True/GatesPassed"))
		Eventually(func() string { return world.ConditionMessage(ctx, ns, name, rayv1.UpgradeInProgress) }, time.Minute).Should(ContainSubstring("settling"))
		Eventually(world.ActiveName(ctx, ns, name), time.Minute).Should(Equal(green))
		Expect(rsenv.TrafficSteps(checker, green)).To(ContainElement(int32(100)))
		Expect(prom.seen(ns)).To(ContainElement(`sum(rate(ray_serve_num_http_error_requests_total{namespace="` + ns + `",pod=~"` + green + `-.*"}[1m]))`))
		Eventually(world.Condition(ctx, ns, name, gatesCondition)).Should(BeEmpty(), "no condition once no gated upgrade runs")
		Eventually(world.ClusterNames(ctx, ns)).Should(ConsistOf(green))
		Expect(blue).NotTo(Equal(green))
	})

	It("pauses on a failing gate with the gate, query, value and threshold, and stays paused across an operator restart", func(ctx context.Context) {
		ns := world.NewNamespace(ctx)
		world.WatchInvariants(ctx, ns)
		prom.set(ns, "0.3")
		createPolicy(ctx, ns, raygatev1alpha1.FailurePause, 0)
		gatedService(ctx, ns, name)
		green := world.PendingName(ctx, ns, name)()

		Eventually(world.Condition(ctx, ns, name, rayv1.UpgradeAction)).Should(Equal("True/UpgradePaused"))
		Expect(world.RayService(ctx, ns, name).Annotations).To(HaveKeyWithValue(rayv1.UpgradeTargetKey, green))
		Eventually(world.Condition(ctx, ns, name, gatesCondition)).Should(Equal("False/GateFailed"))
		msg := world.ConditionMessage(ctx, ns, name, gatesCondition)
		Expect(msg).To(ContainSubstring(`gate "error-rate" of UpgradePolicy canary failed`))
		Expect(msg).To(ContainSubstring(`namespace="` + ns + `",pod=~"` + green + `-.*"`))
		Expect(msg).To(ContainSubstring("returned 0.3, above max 0.05"))
		Eventually(world.Events(ctx, ns, name)).Should(ContainSubstring("Warning UpgradeGateFailed: gate \"error-rate\""))
		Expect(world.PendingTraffic(ctx, ns, name)()).To(BeZero(), "no traffic moved to the failing cluster")

		world.RestartManager(0)
		Consistently(world.PendingTraffic(ctx, ns, name), 3*time.Second).Should(BeZero())
		Expect(world.Condition(ctx, ns, name, rayv1.UpgradeAction)()).To(Equal("True/UpgradePaused"))
		Expect(world.Condition(ctx, ns, name, gatesCondition)()).To(Equal("False/GateFailed"), "the paused upgrade still names the gate")

		By("the metric recovers and the user resumes: the gates are evaluated again and the upgrade completes")
		prom.set(ns, "0")
		world.SetAction(ctx, ns, name, rayv1.UpgradeActionResume, "")
		Eventually(world.ActiveName(ctx, ns, name), time.Minute).Should(Equal(green))
	})

	It("rolls back on a failing gate with onFailure Rollback", func(ctx context.Context) {
		ns := world.NewNamespace(ctx)
		world.WatchInvariants(ctx, ns)
		prom.set(ns, "0")
		createPolicy(ctx, ns, raygatev1alpha1.FailureRollback, 0)
		blue := gatedService(ctx, ns, name)
		green := world.PendingName(ctx, ns, name)()
		Eventually(world.PendingTraffic(ctx, ns, name)).Should(BeNumerically(">", 0))

		prom.set(ns, "1")
		Eventually(world.Condition(ctx, ns, name, rayv1.UpgradeAction)).Should(Or(Equal("True/UpgradeAborting"), Equal("True/UpgradeAborted")))
		Expect(world.RayService(ctx, ns, name).Annotations).To(HaveKeyWithValue(rayv1.UpgradeActionKey, rayv1.UpgradeActionAbort))
		Eventually(world.PendingName(ctx, ns, name), time.Minute).Should(BeEmpty())
		Expect(world.ActiveName(ctx, ns, name)()).To(Equal(blue))
		Eventually(world.ClusterNames(ctx, ns)).Should(ConsistOf(blue))
		Expect(green).NotTo(Equal(blue))
	})

	It("waits while Prometheus is down, never rolling back, and goes on once it answers", func(ctx context.Context) {
		ns := world.NewNamespace(ctx)
		world.WatchInvariants(ctx, ns)
		prom.set(ns, "down")
		createPolicy(ctx, ns, raygatev1alpha1.FailureRollback, 0)
		gatedService(ctx, ns, name)
		green := world.PendingName(ctx, ns, name)()

		Eventually(world.Condition(ctx, ns, name, gatesCondition)).Should(Equal("False/GatesWaiting"))
		Expect(world.ConditionMessage(ctx, ns, name, gatesCondition)).To(ContainSubstring("no answer from Prometheus"))
		Consistently(func() string { return world.RayService(ctx, ns, name).Annotations[rayv1.UpgradeActionKey] }, 3*time.Second).Should(BeEmpty())
		Expect(world.PendingTraffic(ctx, ns, name)()).To(BeZero())

		By("no data waits too")
		prom.set(ns, "")
		Eventually(func() string { return world.ConditionMessage(ctx, ns, name, gatesCondition) }).Should(ContainSubstring("returned no data"))

		prom.set(ns, "0")
		Eventually(world.ActiveName(ctx, ns, name), time.Minute).Should(Equal(green))
	})
})
