package hostile

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	raygatev1alpha1 "github.com/raygate/raygate/apis/raygate/v1alpha1"
	"github.com/raygate/raygate/internal/testenv/invariants"
	"github.com/raygate/raygate/test/builders"
	"github.com/raygate/raygate/test/integration/internal/rstest"
)

// stallingProm is the suite's --prometheus-url: a stand-in for Prometheus' query API on
// loopback that accepts every query and never answers it; the request ends only when the
// operator gives up (its per-query timeout and 10 s budget). It is scripted rather than the
// real Prometheus (internal/testenv/prometheus, whose Pause stalls it too; the gateway
// suite's fault spec does that) because this attack needs exact control and a count of what
// is held: every query, from the first one, must hold its caller for the whole budget, and
// the spec reports how many queries were held at once and for which namespaces, which a
// stopped process cannot tell.
type stallingProm struct {
	once     sync.Once
	srv      *httptest.Server
	quit     chan struct{}
	mu       sync.Mutex
	inFlight int
	maxSeen  int
	queries  int
	// asked are the namespaces the queries were for (every gate filters on its namespace).
	asked map[string]bool
}

var namespaceInQuery = regexp.MustCompile(`namespace="([^"]+)"`)

var stalling = &stallingProm{quit: make(chan struct{}), asked: map[string]bool{}}

// URL starts the server once and returns its address.
func (p *stallingProm) URL() string {
	p.once.Do(func() { p.srv = httptest.NewServer(http.HandlerFunc(p.serve)) })
	return p.srv.URL
}

// Close lets every held query end, then stops the server.
func (p *stallingProm) Close() {
	close(p.quit)
	if p.srv != nil {
		p.srv.Close()
	}
}

func (p *stallingProm) serve(w http.ResponseWriter, r *http.Request) {
	// Reading the (POST) body lets the server notice when the operator gives up and closes
	// the connection: only then does the request's context end.
	if !strings.HasPrefix(r.URL.Path, "/api/v1/query") || r.ParseForm() != nil {
		http.NotFound(w, r)
		return
	}
	p.mu.Lock()
	if m := namespaceInQuery.FindStringSubmatch(r.Form.Get("query")); m != nil {
		p.asked[m[1]] = true
	}
	p.inFlight++
	p.queries++
	p.maxSeen = max(p.maxSeen, p.inFlight)
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		p.inFlight--
		p.mu.Unlock()
	}()
	select {
	case <-r.Context().Done():
	case <-p.quit:
	}
}

// askedFor: a query for the namespace came.
func (p *stallingProm) askedFor(ns string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.asked[ns]
}

func (p *stallingProm) stats() (queries, maxConcurrent int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.queries, p.maxSeen
}

var gatesCondition = rayv1.RayServiceConditionType(raygatev1alpha1.UpgradeGatesCondition)

// stallQuery is the attackers' gate: any query does, since none is ever answered.
const stallQuery = `sum(rate(ray_serve_num_http_error_requests_total{namespace="{{namespace}}",pod=~"{{pending}}-.*"}[1m]))`

var _ = Describe("Metric gates against a Prometheus that stalls every query", func() {
	const (
		// attackers is as many gated RayServices as the operator has reconcile workers.
		attackers = 4
		// The victim's pace and the lateness its steps may have, as in the attack spec.
		interval = 2 * time.Second
		lateness = 3 * time.Second
	)

	It("keeps another tenant's upgrade on pace while four RayServices wait at gates, and never lets a gate without an answer pass", func(ctx context.Context) {
		By("four tenants' gated RayServices serving, each with a policy whose one query may take the whole budget")
		var gated []client.ObjectKey
		for i := range attackers {
			ns := newNamespace(ctx, fmt.Sprintf("gated-%d-", i))
			Expect(k8s.Create(ctx, &raygatev1alpha1.UpgradePolicy{
				ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "slow"},
				Spec: raygatev1alpha1.UpgradePolicySpec{
					Gates:               []raygatev1alpha1.Gate{{Name: "errors", Query: stallQuery, Max: "0.05"}},
					QueryTimeoutSeconds: ptr.To[int32](raygatev1alpha1.MaxQueryTimeoutSeconds),
					OnFailure:           raygatev1alpha1.FailureRollback,
				},
			})).To(Succeed())
			svc := builders.RayService("gated", ns).Incremental(50, 25, 1, gatewayClass).DeletionDelay(1).Obj()
			svc.Annotations = map[string]string{raygatev1alpha1.UpgradePolicyAnnotation: "slow"}
			Expect(k8s.Create(ctx, svc)).To(Succeed())
			gated = append(gated, client.ObjectKeyFromObject(svc))
		}
		DeferCleanup(func(ctx context.Context) {
			// Gone, they make the operator write nothing more in their namespaces.
			for _, key := range gated {
				svc := &rayv1.RayService{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}
				Expect(client.IgnoreNotFound(k8s.Delete(ctx, svc))).To(Succeed())
			}
		})

		victim := newNamespace(ctx, "victim-gates-")
		checker, err := invariants.Start(ctx, env.Config, invariants.Options{Namespace: victim, Dashboards: dashboards.Registry})
		Expect(err).NotTo(HaveOccurred())
		Expect(k8s.Create(ctx, builders.RayService("v", victim).Incremental(50, 25, int32(interval/time.Second), gatewayClass).DeletionDelay(1).Obj())).To(Succeed())

		for _, key := range gated {
			waitServing(ctx, key.Namespace, key.Name)
			setImage(ctx, key.Namespace, key.Name, "rayproject/ray:2.53.0")
		}
		blue := waitServing(ctx, victim, "v")

		By("every gated upgrade reaches its first traffic step and waits for Prometheus")
		for _, key := range gated {
			Eventually(func() bool { return stalling.askedFor(key.Namespace) }, 2*time.Minute).Should(BeTrue(), "%s never asked Prometheus", key)
		}

		By("the other tenant upgrades meanwhile")
		start := time.Now()
		setImage(ctx, victim, "v", "rayproject/ray:2.53.0")
		Eventually(activeName(ctx, victim, "v"), 3*time.Minute).ShouldNot(Equal(blue))
		took := time.Since(start)
		checker.Stop()
		Expect(checker.Err()).NotTo(HaveOccurred())
		var steps []time.Time
		for _, e := range checker.Events() {
			if strings.HasPrefix(e.What, "route ") && strings.Count(e.What, "=") == 2 {
				steps = append(steps, e.At)
			}
		}
		queries, concurrent := stalling.stats()
		report := fmt.Sprintf("upgrade %v beside %d RayServices at stalled gates; traffic steps at %v; Prometheus held %d queries, at most %d at once",
			took.Round(time.Millisecond), attackers, gaps(steps), queries, concurrent)
		fmt.Fprintln(GinkgoWriter, report)
		AddReportEntry("stalled gates", report)

		By("its traffic steps came on time")
		Expect(len(steps)).To(BeNumerically(">=", 3), "traffic moved in steps")
		for i := 1; i < len(steps); i++ {
			Expect(steps[i].Sub(steps[i-1])).To(BeNumerically("<=", interval+lateness), "traffic step %d came %v after the previous one", i, steps[i].Sub(steps[i-1]))
		}

		By("no gated upgrade moved traffic or rolled back without an answer, and each says it waits for Prometheus")
		for _, key := range gated {
			Expect(rstest.PendingTraffic(ctx, k8s, key.Namespace, key.Name)()).To(BeZero(), "%s moved traffic without an answer", key)
			Expect(rstest.Get(ctx, k8s, key.Namespace, key.Name).Annotations).NotTo(HaveKey(rayv1.UpgradeActionKey), "%s acted on no answer", key)
			Eventually(func() string {
				return rstest.Condition(ctx, k8s, key.Namespace, key.Name, gatesCondition)() + ": " +
					rstest.ConditionMessage(ctx, k8s, key.Namespace, key.Name, gatesCondition)
			}, 30*time.Second).Should(And(HavePrefix("False/GatesWaiting"), ContainSubstring("no answer from Prometheus")))
		}
	})
})

// gaps are the times between consecutive steps.
func gaps(steps []time.Time) []time.Duration {
	var out []time.Duration
	for i := 1; i < len(steps); i++ {
		out = append(out, steps[i].Sub(steps[i-1]).Round(10*time.Millisecond))
	}
	return out
}
